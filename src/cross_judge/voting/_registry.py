"""Strategies by name, and the checks run before anything is billed.

:data:`VOTING_STRATEGIES` maps names to strategies; :func:`validate_voting` and
:func:`accepts_kwarg` check a strategy and its keywords without calling a model.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..errors import ConfigError, UnknownStrategyError
from ._labels import (
    LABEL_STRATEGIES,
    any_vote,
    first_disagreement,
    majority_vote,
    unanimous,
    weighted_vote,
)
from ._scores import (
    SCORE_STRATEGIES,
    average_score,
    highest_score,
    lowest_score,
    median_score,
    trimmed_mean_score,
    weighted_average_score,
)
from ._vote import VotingStrategy

_BUILTINS: tuple[VotingStrategy, ...] = (*LABEL_STRATEGIES, *SCORE_STRATEGIES)


def _keyword_names(fn: Callable[..., Any]) -> frozenset[str]:
    params = inspect.signature(fn).parameters.values()
    return frozenset(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


# Identity-keyed (a list of pairs, not a dict): a custom callable need not be hashable.
_BUILTIN_KEYWORDS: list[tuple[VotingStrategy, frozenset[str]]] = [
    (fn, _keyword_names(fn)) for fn in _BUILTINS
]


def builtin_keywords(fn: object) -> frozenset[str] | None:
    """The keyword names of built-in ``fn`` (by identity), else ``None``."""
    for builtin, names in _BUILTIN_KEYWORDS:
        if fn is builtin:
            return names
    return None


# -- registry -----------------------------------------------------------------------------

VOTING_STRATEGIES: dict[str, VotingStrategy] = {
    "majority": majority_vote,
    "unanimous": unanimous,
    "consensus": unanimous,
    "weighted": weighted_vote,
    "any": any_vote,
    "first_disagreement": first_disagreement,
    "average": average_score,
    "weighted_average": weighted_average_score,
    "median": median_score,
    "trimmed_mean": trimmed_mean_score,
    "highest": highest_score,
    "lowest": lowest_score,
}
"""Strategies by lower-case name."""


def register_voting_strategy(name: str, fn: VotingStrategy, *, replace: bool = False) -> None:
    """Register ``fn`` under ``name`` (stripped, lower-cased), for ``voting=name``.
    ``ConfigError`` for an empty name, an ``fn`` that is not callable, or a name taken
    (built-ins included) without ``replace=True``."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a voting strategy name must be a non-empty string, got {name!r}")
    if not callable(fn):
        raise ConfigError(f"voting strategy {name!r} must be callable, got {fn!r}")
    key = name.strip().lower()
    if key in VOTING_STRATEGIES and not replace:
        raise ConfigError(
            f"voting strategy {key!r} is already registered; pass replace=True to replace it"
        )
    VOTING_STRATEGIES[key] = fn


BATCH_STRATEGIES = frozenset({"dawid_skene"})
"""Names that re-decide a whole batch and are no per-item strategy:
``BatchResult.revote`` takes them, the per-item look-up refuses them with a pointer there."""


def get_voting_strategy(name_or_fn: str | VotingStrategy) -> VotingStrategy:
    """A strategy by name (case-insensitive, surrounding spaces ignored), or the callable.

    Raises:
        UnknownStrategyError: (a ``ConfigError`` and a ``KeyError``) unknown name; the
            message lists the known ones. A batch-level name (``"dawid_skene"``, which
            learns from every item) says to re-vote the batch instead.
    """
    try:
        return lookup_strategy(name_or_fn, VOTING_STRATEGIES, what="voting strategy")
    except UnknownStrategyError:
        name = str(name_or_fn).strip().lower()
        if name not in BATCH_STRATEGIES:
            raise
    raise UnknownStrategyError(
        f"{name!r} learns each critic's reliability from a whole batch, so it cannot "
        "decide one item on its own: vote per item with another strategy (e.g. "
        f"'majority'), then re-vote the batch: batch.revote({name!r}) "
        f"(BatchResult.revote), or cross-judge revote OUT.jsonl --voting {name}"
    )


StrategyT = TypeVar("StrategyT", bound=Callable[..., tuple[str, bool]])


def lookup_strategy(
    name_or_fn: str | StrategyT, table: Mapping[str, StrategyT], *, what: str
) -> StrategyT:
    """``table[name]`` (case-insensitive, spaces ignored), or the callable itself; an
    unknown name raises ``UnknownStrategyError`` listing ``table``'s names. Shared by
    :func:`get_voting_strategy` and the legacy ``aggregation.get_strategy``."""
    if callable(name_or_fn):
        return name_or_fn
    strategy = table.get(str(name_or_fn).strip().lower())
    if strategy is None:
        raise UnknownStrategyError(f"Unknown {what} {name_or_fn!r}. Known: {sorted(table)}.")
    return strategy


def strategy_name(strategy: str | VotingStrategy) -> str:
    """The name recorded in ``EnsembleVerdict.voting``: a string as given (0.1 does not
    normalise ``"MAJORITY"``), else the callable's ``__name__``, else ``"custom"``."""
    if isinstance(strategy, str):
        return strategy
    name: Any = getattr(strategy, "__name__", "custom")
    return str(name)


# -- validation ---------------------------------------------------------------------------


def validate_voting(strategy: str | VotingStrategy, kwargs: Mapping[str, Any]) -> VotingStrategy:
    """Resolve ``strategy`` and check that ``strategy(verdicts, **kwargs)`` can run.

    Meant for construction time, before any model is billed. Built-ins: every name must be
    one they accept and every value valid (checked by running the strategy on an empty
    panel, so the check is the call's own). Custom callables: the signature must bind one
    positional argument plus ``kwargs``; a callable whose signature cannot be inspected is
    accepted unchecked. Returns the resolved callable.

    Raises:
        ConfigError: unknown strategy (also a ``KeyError``), an unknown keyword (the message
            lists the accepted ones), an invalid value, or a custom callable that does not
            accept a keyword (the message names it).
    """
    fn = get_voting_strategy(strategy)
    name = strategy_name(strategy)
    non_str = [k for k in kwargs if not isinstance(k, str)]
    if non_str:
        raise ConfigError(f"voting keyword names must be strings, got {non_str!r}")
    accepted = builtin_keywords(fn)
    if accepted is not None:
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise ConfigError(
                f"voting strategy {name!r} does not accept {', '.join(map(repr, unknown))}; "
                f"it accepts: {', '.join(sorted(accepted))}"
            )
        fn([], **kwargs)
        return fn
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    try:
        signature.bind([], **kwargs)
    except TypeError as exc:
        rejected = [k for k in kwargs if not _signature_accepts(signature, k)]
        what = (
            f"does not accept {', '.join(map(repr, rejected))}"
            if rejected
            else f"cannot be called as strategy(verdicts, **kwargs): {exc}"
        )
        raise ConfigError(f"custom voting strategy {name!r} {what}") from exc
    return fn


def _signature_accepts(signature: inspect.Signature, name: str) -> bool:
    try:
        signature.bind_partial([], **{name: None})
    except TypeError:
        return False
    return True


def accepts_kwarg(strategy: str | VotingStrategy, name: str) -> bool:
    """Whether ``strategy`` takes keyword ``name``.

    Built-ins take every policy keyword (plus their own extras). A custom callable takes it
    if it has that parameter (not positional-only, not the verdicts slot) or ``**kwargs``.
    A callable whose signature cannot be inspected gives False: a caller should not inject
    arguments it cannot show are accepted.
    """
    fn = get_voting_strategy(strategy)
    accepted = builtin_keywords(fn)
    if accepted is not None:
        return name in accepted
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return _signature_accepts(signature, name)
