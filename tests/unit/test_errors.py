"""The exception tree: every exception a user can receive is defined in (or re-exported
from) ``cross_judge.errors``, drawn in its docstring tree, exported from ``cross_judge``, and
has a public name; the tree drawn is the real class hierarchy."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
import traceback
from pathlib import Path

import pytest

import cross_judge
from cross_judge import errors

NOT_RAISED = {
    # Exceptions that exist but never reach a caller, and why.
    "cross_judge.transport._failure.CallFailure": "the critic turns it into an ERROR verdict",
    "cross_judge.transport._retry._QueuedPastDeadline": "a CallFailure (a timeout verdict)",
    "cross_judge.transport._redaction.RedactedError": "only carries a traceback into a log",
    "cross_judge._yaml.YAMLSyntaxError": "each reader turns it into a ConfigError subclass",
    "cross_judge._yaml.FileTooLargeError": "each reader turns it into a ConfigError subclass",
    "cross_judge.critic._prompts._FieldProblem": "a template check's internal signal",
    "cross_judge.panel_file._problems.FieldProblem": "a panel validator's internal signal",
    "cross_judge.panel_file._problems.FieldProblems": "a panel validator's internal signal",
}


def drawn_tree() -> dict[str, tuple[str | None, list[str]]]:
    """The ``errors`` docstring's tree: name -> (parent drawn above it, extra bases)."""
    text = errors.__doc__ or ""
    block = text.split("The raised tree", 1)[1].split("::\n\n", 1)[1].split("\n\n", 1)[0]
    tree: dict[str, tuple[str | None, list[str]]] = {}
    stack: list[tuple[int, str]] = []  # (column, name) of the current ancestors
    for line in block.splitlines():
        match = re.match(r"^([\s│├└─]*)([A-Z]\w*)(?: \(([\w, ]+)\))?", line)
        assert match, f"cannot read the tree line {line!r}"
        column, name = len(match[1]), match[2]
        while stack and stack[-1][0] >= column:
            stack.pop()
        extra = [base.strip() for base in match[3].split(",")] if match[3] else []
        tree[name] = (stack[-1][1] if stack else None, extra)
        stack.append((column, name))
    return tree


def user_facing() -> list[str]:
    """Names of the exception classes in ``cross_judge.__all__`` (warning categories
    aside: they are warned, not raised)."""
    return [
        name
        for name in cross_judge.__all__
        if inspect.isclass(obj := getattr(cross_judge, name))
        and issubclass(obj, BaseException)
        and not issubclass(obj, Warning)
    ]


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package, by ``module.qualname`` (warning
    categories aside: they are warned, not raised)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(cross_judge.__path__, "cross_judge."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:  # an optional extra that is not installed
            if exc.name and exc.name.startswith("cross_judge"):
                raise
            continue
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and not issubclass(obj, Warning)
                and obj.__module__.startswith("cross_judge")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_the_drawn_tree_is_the_real_hierarchy() -> None:
    tree = drawn_tree()
    assert tree["CrossJudgeError"] == (None, [])
    for name, (parent, extra) in tree.items():
        cls = getattr(errors, name, None)
        assert inspect.isclass(cls), f"{name} is drawn in the tree but not in cross_judge.errors"
        for base in ([parent] if parent else []) + extra:
            expected = getattr(errors, base, None) or getattr(builtins, base)
            assert issubclass(cls, expected), f"{name} is drawn under {base} but does not derive"


def test_every_exception_a_user_can_see_is_drawn_and_exported() -> None:
    tree = drawn_tree()
    exported = set(user_facing())
    in_errors = {
        n
        for n in errors.__all__
        if issubclass(getattr(errors, n), BaseException)
        and not issubclass(getattr(errors, n), Warning)
    }
    assert in_errors <= exported, "errors.__all__ holds exceptions cross_judge does not export"
    assert exported <= set(tree), f"exported but not drawn: {sorted(exported - set(tree))}"
    assert {n for n in tree if hasattr(errors, n)} <= in_errors, "drawn but not in __all__"
    for name in exported:
        assert getattr(cross_judge, name) is getattr(errors, name), name
        assert not name.startswith("_")
        assert issubclass(getattr(cross_judge, name), errors.CrossJudgeError), name


def test_every_warning_category_is_exported_and_named_in_the_docstring() -> None:
    categories = [
        name
        for name in errors.__all__
        if inspect.isclass(obj := getattr(errors, name)) and issubclass(obj, Warning)
    ]
    assert categories, "errors.__all__ lists no warning category"
    for name in categories:
        assert getattr(cross_judge, name) is getattr(errors, name), name
        assert f"``{name}``" in (errors.__doc__ or ""), f"errors' docstring omits {name}"


def test_every_exception_of_the_package_is_in_the_tree_or_never_reaches_a_caller() -> None:
    drawn = {getattr(errors, name) for name in drawn_tree() if hasattr(errors, name)}
    problems = []
    for name, cls in package_exceptions().items():
        if cls in drawn:
            continue
        if name not in NOT_RAISED:
            problems.append(
                f"{name}: draw it in the tree of cross_judge.errors and export it, or list it "
                "in NOT_RAISED with why no caller ever receives it"
            )
        elif issubclass(cls, errors.CrossJudgeError):
            problems.append(f"{name} is internal, yet `except CrossJudgeError` would catch it")
    assert not problems, "\n".join(problems)
    for name in NOT_RAISED:
        short = name.rsplit(".", 1)[1]
        if not short.startswith("_"):
            assert f"``{short}``" in (errors.__doc__ or ""), f"errors' docstring omits {short}"


def test_no_exception_a_user_can_see_has_a_private_name() -> None:
    public = {n: c for n, c in package_exceptions().items() if n not in NOT_RAISED}
    assert [n for n in public if n.rsplit(".", 1)[1].startswith("_")] == []


def test_moved_exceptions_still_import_from_their_old_homes() -> None:
    from cross_judge.batch import ItemError
    from cross_judge.batch._lock import ResultsLocked
    from cross_judge.critic._cache import UnusableCacheError

    assert ItemError is errors.ItemError
    assert ResultsLocked is errors.ResultsLocked
    assert UnusableCacheError is errors.UnusableCacheError


def test_item_error_prefixes_the_position() -> None:
    assert str(errors.ItemError("no query", position=3)) == "item 3: no query"
    error = errors.ItemError("no query")
    assert (str(error), error.position) == ("no query", None)


@pytest.mark.parametrize(
    ("lookup", "message"),
    [
        (cross_judge.get_voting_strategy, "Unknown voting strategy 'nope'. Known: ["),
        (cross_judge.get_strategy, "Unknown strategy 'nope'. Known: ["),
    ],
)
def test_an_unknown_strategy_error_shows_its_public_name(lookup: object, message: str) -> None:
    with pytest.raises(errors.UnknownStrategyError) as info:
        lookup("nope")  # type: ignore[operator]
    error = info.value
    assert isinstance(error, errors.ConfigError) and isinstance(error, KeyError)
    assert str(error).startswith(message)  # not wrapped in quotes, as KeyError would
    assert repr(error).startswith("UnknownStrategyError(")
    shown = traceback.format_exception_only(type(error), error)[-1]
    assert shown.startswith(f"cross_judge.errors.UnknownStrategyError: {message}")


def test_an_unusable_cache_reaches_the_user_under_its_public_name(tmp_path: Path) -> None:
    with pytest.raises(errors.UnusableCacheError) as info:
        cross_judge.ResponseCache(tmp_path).stats()
    assert info.value.path == tmp_path and info.value.removable is False
    assert isinstance(info.value, errors.ConfigError)
    assert "is a folder" in str(info.value)
