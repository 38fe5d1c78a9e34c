"""The package's layout rules, checked on the source with :mod:`ast` (nothing is imported).

* Imports point down the layers (``LAYER_OF``) and form no cycle. An import written inside a
  function counts: it is a real dependency, run later. One under ``if TYPE_CHECKING:``
  counts for the layers (a type named in a signature is a dependency all the same: point
  it down with a Protocol defined low, or move the type) but not for cycles (it never
  runs). Importing ``a.b.c`` also runs the ``__init__`` of the package ``a.b``, so it counts
  as importing ``a.b`` too.
* No module is over ``MAX_LINES`` lines, and none over ``SOFT_MAX_LINES`` unless
  ``OVER_SOFT_CAP`` lists it with its reason (a listed module back under it must leave the
  list, so the list stays true); at most ``MAX_TOP_LEVEL_MODULES`` modules sit at the top of
  the package (``__init__.py`` aside); every module has a layer.
* No module imports another module's private (``_name``) names; private *modules* at the top
  (``_sync``, ``_yaml``, ...) may be imported from anywhere, but a sub-package's private
  module (``transport/_wire.py``) only from inside that sub-package: what other layers need
  of it, the sub-package's ``__init__`` re-exports.

The checker itself is tested on small synthetic packages (the ``test_checker_*`` tests).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import cross_judge

_IN_REPOSITORY = Path(__file__).resolve().parents[1] / "src" / "cross_judge"
SOURCE = _IN_REPOSITORY if _IN_REPOSITORY.is_dir() else Path(cross_judge.__file__).parent

LAYERS = ("testing", "base", "stats", "wire", "critic", "batch", "panels", "report", "apps")
"""Low to high: a module imports from its own layer and the ones before it only. ``testing``
(the simulated vendor) comes first: it imports nothing from the package."""

LAYER_OF: dict[str, str] = {
    # A top-level module by name, or a sub-package by name (with every module inside it);
    # "" is cross_judge/__init__.py, the public face, which re-exports from every layer.
    "testing": "testing",
    **dict.fromkeys(
        [
            "errors",
            "verdict",
            "voting",
            "budget",
            "pairwise",
            "schema",
            "_extensions",
            "_item",
            "_sync",
            "rubric",
            "content",
        ],
        "base",
    ),
    **dict.fromkeys(["_version", "_yaml", "_resources", "_lazy"], "base"),
    # results: the batch's data, which names the statistics its methods return; only the
    # stats layer and above import it.
    **dict.fromkeys(["stats", "results"], "stats"),
    **dict.fromkeys(["transport", "limits", "vendors", "pricing"], "wire"),
    # _otel: the spans of a critic's calls and of a panel's judgements; imported by the
    # critic layer and above.
    **dict.fromkeys(["critic", "_otel"], "critic"),
    "batch": "batch",
    **dict.fromkeys(
        ["ensemble", "cascade", "cascade_calibration", "ranking", "alignment", "panel_choice"],
        "panels",
    ),
    **dict.fromkeys(["report", "integrations"], "report"),
    **dict.fromkeys(["", "cli", "panel_file", "panel", "reviewer", "aggregation"], "apps"),
    **dict.fromkeys(["core", "agreement", "bias", "reliability", "prompts", "cache"], "apps"),
    **dict.fromkeys(["shared_limit", "ray"], "apps"),
}

PRIVATE_IMPORTS_ALLOWED = {
    ("cross_judge.core", "_extract_json"),
    ("cross_judge.voting", "_rebuild_vote"),
}
"""(importer, name) pairs: cross-judge 0.1's test suites import ``core._extract_json``;
pickles of a ``Vote`` name ``cross_judge.voting._rebuild_vote``."""

MAX_LINES = 1200
SOFT_MAX_LINES = 800
MAX_TOP_LEVEL_MODULES = 30

OVER_SOFT_CAP: dict[str, str] = {
    # Module (path under cross_judge/) -> why it is over SOFT_MAX_LINES lines.
    "panel_file/_schema.py": "the panel file's pydantic models and every load-time check "
    "across their fields (the simulator's spec is its own module)",
    "results.py": "BatchResult's many views and statistics as thin methods over the stats "
    "layer, plus the results-line JSON form",
    "report/_page.py": "the one HTML page, its sections rendered in order",
    "cascade_calibration.py": "the threshold search, its guarantee and its report, one "
    "statistical procedure",
    "stats/_dawid_skene.py": "Dawid-Skene EM with its sparse form, intervals and edge cases",
    "stats/_panel_choice.py": "the pilot's pattern table with its cost rule, the replay of a "
    "panel on it and the search over subsets: one procedure over the same groups",
    "ensemble.py": "the Ensemble: judging, early stop, orders and re-voting of one panel",
    "cascade.py": "the Cascade: tiers, escalation rules, all_tiers and replay",
    "batch/votes.py": "votes cast elsewhere: from_votes, add_votes and the votes file",
    "verdict.py": "the result models, with 0.1's field names and their validation",
    "critic/_prompts.py": "the versioned prompts: loading, validation and rendering",
    "critic/_cache.py": "the response cache's file format, locking and replay",
    "critic/_parsing.py": "reading every answer shape a model gives, without raising",
    "testing/_server.py": "the simulated vendor's server, one route per wire protocol",
    "stats/_gold.py": "accuracy against gold and effective votes, with their intervals",
    "report/_digest.py": "the one-pass digest every summary reads",
    "batch/_provider_jobs.py": "provider batch mode: submitting, polling, resuming",
    "stats/bradley_terry.py": "Bradley-Terry with Davidson's ties, the fit and its intervals",
    "stats/estimates.py": "estimates from people's labels: the prediction-powered estimator, "
    "its design-based variance (a jackknife over the tuning and weight classes) and intervals",
}
"""Each module over the soft cap, with the reason it is (the hard cap, ``MAX_LINES``,
still holds for these)."""


@dataclass(frozen=True)
class Import:
    """``source`` imports ``target`` (``name`` from it, for ``from target import name``)."""

    source: str
    target: str
    name: str | None
    where: str  # path:line
    deferred: bool  # written inside a function
    type_checking: bool  # under `if TYPE_CHECKING:`

    def __str__(self) -> str:
        return (
            self.where
            + (" (inside a function)" if self.deferred else "")
            + (" (under TYPE_CHECKING)" if self.type_checking else "")
        )


# -- the checker --------------------------------------------------------------------------


def find_modules(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file of every module and package ``__init__`` under ``package_dir``."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _shown(path: Path) -> str:
    return str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)


def _targets(
    node: ast.Import | ast.ImportFrom, source: str, path: Path, modules: Mapping[str, Path]
) -> Iterator[tuple[str, str | None]]:
    """(module imported, name imported from it or None) for each name of an import."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            prefixes = [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
            yield next((p for p in prefixes if p in modules), alias.name), None
        return
    base = node.module or ""
    if node.level:
        package = source.split(".")[: None if path.name == "__init__.py" else -1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    for alias in node.names:
        module = f"{base}.{alias.name}"
        yield (module, None) if module in modules else (base, alias.name)


def find_imports(package_dir: Path) -> list[Import]:
    """Every import of one of the package's modules by another, as written in the source."""
    modules, found = find_modules(package_dir), list[Import]()
    for source, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += _imports_in(tree, source, path, modules, deferred=False, type_checking=False)
    return found


def _imports_in(
    node: ast.AST,
    source: str,
    path: Path,
    modules: Mapping[str, Path],
    *,
    deferred: bool,
    type_checking: bool,
) -> Iterator[Import]:
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for statement in node.body:
            yield from _imports_in(
                statement, source, path, modules, deferred=deferred, type_checking=True
            )
        for statement in node.orelse:
            yield from _imports_in(
                statement, source, path, modules, deferred=deferred, type_checking=type_checking
            )
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        where = f"{_shown(path)}:{node.lineno}"
        for target, name in _targets(node, source, path, modules):
            if target not in modules or target == source:
                continue  # not ours (or a package importing a name of its own)
            yield Import(source, target, name, where, deferred, type_checking)
            parts = target.split(".")  # importing a.b.c runs the __init__ of a.b first
            for package in (".".join(parts[:n]) for n in range(2, len(parts))):
                if not f"{source}.".startswith(f"{package}."):
                    yield Import(source, package, None, where, deferred, type_checking)
    inside = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
    for child in ast.iter_child_nodes(node):
        yield from _imports_in(
            child, source, path, modules, deferred=inside, type_checking=type_checking
        )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def find_cycles(imports: Iterable[Import]) -> list[list[Import]]:
    """One cycle (as its imports, in order) per strongly connected group of modules.
    ``TYPE_CHECKING`` imports are left out."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports:
        if not imp.type_checking:
            edges.setdefault(imp.source, {}).setdefault(imp.target, imp)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = {stack.pop()}
            while node not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return [_shortest_cycle(min(group), group, edges) for group in groups]


def _shortest_cycle(
    start: str, group: set[str], edges: Mapping[str, Mapping[str, Import]]
) -> list[Import]:
    paths: dict[str, list[Import]] = {start: []}
    queue = [start]
    for node in queue:  # breadth first, within the group, back to start
        for nxt, imp in sorted(edges.get(node, {}).items()):
            if nxt == start:
                return [*paths[node], imp]
            if nxt in group and nxt not in paths:
                paths[nxt] = [*paths[node], imp]
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start}")


def layer_of(module: str, table: Mapping[str, str]) -> str | None:
    """The layer of ``pkg.a.b``: ``table["a.b"]``, else ``table["a"]``; ``table[""]`` is the
    package's own ``__init__``."""
    inside = module.split(".")[1:]
    keys = [".".join(inside[:n]) for n in range(len(inside), 0, -1)] if inside else [""]
    return next((table[key] for key in keys if key in table), None)


def upward_imports(imports: Iterable[Import], table: Mapping[str, str]) -> list[str]:
    """A message per import from a lower layer to a higher one (``TYPE_CHECKING`` imports
    included: a type in a signature points at its layer as much as a call does)."""
    problems = []
    for imp in imports:
        low, high = layer_of(imp.source, table), layer_of(imp.target, table)
        if low is None or high is None:
            continue
        if LAYERS.index(high) > LAYERS.index(low):
            problems.append(
                f"{imp}: {imp.source} ({low}) imports {imp.target} ({high}), a higher layer"
            )
    return problems


def private_imports(imports: Iterable[Import], allowed: set[tuple[str, str]]) -> list[str]:
    """A message per ``from module import _name`` (dunder names and private modules aside;
    ``TYPE_CHECKING`` imports count: the name is used all the same)."""
    return [
        f"{imp}: {imp.source} imports the private name {imp.name} from {imp.target}"
        for imp in imports
        if imp.name is not None
        and imp.name.startswith("_")
        and not (imp.name.startswith("__") and imp.name.endswith("__"))
        and (imp.source, imp.name) not in allowed
    ]


def private_module_imports(imports: Iterable[Import]) -> list[str]:
    """A message per import of a sub-package's private module (``pkg.sub._impl``) from
    outside that sub-package: what other layers need of it, its ``__init__`` re-exports.
    The top level's private modules (``pkg._sync``) serve the whole package."""
    problems = []
    for imp in imports:
        parts = imp.target.split(".")
        inner = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
        if inner is None or inner < 2:  # no private segment, or a top-level module
            continue
        home = ".".join(parts[:inner])
        if imp.source != home and not imp.source.startswith(home + "."):
            problems.append(
                f"{imp}: {imp.source} imports {imp.target}, private to {home} "
                f"(import it from {home})"
            )
    return problems


def without_layer(modules: Mapping[str, Path], table: Mapping[str, str]) -> list[str]:
    """A message per module (or package ``__init__``) that ``table`` gives no layer."""
    return [
        f"{_shown(path)} has no layer: add {'.'.join(name.split('.')[1:2])!r} to LAYER_OF "
        f"in {_shown(Path(__file__))}"
        for name, path in modules.items()
        if layer_of(name, table) is None
    ]


def line_counts(package_dir: Path) -> dict[str, int]:
    """Lines per module, by path under ``package_dir`` (``a/b.py``)."""
    return {
        path.relative_to(package_dir).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in find_modules(package_dir).values()
    }


def soft_cap_problems(sizes: Mapping[str, int], listed: Mapping[str, str], cap: int) -> list[str]:
    """A message per module over ``cap`` lines that ``listed`` does not give a reason for,
    and per listed module that is no longer over it (or no longer exists)."""
    unlisted = [
        f"{name}: {lines} lines, over {cap}: split it, or add it to OVER_SOFT_CAP with why"
        for name, lines in sorted(sizes.items())
        if lines > cap and name not in listed
    ]
    stale = [
        f"{name}: listed in OVER_SOFT_CAP but "
        + (f"{sizes[name]} lines now (<= {cap})" if name in sizes else "no such module")
        + ": take it off the list"
        for name in sorted(listed)
        if sizes.get(name, 0) <= cap
    ]
    return unlisted + stale


def _cycle_message(cycles: list[list[Import]]) -> str:
    lines = []
    for cycle in cycles:
        lines.append(" -> ".join([cycle[0].source, *(imp.target for imp in cycle)]))
        lines += [f"    {imp.source} -> {imp.target}  at {imp}" for imp in cycle]
    return "import cycles:\n" + "\n".join(lines)


# -- the package --------------------------------------------------------------------------


@cache
def _package_imports() -> list[Import]:
    return find_imports(SOURCE)


def test_import_graph_has_no_cycle() -> None:
    cycles = find_cycles(_package_imports())
    assert not cycles, _cycle_message(cycles)


def test_imports_point_down_the_layers() -> None:
    problems = upward_imports(_package_imports(), LAYER_OF)
    assert not problems, "imports from a lower layer to a higher one:\n" + "\n".join(problems)


def test_every_module_has_a_layer() -> None:
    problems = without_layer(find_modules(SOURCE), LAYER_OF)
    assert not problems, "\n".join(problems)


def test_no_module_imports_another_modules_private_names() -> None:
    problems = private_imports(_package_imports(), PRIVATE_IMPORTS_ALLOWED)
    assert not problems, (
        "private names used across modules (make them public in their home module):\n"
        + "\n".join(problems)
    )


def test_no_module_imports_another_sub_packages_private_module() -> None:
    problems = private_module_imports(_package_imports())
    assert not problems, "\n".join(problems)


def test_no_module_is_over_the_line_limit() -> None:
    sizes = {
        _shown(path): len(path.read_text(encoding="utf-8").splitlines())
        for path in find_modules(SOURCE).values()
    }
    too_long = [f"{path}: {lines} lines" for path, lines in sizes.items() if lines > MAX_LINES]
    assert not too_long, f"modules over {MAX_LINES} lines:\n" + "\n".join(too_long)


def test_a_module_over_the_soft_cap_is_listed_with_its_reason() -> None:
    problems = soft_cap_problems(line_counts(SOURCE), OVER_SOFT_CAP, SOFT_MAX_LINES)
    assert not problems, "\n".join(problems)


def test_at_most_30_modules_at_the_top_of_the_package() -> None:
    top = sorted(p.name for p in SOURCE.glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_TOP_LEVEL_MODULES, (
        f"{len(top)} modules at the top of {_shown(SOURCE)} (at most {MAX_TOP_LEVEL_MODULES}; "
        f"move some into the sub-package of their layer): {', '.join(top)}"
    )


# -- the checker, on synthetic packages ---------------------------------------------------


def _package(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "pkg"


def test_checker_finds_a_cycle_through_a_deferred_import(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "b.py": "def later():\n    from .c import thing\n",
            "c.py": "from pkg.a import x\n",
            "d.py": "from . import a\n",  # into the cycle, not part of it
        },
    )
    cycles = find_cycles(find_imports(package))
    assert [[(i.source, i.target) for i in cycle] for cycle in cycles] == [
        [("pkg.a", "pkg.b"), ("pkg.b", "pkg.c"), ("pkg.c", "pkg.a")]
    ]
    message = _cycle_message(cycles)
    assert "pkg.a -> pkg.b -> pkg.c -> pkg.a" in message
    assert "b.py:2 (inside a function)" in message


def test_checker_does_not_count_type_checking_imports(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from .b import B\n",
            "b.py": (
                "import typing\nfrom typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .a import A\n"
                "if typing.TYPE_CHECKING:\n    from . import a\n"
            ),
        },
    )
    assert find_cycles(find_imports(package)) == []
    (package / "b.py").write_text("if TYPE_CHECKING:\n    pass\nelse:\n    from . import a\n")
    assert len(find_cycles(find_imports(package))) == 1  # the else branch does run


def test_checker_counts_the_init_of_an_imported_sub_package(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "from .helper import help\n",
            "low/helper.py": "from .sibling import x\n",  # its own package: no edge to it
            "low/sibling.py": "",
            "high/__init__.py": "",
            "high/user.py": "def f():\n    from ..low.sibling import x\n",
        },
    )
    pairs = {(i.source, i.target) for i in find_imports(package)}
    assert ("pkg.high.user", "pkg.low") in pairs
    assert ("pkg.low.helper", "pkg.low") not in pairs
    assert find_cycles(find_imports(package)) == []


def test_checker_reports_an_upward_import_with_file_and_line(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "import os\n\n\ndef f():\n    from pkg.batch import run\n",
            "batch/__init__.py": "from ..errors import f\n",
        },
    )
    table = {"": "apps", "errors": "base", "batch": "batch"}
    problems = upward_imports(find_imports(package), table)
    assert len(problems) == 1
    assert problems[0].endswith(
        "errors.py:5 (inside a function): pkg.errors (base) imports pkg.batch (batch), "
        "a higher layer"
    )


def test_checker_counts_a_type_checking_import_for_the_layers(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from .batch import Run\n",
            "batch/__init__.py": "from ..errors import f\n",
        },
    )
    imports = find_imports(package)
    assert find_cycles(imports) == []  # it never runs: no cycle
    problems = upward_imports(imports, {"": "apps", "errors": "base", "batch": "batch"})
    assert len(problems) == 1
    assert problems[0].endswith(
        "errors.py:3 (under TYPE_CHECKING): pkg.errors (base) imports pkg.batch (batch), "
        "a higher layer"
    )


def test_checker_counts_lines_per_module_by_path(tmp_path: Path) -> None:
    package = _package(
        tmp_path, {"__init__.py": "", "a.py": "x = 1\ny = 2\n", "sub/__init__.py": "\n"}
    )
    assert line_counts(package) == {"__init__.py": 0, "a.py": 2, "sub/__init__.py": 1}


def test_checker_wants_a_reason_for_each_module_over_the_soft_cap() -> None:
    sizes = {"big.py": 5, "listed.py": 5, "shrunk.py": 3, "small.py": 1}
    listed = {"listed.py": "one algorithm", "shrunk.py": "was big", "gone.py": "was big"}
    problems = soft_cap_problems(sizes, listed, cap=3)
    assert [p.split(":")[0] for p in problems] == ["big.py", "gone.py", "shrunk.py"]
    assert "add it to OVER_SOFT_CAP" in problems[0]
    assert "no such module" in problems[1]
    assert "3 lines now (<= 3): take it off the list" in problems[2]


def test_checker_reports_private_names_but_not_private_modules(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "_sync.py": "__all__ = []\n_loop = None\n",
            "a.py": "from . import _sync\nfrom ._sync import __all__\nimport pkg._sync\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from ._sync import _loop\n",
            "core.py": "from ._sync import _loop\n",
        },
    )
    problems = private_imports(find_imports(package), {("pkg.core", "_loop")})
    assert len(problems) == 1
    assert problems[0].endswith(
        "b.py:3 (under TYPE_CHECKING): pkg.b imports the private name _loop from pkg._sync"
    )


def test_checker_reports_a_private_module_imported_from_another_sub_package(
    tmp_path: Path,
) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "_sync.py": "",
            "wire/__init__.py": "from ._impl import send\n",
            "wire/_impl.py": "send = None\n",
            "wire/user.py": "from ._impl import send\n",
            "critic.py": "from . import _sync\nfrom .wire import send\n"
            "from .wire._impl import send\n",
        },
    )
    problems = private_module_imports(find_imports(package))
    assert len(problems) == 1
    assert problems[0].endswith(
        "critic.py:3: pkg.critic imports pkg.wire._impl, private to pkg.wire "
        "(import it from pkg.wire)"
    )


def test_checker_reports_a_module_without_a_layer(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {"__init__.py": "", "known.py": "", "stats/__init__.py": "", "stats/new.py": ""}
        | {"stray.py": "", "newpkg/__init__.py": "", "newpkg/mod.py": ""},
    )
    table = {"": "apps", "known": "base", "stats": "stats"}
    problems = without_layer(find_modules(package), table)
    assert [p.split(" has no layer")[0] for p in problems] == [
        str(package / "newpkg" / "__init__.py"),
        str(package / "newpkg" / "mod.py"),
        str(package / "stray.py"),
    ]
    assert "add 'newpkg' to LAYER_OF" in problems[1]
    assert "add 'stray' to LAYER_OF" in problems[2]
