"""Every public name is on a docs page, and the public modules are exactly the documented ones.

The public modules are the paths the API pages render (``::: cross_judge.X`` in docs/) and the
``__init__`` of every package; everything else inside a sub-package is ``_name.py``. A name in
a public module's ``__all__`` is *on a page* when an API page renders it (its module, or the
object itself under any public name it has) or when a page shows it as code (in backticks or
a code block) under that name.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

import cross_judge

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(cross_judge.__file__).resolve().parent
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]

CODE_SPAN = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)  # a block's info string aside
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DIRECTIVE = re.compile(r"^::: ([A-Za-z_][\w.]*)", re.M)


def rendered_paths(pages: Iterable[Path]) -> set[str]:
    """The dotted paths the API pages render with ``::: path``."""
    return {path for page in pages for path in DIRECTIVE.findall(page.read_text("utf-8"))}


def code_identifiers(pages: Iterable[Path]) -> set[str]:
    """Every identifier shown as code (inline or fenced) on the pages."""
    found: set[str] = set()
    for page in pages:
        for block, inline in CODE_SPAN.findall(page.read_text("utf-8")):
            found.update(IDENTIFIER.findall(block or inline))
    return found


def package_inits(root: Path, package: str) -> Iterator[str]:
    """The dotted name of every package of the tree whose path has no private part."""
    for init in sorted(root.rglob("__init__.py")):
        parts = init.parent.relative_to(root.parent).parts
        if not any(part.startswith("_") for part in parts[1:]):
            yield ".".join((package, *parts[1:]))


def public_modules(rendered: set[str], root: Path, package: str) -> list[str]:
    """The rendered paths that are modules, plus every package ``__init__``."""
    modules = set(package_inits(root, package))
    for path in rendered:
        try:
            importlib.import_module(path)
        except ImportError:  # an object (``cross_judge.batch.BatchOptions``), not a module
            continue
        modules.add(path)
    return sorted(modules)


def rendered_objects(rendered: set[str]) -> set[tuple[str, int]]:
    """(name, id) of every object an API page renders: a rendered module's ``__all__`` and
    each object rendered by its own directive."""
    shown: set[tuple[str, int]] = set()
    for path in rendered:
        try:
            module = importlib.import_module(path)
        except ImportError:
            parent, _, name = path.rpartition(".")
            shown.add((name, id(getattr(importlib.import_module(parent), name))))
            continue
        for name in getattr(module, "__all__", ()):
            shown.add((name, id(getattr(module, name))))
    return shown


def names_on_no_page(
    pages: Iterable[Path] = PAGES, root: Path = PACKAGE, package: str = "cross_judge"
) -> list[str]:
    """``module.name`` for each name of a public module's ``__all__`` on no page."""
    pages = list(pages)
    rendered = rendered_paths(pages)
    shown = rendered_objects(rendered)
    as_code = code_identifiers(pages)
    missing = []
    for path in public_modules(rendered, root, package):
        module = importlib.import_module(path)
        for name in getattr(module, "__all__", ()):
            if (name, id(getattr(module, name))) in shown or name in as_code:
                continue
            missing.append(f"{path}.{name}")
    return missing


def private_modules_named_public(
    pages: Iterable[Path] = PAGES, root: Path = PACKAGE, package: str = "cross_judge"
) -> list[str]:
    """Modules inside a sub-package whose name is public although no page renders them."""
    rendered = rendered_paths(pages)
    wrong = []
    for module in sorted(root.rglob("*.py")):
        parts = module.relative_to(root).with_suffix("").parts
        if len(parts) < 2 or parts[-1] in {"__init__", "__main__"}:
            continue  # a top-level module, a package, or ``python -m`` entry
        if any(part.startswith("_") for part in parts):
            continue
        dotted = ".".join((package, *parts))
        if dotted not in rendered:
            wrong.append(dotted)
    return wrong


def test_every_public_name_is_on_a_docs_page() -> None:
    missing = names_on_no_page()
    assert not missing, (
        "public names on no docs page (show each as code on a page, render its module with "
        "'::: module' on an API page, or drop it from __all__):\n" + "\n".join(missing)
    )


def test_modules_inside_sub_packages_are_private_unless_documented() -> None:
    wrong = private_modules_named_public()
    assert not wrong, (
        "implementation modules with public names (rename to _name.py, or render the module "
        "on an API page if it is a public path):\n" + "\n".join(wrong)
    )


def test_code_identifiers_come_from_backticks_and_code_blocks_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Prose about split.\n\nCall `poll(job)`.\n\n```python\nsubmit(x)\n```\n")
    assert code_identifiers([page]) == {"poll", "job", "submit", "x"}


def test_rendered_paths_read_the_api_directives(tmp_path: Path) -> None:
    page = tmp_path / "api.md"
    page.write_text("# API\n\n::: cross_judge.batch\n\n::: cross_judge.batch.BatchOptions\n")
    assert rendered_paths([page]) == {"cross_judge.batch", "cross_judge.batch.BatchOptions"}


def _synthetic_package(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text(
        "from ._impl import shown, told, untold\n__all__ = ['shown', 'told', 'untold']\n"
    )
    (root / "sub" / "_impl.py").write_text("def shown(): ...\ndef told(): ...\ndef untold(): ...\n")
    (root / "sub" / "helpers.py").write_text("")
    (root / "sub" / "_hidden").mkdir()
    (root / "sub" / "_hidden" / "__init__.py").write_text("__all__ = ['inner']\ninner = 1\n")
    return root


def test_a_name_exported_but_shown_nowhere_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _synthetic_package(tmp_path, "pkg_names_demo")
    monkeypatch.syspath_prepend(str(tmp_path))
    page = tmp_path / "page.md"
    page.write_text("Use `told()`.\n")
    assert names_on_no_page([page], root, "pkg_names_demo") == [
        "pkg_names_demo.sub.shown",
        "pkg_names_demo.sub.untold",
    ]


def test_a_rendered_module_puts_all_its_names_on_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _synthetic_package(tmp_path, "pkg_rendered_demo")
    monkeypatch.syspath_prepend(str(tmp_path))
    page = tmp_path / "api.md"
    page.write_text("::: pkg_rendered_demo.sub\n")
    assert names_on_no_page([page], root, "pkg_rendered_demo") == []


def test_a_public_named_module_inside_a_sub_package_is_reported(tmp_path: Path) -> None:
    root = _synthetic_package(tmp_path, "pkg_modules_demo")
    page = tmp_path / "api.md"
    page.write_text("no directives\n")
    assert private_modules_named_public([page], root, "pkg_modules_demo") == [
        "pkg_modules_demo.sub.helpers"
    ]
    page.write_text("::: pkg_modules_demo.sub.helpers\n")
    assert private_modules_named_public([page], root, "pkg_modules_demo") == []
