"""What a ``cross-judge review`` capped by ``--budget-usd`` left undone, said at the end of
the run: how many items have calls the budget did not make (apart from items whose calls
failed), what the results file has cost, about what the rest needs, and the command that
judges it.

It reads the results file and words the note; it does not run or retry anything (the run
is :mod:`._review`'s).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import counted, shown_ids

if TYPE_CHECKING:
    from ..budget import Budget

__all__ = ["Shortfall", "read_shortfall", "shortfall_note", "suggested_budget"]

_SHOWN = 5  # ids listed per kind of failure


@dataclass
class Shortfall:
    """The items of a results file worth judging again (``--retry-failed``), by why.

    ``over_budget`` counts the items with a call not made for lack of budget
    (``SKIPPED``, ``error_kind="budget"``), ``calls_not_made`` those calls and
    ``calls_to_redo`` every call those items asked (``--retry-failed`` judges an item
    again whole); ``failed`` counts the other items with a failed call. ``judged`` counts
    the items judged in full whose cost is known, ``judged_usd`` what they cost.
    """

    over_budget: int = 0
    over_budget_ids: list[str] = field(default_factory=list)
    calls_not_made: int = 0
    calls_to_redo: int = 0
    failed: int = 0
    failed_ids: list[str] = field(default_factory=list)
    judged: int = 0
    judged_usd: float = 0.0

    @property
    def per_item_usd(self) -> float | None:
        """What an item judged in full cost on average; ``None`` when none was."""
        return self.judged_usd / self.judged if self.judged else None


def read_shortfall(path: Path) -> Shortfall:
    """One pass over the results in ``path``, holding counts and a few ids."""
    from ..errors import ErrorKind
    from ..results import is_incomplete, read_results

    found = Shortfall()
    for result in read_results(path, slim=True):
        if not is_incomplete(result):
            if result.cost_usd is not None:
                found.judged += 1
                found.judged_usd += result.cost_usd
            continue
        skipped = sum(v.error_kind is ErrorKind.BUDGET for v in result.verdicts)
        if not skipped:
            found.failed += 1
            if len(found.failed_ids) < _SHOWN:
                found.failed_ids.append(result.query_id)
            continue
        found.over_budget += 1
        if len(found.over_budget_ids) < _SHOWN:
            found.over_budget_ids.append(result.query_id)
        found.calls_not_made += skipped
        found.calls_to_redo += sum(
            v.error_kind is not ErrorKind.EARLY_STOP for v in result.verdicts
        )
    return found


def suggested_budget(shortfall: Shortfall, budget: Budget) -> tuple[float | None, float | None]:
    """``(more, limit)``: about what the items over budget need (at the cost per item
    judged in full so far, else at the worst case of their calls), and a ``--budget-usd``
    that fits them: what the file has cost, plus that, plus room for one call's worst case
    (each call reserves it before it is sent), rounded up to two significant digits.
    ``(None, None)`` when neither cost is known."""
    worst = budget.refused_usd / budget.skipped if budget.skipped else None
    per_item = shortfall.per_item_usd
    if per_item is not None:
        more = per_item * shortfall.over_budget
        room = worst or 0.0
    elif worst is not None:
        more, room = worst * shortfall.calls_to_redo, 0.0
    else:
        return None, None
    return more, _round_up(budget.spent_usd + more + room)


def shortfall_note(
    shortfall: Shortfall,
    budget: Budget,
    out_path: Path,
    command: Callable[[float | None], str],
) -> str:
    """The note for items over budget: how many, which, what the file cost against its
    budget, about what the rest needs (:func:`suggested_budget`), and ``command(limit)``,
    the review that judges them again (the other failed items too) under a budget of
    ``limit`` (``None``: unknown, the command then says ``X``)."""
    items = shortfall.over_budget
    them = "it" if items == 1 else f"the {items}"
    line = (
        f"{counted(items, 'item')} not judged in full for lack of budget "
        f"({counted(shortfall.calls_not_made, 'call')} not made: SKIPPED, error_kind "
        f"budget): {shown_ids(shortfall.over_budget_ids, items)}. {out_path} has cost "
        f"${budget.spent_usd:.4f} of --budget-usd {budget.limit_usd:g}. "
    )
    more, limit = suggested_budget(shortfall, budget)
    per_item = shortfall.per_item_usd
    worst = budget.refused_usd / budget.skipped if budget.skipped else None
    reserve = "which each call reserves before it is sent"
    if more is None:
        line += (
            "Neither what an item costs nor a call's worst case is known here: give X above "
            f"${budget.spent_usd:.4f}"
        )
    elif per_item is not None:
        line += (
            f"{them.capitalize()} need{'s' if items == 1 else ''} about ${more:.4f} more, at "
            f"${per_item:.4f} an item (what the {counted(shortfall.judged, 'item')} judged "
            "in full cost)"
        )
        if worst is not None:
            line += f", plus room for one call's worst case (${worst:.4f}), {reserve}"
    else:
        line += (
            f"No item was judged in full to price one by; at the worst case {reserve} "
            f"(${worst or 0.0:.4f} a call: its prompt and all of max_tokens at the highest "
            f"rate), {them} need{'s' if items == 1 else ''} up to ${more:.4f} more "
            f"({counted(shortfall.calls_to_redo, 'call')}; shorter answers cost less)"
        )
    if shortfall.failed:
        line += (
            f". {counted(shortfall.failed, 'other item')} had a failed call "
            f"({shown_ids(shortfall.failed_ids, shortfall.failed)}): the same command "
            "judges those again too"
        )
    return line + f". To judge them, raise the budget and retry:\n  {command(limit)}"


def _round_up(value: float) -> float:
    """``value`` rounded up to two significant digits (``0.0337`` -> ``0.034``)."""
    if value <= 0:
        return value
    step = 10.0 ** (math.floor(math.log10(value)) - 1)
    return float(f"{math.ceil(value / step - 1e-9) * step:.2g}")
