"""The public API: what users import keeps importing, from the paths they import it from.

* Every public module (no ``_`` segment in its dotted name) defines ``__all__``, and every
  name in it exists.
* ``cross_judge.__all__`` is complete: every name the package binds (its imports) and every
  name of ``cross_judge.errors`` is in it.
* The documented paths (the ``::: cross_judge.X`` pages of ``docs/api`` and cross-judge 0.1's
  modules) import, hold every name they exported before the layout change (issue 24), and
  every ``cross_judge.X.Y`` the docs mention resolves.
* Public classes show a documented path as ``__module__`` (what reprs, doc pages and
  pickles record), and that path holds them; result models pickle there and back.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import pickle
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import cross_judge
from cross_judge import Critic, Ensemble
from cross_judge.batch import BatchResult
from cross_judge.verdict import EnsembleVerdict, Verdict

PACKAGE_DIR = Path(cross_judge.__file__).parent
REPOSITORY = Path(__file__).resolve().parents[1]
DOCS = REPOSITORY / "docs"

LEGACY_PATHS = [
    "cross_judge.core",
    "cross_judge.reviewer",
    "cross_judge.panel",
    "cross_judge.schema",
    "cross_judge.aggregation",
    "cross_judge.prompts",
    "cross_judge.vendors",
    "cross_judge.voting",
    "cross_judge.verdict",
    "cross_judge.ensemble",
]
"""cross-judge 0.1's modules: its users import from these."""

EXPORTED_BEFORE = {
    # Each documented module's __all__ at af0e353, the commit before the layout change.
    "cross_judge": "ABSTAIN BATCH_VENDORS VENDORS VENDOR_DEFAULTS VOTING_STRATEGIES "
    "AggregationStrategy Answer BatchOptions BatchResult Budget CacheStats Cascade CascadeFit "
    "ConfigError Critic CrossJudgeError Ensemble EnsembleResult EnsembleVerdict ErrorKind "
    "Escalation Item ItemError ItemTooLongError JudgePanel LegacyVerdict MissingAPIKeyError "
    "Price PromptError ResponseCache Reviewer SharedLimitError UnknownVendorError Usage "
    "VendorConfig Verdict VerdictKind Vote VotingStrategy __version__ agreement_pct "
    "all_vendors avg_confidence calibrate_cascade cohen_kappa first_disagreement fleiss_kappa "
    "get_strategy get_vendor get_voting_strategy krippendorff_alpha load_prices majority "
    "majority_vote make_client pairwise_agreement price_for register_price register_vendor "
    "register_voting_strategy reliability_alpha revote set_vendor_limits unanimous weighted",
    "cross_judge.core": "DEFAULT_MAX_ITEM_CHARS DEFAULT_PROMPT_TEMPLATE DEFAULT_SYSTEM_PROMPT "
    "Critic _extract_json combine_samples sample_request",
    "cross_judge.reviewer": "LEGACY_LABEL_KEYS LEGACY_REASONING_KEYS Reviewer",
    "cross_judge.panel": "JudgePanel",
    "cross_judge.schema": "EnsembleResult Verdict VerdictLabel",
    "cross_judge.aggregation": "STRATEGIES AggregationStrategy avg_confidence "
    "first_disagreement get_strategy majority unanimous weighted",
    "cross_judge.prompts": "DEFAULT_SYSTEM_PROMPT DEFAULT_USER_PROMPT_TEMPLATE PromptSpec "
    "list_prompts load_prompt parse_prompt render_user_prompt",
    "cross_judge.vendors": "VENDORS VENDOR_DEFAULTS LimitScope VendorConfig all_vendors "
    "check_base_url get_vendor make_client register_vendor resolve_api_key set_vendor_limits",
    "cross_judge.voting": "VOTING_STRATEGIES ErrorPolicy TiePolicy Vote VotingStrategy "
    "accepts_kwarg agreement_pct any_vote average_score calls_to_decide first_disagreement "
    "get_voting_strategy highest_score krippendorff_alpha lowest_score majority_vote "
    "median_score outcome_is_decided register_voting_strategy strategy_name "
    "supports_early_stop unanimous validate_voting weighted_average_score weighted_vote",
    "cross_judge.verdict": "ABSTAIN RESERVED_KINDS Answer EnsembleVerdict Usage Verdict "
    "VerdictKind as_verdict call_totals",
    "cross_judge.ensemble": "EarlyStop Ensemble VotingName default_query_id revote",
    "cross_judge.agreement": "Level cohen_kappa fleiss_kappa matrix_from_labels "
    "pairwise_agreement reliability_alpha",
    "cross_judge.bias": "LENGTH_BINS LengthBias LengthBin PositionBias PositionStats SelfStats "
    "length_bias position_bias self_consistency",
    "cross_judge.reliability": "ConfidenceCalibration DawidSkeneResult WeightsFit "
    "alpha_interval calibrate_confidence dawid_skene effective_votes gold_report learn_weights",
    "cross_judge.budget": "Budget",
    "cross_judge.cache": "CacheStats ResponseCache default_cache_path resolve_cache",
    "cross_judge.shared_limit": "DEAD_AFTER_TERMS LINGER_S LeaseReply LeaseRequest LimitServer "
    "PermitBroker SharedLimit SharedLimitError main",
    "cross_judge.ray": "judge_dataset label_column shared_limit shared_limit_state",
    "cross_judge.report": "DEFAULT_MAX_ITEMS RUNTIME_VERSIONS render_report write_report",
    "cross_judge.pricing": "PeakHours Price estimate_prompt_tokens load_prices price_for "
    "prices_as_of register_price registry_generation worst_case_cost",
    "cross_judge.pairwise": "PAIR_FIELDS OnFlip Order Shown combine_orders is_pair map_back "
    "shown_order swapped",
    "cross_judge.cascade": "CalibrationItemsWarning Cascade EscalateRule Escalation FinalTier "
    "Score Threshold score_of support",
    "cross_judge.cascade_calibration": "LEVELS CascadeFit LevelFit TierFit "
    "agreement_lower_bound binomial_cdf calibrate_cascade load_gold",
    "cross_judge.panel_file": "SIMULATED_VENDOR CriticSpec EscalateSpec PanelError "
    "PanelProblem PanelSpec PersonaSpec SimulatorSpec TierSpec load_panel parse_panel",
    "cross_judge.testing": "PairwiseRates Persona Reply VendorServer pairwise_rates",
    "cross_judge.errors": "ConfigError CrossJudgeError ErrorKind ItemTooLongError "
    "MissingAPIKeyError PromptError SharedLimitError UnknownVendorError",
    "cross_judge.batch": "BatchResult CriticStats Item ItemError Panel ResultStream "
    "ResultsFile TierStats dump_result is_fallback judge_many load_result shard_of "
    "stop_streams stream",
}


def _import(name: str) -> ModuleType:
    """The module, or a skip when it needs an optional dependency that is not installed."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] != "cross_judge":
            pytest.skip(f"{name} needs {exc.name} (an optional extra)")
        raise


def _is_module(name: str) -> bool:
    path = PACKAGE_DIR.joinpath(*name.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module_part(dotted: str) -> str:
    """The longest prefix of ``cross_judge.a.B.c`` that is a module of the package."""
    parts = dotted.split(".")
    prefixes = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
    return next(p for p in prefixes if _is_module(p))


def _resolve(dotted: str) -> object:
    """``cross_judge.a.B.c``: its module, imported, then the attributes after it."""
    module = _module_part(dotted)
    found: object = _import(module)
    for attribute in dotted[len(module) + 1 :].split(".") if dotted != module else []:
        found = getattr(found, attribute)
    return found


def public_modules() -> list[str]:
    names = ["cross_judge"]
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts and not any(part.startswith("_") for part in parts):
            names.append(".".join(["cross_judge", *parts]))
    return names


def directives() -> list[str]:
    """The ``::: cross_judge.X`` targets of the API pages."""
    if not DOCS.is_dir():
        return []
    pages = sorted((DOCS / "api").glob("*.md"))
    found = (re.findall(r"^::: (cross_judge\S*)", p.read_text(), re.MULTILINE) for p in pages)
    return sorted({target for targets in found for target in targets})


def documented_modules() -> set[str]:
    """The module paths the docs name: each API page's module (or its object's), cross-judge
    0.1's, and the package itself."""
    return {"cross_judge", *LEGACY_PATHS, *(_module_part(target) for target in directives())}


# -- every public module --------------------------------------------------------------------


@pytest.mark.parametrize("name", public_modules())
def test_public_module_defines_all_and_holds_its_names(name: str) -> None:
    module = _import(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not hold: {missing}"
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"


# -- the package's own __all__ ------------------------------------------------------------


def test_package_all_holds_every_name_the_package_imports() -> None:
    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8"))
    bound = {
        alias.asname or alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and getattr(node, "module", "") != "__future__"
        for alias in node.names
    }
    public = {
        name
        for name, value in vars(cross_judge).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    bound_public = {name for name in bound if not name.startswith("_") or name == "__version__"}
    assert sorted(bound_public - set(cross_judge.__all__)) == []
    assert sorted(public - set(cross_judge.__all__)) == []


def test_package_all_holds_every_name_of_errors() -> None:
    from cross_judge import errors

    assert sorted(set(errors.__all__) - set(cross_judge.__all__)) == []


# -- the documented paths -----------------------------------------------------------------


@pytest.mark.parametrize("target", directives())
def test_api_page_target_imports(target: str) -> None:
    assert _resolve(target) is not None


@pytest.mark.parametrize("module", sorted(EXPORTED_BEFORE))
def test_documented_path_still_exports_what_it_did(module: str) -> None:
    found = _import(module)
    missing = [name for name in EXPORTED_BEFORE[module].split() if not hasattr(found, name)]
    assert not missing, f"{module} no longer holds {missing}"


@pytest.mark.parametrize("module", LEGACY_PATHS)
def test_legacy_path_imports_with_all(module: str) -> None:
    assert _import(module).__all__


def test_names_the_docs_mention_resolve() -> None:
    if not DOCS.is_dir():
        pytest.skip("no docs folder beside the tests")
    texts = [p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))]
    texts.append((REPOSITORY / "README.md").read_text(encoding="utf-8"))
    mentioned = {m for text in texts for m in re.findall(r"cross_judge(?:\.\w+)+", text)}
    # Span attributes (cross_judge.cost_usd ...) share the prefix: only check a name that
    # starts with one of the package's modules or top-level names.
    checked = sorted(
        m
        for m in mentioned
        if _is_module(".".join(m.split(".")[:2])) or m.split(".")[1] in cross_judge.__all__
    )
    unresolved = []
    for name in checked:
        try:
            _resolve(name)
        except (ImportError, AttributeError) as exc:
            unresolved.append(f"{name}: {exc!r}")
    assert not unresolved, "the docs mention names that do not import:\n" + "\n".join(unresolved)


# -- public classes show a public path ------------------------------------------------------


def test_public_classes_show_a_documented_module() -> None:
    documented = documented_modules()
    wrong = []
    for name in cross_judge.__all__:
        cls = getattr(cross_judge, name)
        if not inspect.isclass(cls) or cls.__module__ == "builtins":
            continue
        module = cls.__module__
        if any(part.startswith("_") for part in module.split(".")) or module not in documented:
            wrong.append(f"{name}.__module__ == {module!r}, not a documented path")
        elif getattr(importlib.import_module(module), cls.__qualname__, None) is not cls:
            wrong.append(f"{name}.__module__ == {module!r}, which does not hold it")
    assert not wrong, "\n".join(wrong)


def _results() -> tuple[Verdict, EnsembleVerdict, BatchResult]:
    critics = ["a", "b"]
    panel = Ensemble([Critic(name=n, model="m", api_key="k") for n in critics])
    vote = Verdict(kind="KEEP", critic_id="a", confidence=0.8)
    result = panel.aggregate_verdicts(
        [vote, Verdict(kind="REJECT", critic_id="b", confidence=0.6)], query_id="q1"
    )
    batch = BatchResult(verdicts=[result], critics=critics, voting="majority", elapsed_s=1.0)
    return vote, result, batch


class _Recording(pickle.Unpickler):
    """Unpickles, noting the module of every class the pickle names."""

    modules: set[str]

    def find_class(self, module: str, name: str) -> Any:
        self.modules.add(module)
        return super().find_class(module, name)


@pytest.mark.parametrize("index", [0, 1, 2], ids=["Verdict", "EnsembleVerdict", "BatchResult"])
def test_result_models_pickle_round_trip_through_public_paths(index: int) -> None:
    original = _results()[index]
    unpickler = _Recording(io.BytesIO(pickle.dumps(original, protocol=pickle.HIGHEST_PROTOCOL)))
    unpickler.modules = set()
    assert unpickler.load() == original
    ours = {module for module in unpickler.modules if module.startswith("cross_judge")}
    assert ours, unpickler.modules
    assert ours <= documented_modules(), f"the pickle names {sorted(ours)}"
