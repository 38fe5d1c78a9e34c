"""A batch's valid votes read once, and its results re-decided by a Dawid-Skene fit, for
:func:`~cross_judge.stats._reliability.revote_dawid_skene`: the per-vote and per-item loops,
kept apart from the statistics that call them.

The votes are read in one pass as the parallel lists
:func:`~cross_judge.stats._dawid_skene.fit_votes` takes, with where each item's votes end,
so that re-deciding an item reads no verdict again. Each re-decided result is a shallow copy
built in one step (its own field dict, extra fields and set of fields set; the values
shared), while the cyclic garbage collector is paused
(:func:`~cross_judge.stats._collector.collection_paused`).
"""

from __future__ import annotations

from itertools import compress
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..verdict import EnsembleVerdict

if TYPE_CHECKING:
    from ..results import BatchResult
    from ._dawid_skene import DawidSkeneFit

__all__ = ["BatchVotes", "decided_results"]


class BatchVotes:
    """The valid votes of a batch by its critics, read in one pass as the parallel lists
    :func:`~cross_judge.stats._dawid_skene.fit_votes` takes (``items``, ``critics``,
    ``labels``), with ``ends[i]``, the end of item ``i``'s votes in them (item ``i``'s are
    ``ends[i - 1]:ends[i]``, in verdict order). ``stray`` holds the items with a valid
    verdict by a critic not in ``batch.critics``: in the fit, as in every statistic, that
    verdict is left out, yet it still votes on its item.

    Raises:
        ConfigError: an empty batch.
    """

    __slots__ = ("critics", "ends", "items", "labels", "stray")

    def __init__(self, batch: BatchResult) -> None:
        if not batch.verdicts:
            raise ConfigError("dawid_skene needs at least one item")
        critic_index = {name: j for j, name in enumerate(batch.critics)}
        find = critic_index.get
        items: list[int] = []
        critics: list[int] = []
        labels: list[str] = []
        ends: list[int] = []
        stray: set[int] = set()
        add_item, add_critic, add_label, end = (
            items.append, critics.append, labels.append, ends.append
        )  # fmt: skip
        for i, result in enumerate(batch.verdicts):
            for verdict in result.verdicts:
                if verdict.error is None:
                    j = find(verdict.critic_id)
                    if j is None:
                        stray.add(i)
                        continue
                    add_item(i)
                    add_critic(j)
                    add_label(verdict.kind)
            end(len(labels))
        self.items, self.critics, self.labels, self.ends = items, critics, labels, ends
        self.stray = stray


def decided_results(
    batch: BatchResult, votes: BatchVotes, fit: DawidSkeneFit, fallback: str
) -> list[EnsembleVerdict]:
    """Each result of ``batch`` re-decided by ``fit`` (of ``votes``): the fit's label, its
    posterior as ``score``, ``agreement_pct``, ``disagreement`` and ``dissenters`` counted
    from every valid verdict of the item; an item with no valid vote gets ``fallback``
    with ``fallback=True`` and no score. Results in batch order, each a shallow copy."""
    column = {label: k for k, label in enumerate(fit.classes)}
    labels, stray = votes.labels, votes.stray
    voter_names = list(map(batch.critics.__getitem__, votes.critics))
    posteriors = fit.posteriors
    revoted: list[EnsembleVerdict] = []
    append = revoted.append
    start = 0
    for i, (result, label, end) in enumerate(
        zip(batch.verdicts, fit.labels, votes.ends, strict=True)
    ):
        voters: list[str] | None = None
        if stray and i in stray:
            valid = [v for v in result.verdicts if v.error is None]
            kinds = [v.kind for v in valid]
            voters = [v.critic_id for v in valid]
        else:
            kinds = labels[start:end]
        n = len(kinds)
        old = result.dissenters
        if not n:
            update = _NO_VOTE | {"consensus": fallback, "dissenters": old if not old else []}
            append(_copied(result, update))
            start = end
            continue
        agreeing = kinds.count(label)
        if agreeing == n:
            dissenters = old if not old else []
            disagreement = False
        else:
            if voters is None:
                voters = voter_names[start:end]
            dissenters = list(compress(voters, map(label.__ne__, kinds)))
            # All voted against the label: a disagreement only if not on one same answer.
            disagreement = agreeing > 0 or kinds.count(kinds[0]) < n
            if dissenters == old:
                # Unchanged: shared, like every other unchanged value of the shallow copy;
                # one object less per item to allocate and for the collector to scan.
                dissenters = old
        start = end
        append(
            _decided(
                result, label, posteriors[i][column[label]], agreeing / n, disagreement, dissenters
            )
        )
    return revoted


def _decided(
    result: EnsembleVerdict,
    label: str,
    score: float,
    agreement: float,
    disagreement: bool,
    dissenters: list[str],
) -> EnsembleVerdict:
    """``result`` decided ``label`` by the fit: :func:`_copied` with those fields, the
    update written straight into the copy's fields (no update mapping per item)."""
    if type(result) is not EnsembleVerdict or result.__pydantic_private__ is not None:
        update = {
            "consensus": label,
            "score": score,
            "voting": "dawid_skene",
            "fallback": False,
            "agreement_pct": agreement,
            "disagreement": disagreement,
            "dissenters": dissenters,
        }
        return _copied(result, update)
    values = result.__dict__.copy()
    values["consensus"] = label
    values["score"] = score
    values["voting"] = "dawid_skene"
    values["fallback"] = False
    values["agreement_pct"] = agreement
    values["disagreement"] = disagreement
    values["dissenters"] = dissenters
    fields_set = result.__pydantic_fields_set__
    # Usually every decided field was set already: a plain copy of the set is cheaper.
    return _assembled(
        result, values, fields_set.copy() if fields_set >= _DECIDED else fields_set | _DECIDED
    )


_DECIDED = frozenset(
    ("consensus", "score", "voting", "fallback", "agreement_pct", "disagreement", "dissenters")
)


_NO_VOTE: dict[str, Any] = {
    "score": None,
    "voting": "dawid_skene",
    "fallback": True,
    "agreement_pct": 0.0,
    "disagreement": False,
}


def _copied(result: EnsembleVerdict, update: dict[str, Any]) -> EnsembleVerdict:
    """``result.model_copy(update=update)`` for an ``update`` of declared fields only, built
    in one step: the same shallow copy (its own ``__dict__``, extra fields and set of fields
    set; the values shared), in half the time, which counts on a batch of 100,000 items.
    A subclass, or a result with private attributes, takes ``model_copy`` itself."""
    if type(result) is not EnsembleVerdict or result.__pydantic_private__ is not None:
        return result.model_copy(update=update)
    return _assembled(
        result, {**result.__dict__, **update}, result.__pydantic_fields_set__ | update.keys()
    )


def _assembled(
    result: EnsembleVerdict, values: dict[str, Any], fields_set: set[str]
) -> EnsembleVerdict:
    """A new :class:`EnsembleVerdict` of the field ``values`` and ``fields_set`` given, with
    a copy of ``result``'s extra fields and no private attributes: what ``model_copy`` puts
    together, without its checks (the caller has ruled out a subclass and private ones)."""
    copied = _new_result(EnsembleVerdict)
    _set(copied, "__dict__", values)
    extra = result.__pydantic_extra__
    _set(copied, "__pydantic_extra__", None if extra is None else dict(extra))
    _set(copied, "__pydantic_fields_set__", fields_set)
    _set(copied, "__pydantic_private__", None)
    return copied


_new_result = EnsembleVerdict.__new__
_set = object.__setattr__
