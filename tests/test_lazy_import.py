"""``import cross_judge`` is cheap, and nothing is lost by it (issue 38, point 6).

* A fresh ``import cross_judge`` loads at most 30 of the package's modules and no report
  page, statistic, cascade calibration, ranking or integration.
* Every lazily exported name is the very object its module holds, listed in the
  ``TYPE_CHECKING`` block (what type checkers and IDEs read) and in ``__all__``; the same
  holds for each sub-package's lazy face (:class:`cross_judge._lazy.LazyExports`), and
  importing a face imports none of its modules.
* Every result-model method implemented in a higher layer works in a fresh process that
  imported only what a user would (``from cross_judge.batch import BatchResult``), or only
  ``pickle``: :func:`cross_judge._extensions.provider` imports the providing module.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cross_judge
from cross_judge import _extensions, errors
from cross_judge._lazy import LazyExports
from cross_judge.batch import BatchResult

from .waits import SAFETY_NET_S

PACKAGE_DIR = Path(cross_judge.__file__).parent
MAX_MODULES = 30
DEFERRED_PREFIXES = (
    "cross_judge.report",
    "cross_judge.stats",
    "cross_judge.cascade_calibration",
    "cross_judge.ranking",
    "cross_judge.integrations",
)
"""What ``import cross_judge`` must not load (a module or a package, with all inside)."""


def run_python(code: str, *args: str) -> str:
    """Stdout of ``python -c code args`` in a fresh interpreter on this copy of the package."""
    package_root = str(PACKAGE_DIR.parent)
    env = {**os.environ, "PYTHONPATH": package_root}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- what the import loads ------------------------------------------------------------------


def loaded_by_import() -> list[str]:
    code = "import sys, cross_judge\nprint('\\n'.join(sorted(sys.modules)))"
    return [m for m in run_python(code).split() if m.split(".")[0] == "cross_judge"]


def test_import_loads_at_most_30_of_the_packages_modules() -> None:
    loaded = loaded_by_import()
    assert len(loaded) <= MAX_MODULES, loaded


def test_import_loads_no_report_statistic_calibration_ranking_or_integration() -> None:
    deferred = [
        m
        for m in loaded_by_import()
        if any(m == p or m.startswith(p + ".") for p in DEFERRED_PREFIXES)
    ]
    assert deferred == []


# -- the lazily exported names --------------------------------------------------------------


def type_checking_imports() -> dict[str, tuple[str, str]]:
    """Name -> (module, attribute) of the imports under ``if typing.TYPE_CHECKING:`` of
    ``cross_judge/__init__.py``."""
    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 1
                for alias in statement.names:
                    module = f"cross_judge.{statement.module}"
                    found[alias.asname or alias.name] = (module, alias.name)
    return found


def eager_names() -> set[str]:
    """The names ``import cross_judge`` binds itself: the version and the exceptions."""
    return {"__version__", *errors.__all__}


def test_every_lazy_name_is_the_object_its_module_holds() -> None:
    wrong = [
        name
        for name, (module, attribute) in type_checking_imports().items()
        if getattr(cross_judge, name) is not getattr(importlib.import_module(module), attribute)
    ]
    assert wrong == []


def test_all_is_the_eager_names_and_the_type_checking_imports() -> None:
    assert sorted(cross_judge.__all__) == sorted(eager_names() | set(type_checking_imports()))


def test_a_lazy_name_resolves_in_a_fresh_process_by_attribute_and_by_from_import() -> None:
    code = (
        "import cross_judge\n"
        "from cross_judge import Ensemble, LabelQueue, Ranking\n"
        "from cross_judge.ensemble import Ensemble as E\n"
        "print(cross_judge.Ensemble is Ensemble is E, cross_judge.LegacyVerdict.__module__)"
    )
    assert run_python(code).split() == ["True", "cross_judge.schema"]


def test_a_submodule_the_import_used_to_bind_is_still_an_attribute() -> None:
    code = "import cross_judge\nprint(cross_judge.report.__name__, cross_judge.stats.__name__)"
    assert run_python(code).split() == ["cross_judge.report", "cross_judge.stats"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(cross_judge, "no_such_name")


def test_a_submodule_the_import_never_bound_is_not_imported_by_an_attribute_lookup() -> None:
    code = (
        "import sys, cross_judge\n"
        "print(hasattr(cross_judge, 'cli'), 'cross_judge.cli' in sys.modules)"
    )
    assert run_python(code).split() == ["False", "False"]


def test_dir_lists_every_public_name_before_it_is_imported() -> None:
    names = run_python("import cross_judge\nprint(' '.join(dir(cross_judge)))").split()
    assert set(cross_judge.__all__) <= set(names)
    assert {"report", "stats", "ranking"} <= set(names)


# -- the sub-packages' lazy faces (cross_judge._lazy.LazyExports) ---------------------------


def lazy_faces() -> dict[str, LazyExports]:
    """Package -> its :class:`LazyExports`, for every sub-package whose ``__init__`` has one."""
    faces = {}
    for init in sorted(PACKAGE_DIR.glob("*/__init__.py")):
        package = importlib.import_module(f"cross_judge.{init.parent.name}")
        exports = vars(package).get("_exports")
        if isinstance(exports, LazyExports):
            faces[package.__name__] = exports
    return faces


def face_type_checking_imports(package: str) -> dict[str, str]:
    """Name -> ``".module"`` or ``".module:attribute"`` of the package's ``TYPE_CHECKING``
    imports, in the form of a :class:`LazyExports` table."""
    path = PACKAGE_DIR / package.split(".", 1)[1] / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 1
                for alias in statement.names:
                    name = alias.asname or alias.name
                    suffix = "" if alias.asname in (None, alias.name) else f":{alias.name}"
                    found[name] = f".{statement.module}{suffix}"
    return found


def test_the_statistics_transport_limits_report_and_integrations_faces_are_lazy() -> None:
    assert {
        "cross_judge.stats",
        "cross_judge.transport",
        "cross_judge.limits",
        "cross_judge.report",
        "cross_judge.integrations",
    } <= set(lazy_faces())


@pytest.mark.parametrize("package", sorted(lazy_faces()))
def test_a_faces_table_is_its_type_checking_imports(package: str) -> None:
    assert dict(lazy_faces()[package].table) == face_type_checking_imports(package)


@pytest.mark.parametrize("package", sorted(lazy_faces()))
def test_a_faces_lazy_names_are_all_in_its_all(package: str) -> None:
    module = importlib.import_module(package)
    assert set(lazy_faces()[package].table) - set(module.__all__) == set()


@pytest.mark.parametrize("package", sorted(lazy_faces()))
def test_a_faces_names_are_the_objects_their_modules_hold(package: str) -> None:
    module = importlib.import_module(package)
    wrong = []
    for name, target in lazy_faces()[package].table.items():
        home, _, attribute = target.partition(":")
        held = getattr(importlib.import_module(home, package), attribute or name)
        if getattr(module, name) is not held:
            wrong.append(name)
    assert wrong == []


def test_importing_the_statistics_face_imports_no_statistic() -> None:
    code = (
        "import sys, cross_judge.stats\n"
        "print(sorted(m for m in sys.modules if m.startswith('cross_judge.stats.')))"
    )
    assert run_python(code).strip() == "[]"


def test_comparing_two_results_files_loads_no_ranking_and_no_transport(tmp_path: Path) -> None:
    # Reading files to compare them needs neither the batch engine nor an HTTP client.
    code = (
        "import sys\n"
        "from cross_judge.report import compare_runs\n"
        "path = sys.argv[1]\n"
        "loaded = set(sys.modules)\n"
        "compare_runs(path, path, allow_missing_manifest=True)\n"
        "print(sorted(m for m in set(sys.modules) - loaded\n"
        "             if m.startswith(('cross_judge.ranking', 'cross_judge.transport', 'httpx'))))"
    )
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"query_id": "i0", "verdicts": [], "consensus": "PASS", "voting": "majority"}\n'
    )
    assert run_python(code, str(path)).strip() == "[]"


def test_a_face_name_is_imported_on_first_use_and_bound() -> None:
    code = (
        "import sys, cross_judge.stats as s\n"
        "before = 'cross_judge.stats._gold' in sys.modules\n"
        "f = s.gold_metrics\n"
        "print(before, 'cross_judge.stats._gold' in sys.modules, 'gold_metrics' in vars(s))"
    )
    assert run_python(code).split() == ["False", "True", "True"]


def test_an_unknown_face_name_is_an_attribute_error_and_dir_lists_the_lazy_ones() -> None:
    import cross_judge.stats as stats

    assert not hasattr(stats, "no_such_statistic")
    assert "dawid_skene_matrix" in dir(stats)


def test_a_lazy_table_entry_must_be_relative() -> None:
    with pytest.raises(ValueError, match="must be relative"):
        LazyExports("cross_judge.stats", {"x": "cross_judge.stats._gold"})


# -- the registry of result-model methods ---------------------------------------------------


def test_every_method_name_maps_to_the_module_that_provides_it() -> None:
    wrong = {
        name: (_extensions.provider(name).__module__, module)
        for name, module in _extensions.PROVIDERS.items()
        if _extensions.provider(name).__module__ != module
    }
    assert wrong == {}


def test_every_provide_decorator_in_the_source_is_in_the_table() -> None:
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for name in re.findall(r'^@provide\("(\w+)"\)', path.read_text(), re.MULTILINE):
            found[name] = module
    assert found == dict(_extensions.PROVIDERS)


def test_the_methods_are_the_tables_names() -> None:
    assert frozenset(_extensions.PROVIDERS) == _extensions.METHODS


def test_an_unknown_method_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        _extensions.provider("no_such_method")


# Built in the child from the user's imports only. Votes of three people on four items;
# a rubric batch of two critics; a ranking.
CHILD = """
import asyncio, json, sys, tempfile
from pathlib import Path

from cross_judge.batch import BatchResult
from cross_judge.errors import ConfigError
from cross_judge.ranking import Ranking
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.verdict import EnsembleVerdict, Verdict
from cross_judge import _extensions

ROWS = [
    (f"i{i}", voter, label)
    for i, labels in enumerate(["PPF", "PFF", "PPP", "FFP"])
    for voter, label in zip(("ann", "bob", "cat"), labels)
]
GOLD = {"i0": "P", "i1": "F", "i2": "P", "i3": "F"}
RUBRIC = Rubric(criteria=(Criterion(id="correct", requirement="It is correct."),))


def rubric_batch():
    results = []
    for i, labels in enumerate(["PASS PASS", "PASS FAIL", "FAIL FAIL"]):
        verdicts = [
            Verdict(
                kind=label, confidence=0.8, critic_id=critic,
                criteria={"correct": CriterionVerdict(kind=label, confidence=0.8)},
            )
            for critic, label in zip(("a", "b"), labels.split())
        ]
        results.append(EnsembleVerdict(
            query_id=str(i), verdicts=verdicts, consensus=verdicts[0].kind,
            voting="majority", n_valid=2, rubric=RUBRIC,
            criteria={"correct": {"consensus": verdicts[0].kind}},
        ))
    return BatchResult.from_results(results)


def votes():
    return BatchResult.from_votes(ROWS)


def diff():
    return votes().compare(votes(), allow_missing_manifest=True, label="P")


def ranking():
    return Ranking(order=["y", "x"], ratings={"y": 1100.0, "x": 900.0},
                   ci={"y": (1001.0, 1200.0), "x": (800.0, 999.0)})


out = Path(tempfile.mkdtemp())
CALLS = {
    "add_votes": lambda: votes().add_votes([("i0", "dan", "P")]),
    "align": lambda: asyncio.run(votes().align({}, None)),
    "alignment_html": lambda: _extensions.provider("alignment_html")({}),
    "alpha_of_votes": lambda: votes().reliability_alpha(),
    "batch_html": lambda: votes()._repr_html_(),
    "compare": diff,
    "criteria_agreement": lambda: rubric_batch().criteria_agreement(),
    "criteria_dawid_skene": lambda: rubric_batch().criteria_dawid_skene(),
    "criteria_gold_report": lambda: rubric_batch().criteria_gold_metrics(
        {"0": {"correct": "PASS"}, "1": {"correct": "FAIL"}}
    ),
    "diff_fragment": lambda: diff()._repr_html_(),
    "diff_markdown": lambda: diff().to_markdown(),
    "diff_page": lambda: diff().to_html(),
    "diff_text": lambda: diff().to_text(),
    "ensemble_html": lambda: votes().verdicts[0]._repr_html_(),
    "estimate": lambda: votes().estimate("P", gold=GOLD),
    "estimate_accuracy": lambda: votes().estimate_accuracy("ann", gold=GOLD),
    "fleiss_kappa": lambda: votes().fleiss_kappa(),
    "from_votes": votes,
    "gold_report": lambda: votes().against(GOLD),
    "label_page": lambda: votes().label_queue(2, seed=0).to_html(votes()),
    "label_queue": lambda: votes().label_queue(2, seed=0),
    "length_bias": lambda: votes().length_bias(),
    "pairwise_agreement": lambda: votes().pairwise_agreement(),
    "position_bias": lambda: votes().position_bias(),
    "ranking_html": lambda: ranking()._repr_html_(),
    "ranking_page": lambda: ranking().to_html(out / "ranking.html"),
    "reliability_alpha": lambda: votes().reliability_alpha(),
    "render_summary": lambda: votes().summary(),
    "revote": lambda: votes().revote("unanimous"),
    "revote_criteria_dawid_skene": lambda: rubric_batch().revote("dawid_skene"),
    "revote_dawid_skene": lambda: votes().revote("dawid_skene"),
    "revote_many": lambda: votes().revote("majority"),
    "select_panel": lambda: votes().select_panel(),
    "self_consistency": lambda: votes().self_consistency(),
    "to_pandas": lambda: votes().to_pandas(),
    "to_polars": lambda: votes().to_polars(),
    "verdict_html": lambda: votes().verdicts[0].verdicts[0]._repr_html_(),
}
names = sys.argv[1:] or sorted(CALLS)
report = {}
for name in names:
    module = _extensions.PROVIDERS[name]
    loaded_before = module in sys.modules
    try:
        CALLS[name]()
        outcome = "ok"
    except ConfigError as exc:  # raised by the implementation: it ran
        outcome = f"ConfigError: {exc}"
    report[name] = {"loaded_before": loaded_before, "outcome": outcome}
print(json.dumps({"calls": report, "table": sorted(CALLS)}))
"""

MISSING_EXTRA = {"to_pandas": "pandas", "to_polars": "polars"}
REACHED_BY_ITS_CHECK = {
    "align": "align needs the Ensemble that judged the batch",
    "alignment_html": "pass the alignment.json that cross-judge align wrote",
    "select_panel": "carry no cost",
}
"""Methods the child cannot feed cheaply (align calls models; a plan's page needs a
plan; people's votes carry no cost to choose a panel on): the implementation's first check
(its ConfigError) shows the method reached it."""
"""Methods that need an optional dependency: without it, the implementation's
ConfigError (it says what to install) shows the method reached it."""


def check_outcome(name: str, outcome: str) -> None:
    reached = REACHED_BY_ITS_CHECK.get(name)
    if reached is not None:
        assert outcome.startswith("ConfigError") and reached in outcome, outcome
        return
    extra = MISSING_EXTRA.get(name)
    if extra is not None and importlib.util.find_spec(extra) is None:
        assert outcome.startswith("ConfigError") and extra in outcome, outcome
    else:
        assert outcome == "ok", outcome


def test_every_method_works_in_one_fresh_process_of_the_users_imports() -> None:
    report = json.loads(run_python(CHILD))
    assert report["table"] == sorted(_extensions.METHODS)
    for name, found in report["calls"].items():
        check_outcome(name, found["outcome"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_extensions.METHODS))
def test_a_method_imports_its_provider_in_a_fresh_process(name: str) -> None:
    found = json.loads(run_python(CHILD, name))["calls"][name]
    check_outcome(name, found["outcome"])
    # Only what the user imported was loaded: the method itself brought its provider in
    # (cross_judge.batch imports batch.votes, which provides from_votes and add_votes).
    assert found["loaded_before"] is (name in {"from_votes", "add_votes"})


UNPICKLE = """
import pickle, sys
batch = pickle.loads(sys.stdin.buffer.read())
print(type(batch).__module__, len(batch.summary().__class__.__name__) > 0,
      "<" in batch._repr_html_(), "cross_judge.report._notebook" in sys.modules)
"""


def test_an_unpickled_batch_has_its_methods_in_a_process_that_imported_only_pickle() -> None:
    batch = BatchResult.from_votes([("i0", "ann", "P"), ("i0", "bob", "F")])
    done = subprocess.run(
        [sys.executable, "-c", UNPICKLE],
        input=pickle.dumps(batch),
        env={**os.environ, "PYTHONPATH": str(PACKAGE_DIR.parent)},
        capture_output=True,
        timeout=SAFETY_NET_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["cross_judge.batch", "True", "True", "True"]
