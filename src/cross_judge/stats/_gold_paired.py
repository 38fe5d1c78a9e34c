"""When a difference in accuracy against gold is noise: intervals and paired tests.

* :func:`wilson_interval`: Wilson's score interval for one accuracy (a share of ``n``
  labelled items answered right), what every view of a
  :class:`~cross_judge.stats._gold.GoldReport` prints beside an accuracy;
* :class:`GoldComparison`: two rows measured on the *same* gold items (two critics, a critic
  and the consensus, the consensus of two voting methods), compared by the exact McNemar
  test on the items one got right and the other wrong, with the counts each way and an
  Agresti-Min interval for the difference (:mod:`cross_judge.stats._paired`);
* :func:`compare_rows` (``report.compare(a, b)``), :func:`compare_reports`
  (``report.versus(baseline)``) and :func:`pairwise` (``report.pairwise()``, Holm-adjusted
  over the pairs) build them; :func:`comparisons_table` and :func:`accuracy_cell` render
  them for the terminal.

Why paired: both rows are right on most of the same items, so two accuracies side by side
(each with its own interval) say little about their difference; only the items where they
disagree do. Two intervals that overlap do not mean "no difference", and two that do not
overlap are not a test either.

Pure standard library. This module computes no accuracy of its own from verdicts: it reads
the per-item correctness a ``GoldRow`` holds (``row.correct``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import NormalDist
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._paired import holm, mcnemar_exact, mcnemar_mde, paired_proportion_interval

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ._gold import GoldReport, GoldRow

__all__ = [
    "GoldComparison",
    "accuracy_cell",
    "compare_family",
    "compare_reports",
    "compare_rows",
    "comparisons_table",
    "item_keys",
    "pairwise",
    "wilson_interval",
]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson's score interval for the proportion ``successes / n``.

    ``(p + z^2 / 2n +- z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n)`` with ``z`` the
    ``(1 + confidence) / 2`` normal quantile (Wilson 1927; method 3 of Newcombe 1998,
    ``statsmodels``' ``proportion_confint(method="wilson")``). Unlike the Wald interval it
    stays inside ``[0, 1]`` and is not empty at 0 or ``n`` successes: ``0 of n`` gives
    ``(0.0, hi)`` and ``n of n`` ``(lo, 1.0)``, exactly.

    Returns ``None`` when ``n == 0`` (no item: nothing to estimate). Raises
    :class:`ValueError` for a negative count, ``successes > n``, or ``confidence`` outside
    ``(0, 1)``.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if successes < 0 or n < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes!r}, n={n!r}")
    if n == 0:
        return None
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class GoldComparison:
    """Two rows (``baseline`` and ``candidate``, by name) against the same gold items.

    ``n`` counts the labelled items both answered (an item one of them failed on is left
    out, as accuracy leaves it out); ``baseline_accuracy`` and ``candidate_accuracy`` are on
    those ``n`` items, so they can differ from each row's own accuracy when coverage
    differs. ``better`` counts the items the candidate got right and the baseline wrong,
    ``worse`` the other way; only they carry information about the difference.

    ``p_value`` is the two-sided exact McNemar test on them
    (:func:`~cross_judge.stats._paired.mcnemar_exact`, 1.0 when they are 0 and 0);
    ``difference`` is ``candidate_accuracy - baseline_accuracy = (better - worse) / n``
    and ``interval`` its Agresti-Min interval at ``confidence``
    (:func:`~cross_judge.stats._paired.paired_proportion_interval`). ``p_adjusted`` is
    Holm's over the family of comparisons it was made in (:func:`pairwise`), ``None`` for
    a comparison made alone. ``mde`` is the smallest difference a test at level
    ``1 - confidence`` on ``n`` items with this share of discordant items would detect
    with power 0.8 (:func:`~cross_judge.stats._paired.mcnemar_mde`): a difference well
    below it is not evidence either way. Accuracies, difference, interval and ``mde`` are
    ``None`` when ``n == 0``.
    """

    baseline: str
    candidate: str
    n: int
    baseline_accuracy: float | None
    candidate_accuracy: float | None
    difference: float | None
    interval: tuple[float, float] | None
    better: int
    worse: int
    p_value: float
    confidence: float = 0.95
    p_adjusted: float | None = None
    mde: float | None = None

    @property
    def p(self) -> float:
        """The p-value a decision uses: Holm's when the comparison is one of a family,
        else the test's."""
        return self.p_value if self.p_adjusted is None else self.p_adjusted

    def __str__(self) -> str:
        if self.n == 0:
            return (
                f"{self.candidate} vs {self.baseline}: no labelled item answered by both, "
                "nothing to compare"
            )
        assert self.interval is not None
        assert self.difference is not None
        holm_p = "" if self.p_adjusted is None else f" (Holm {_p(self.p_adjusted)})"
        return (
            f"{self.candidate} {_number(self.candidate_accuracy)} vs {self.baseline} "
            f"{_number(self.baseline_accuracy)} on {self.n} gold items both answered: "
            f"{self.better} right only by {self.candidate}, {self.worse} only by "
            f"{self.baseline}; exact McNemar p = {_p(self.p_value)}{holm_p}; difference "
            f"{self.difference:+.3f} [{self.confidence:.0%} interval {self.interval[0]:+.3f}, "
            f"{self.interval[1]:+.3f}]"
        )


def _paired(
    baseline: Sequence[bool | None],
    candidate: Sequence[bool | None],
    names: tuple[str, str],
    confidence: float,
) -> GoldComparison:
    """The comparison of two per-item correctness sequences over the same items (``None``:
    not answered)."""
    n = right_a = right_b = better = worse = 0
    for a, b in zip(baseline, candidate, strict=True):
        if a is None or b is None:
            continue
        n += 1
        right_a += a
        right_b += b
        if b and not a:
            better += 1
        elif a and not b:
            worse += 1
    p_value = mcnemar_exact(better, worse)
    if n == 0:
        return GoldComparison(
            names[0], names[1], 0, None, None, None, None, 0, 0, p_value, confidence
        )
    return GoldComparison(
        baseline=names[0],
        candidate=names[1],
        n=n,
        baseline_accuracy=right_a / n,
        candidate_accuracy=right_b / n,
        difference=(better - worse) / n,
        interval=paired_proportion_interval(better, worse, n, confidence),
        better=better,
        worse=worse,
        p_value=p_value,
        confidence=confidence,
        mde=mcnemar_mde((better + worse) / n, n, alpha=1.0 - confidence),
    )


def compare_rows(
    report: GoldReport, baseline: str, candidate: str, *, confidence: float | None = None
) -> GoldComparison:
    """Row ``candidate`` against row ``baseline`` of ``report`` (critics, or a critic and
    ``"consensus"``) on the labelled items both answered; see :class:`GoldComparison`.
    ``confidence`` defaults to the report's (``report.confidence``).

    Raises:
        KeyError: no row of that name (the message lists the rows).
        ConfigError: ``baseline == candidate``; a report made without per-item results.
    """
    if baseline == candidate:
        raise ConfigError(f"compare two different rows, got {baseline!r} twice")
    first, second = report[baseline], report[candidate]
    _check_items(report, first, second)
    level = report.confidence if confidence is None else confidence
    return _paired(first.correct, second.correct, (baseline, candidate), level)


def compare_reports(
    candidate: GoldReport,
    baseline: GoldReport,
    *,
    row: str,
    baseline_row: str | None = None,
    names: tuple[str, str] | None = None,
    confidence: float | None = None,
) -> GoldComparison:
    """Row ``row`` of ``candidate`` against row ``baseline_row`` (default ``row``) of
    ``baseline``, two reports of the same gold (e.g. one batch voted two ways), paired by
    item id on the items labelled in both and answered by both rows.

    ``names`` are the (baseline, candidate) names the comparison shows; by default the row
    names, suffixed ``" (baseline)"`` and ``" (candidate)"`` when they are the same.
    ``confidence`` defaults to the candidate report's.

    Raises:
        KeyError: no such row in a report.
        ConfigError: no item labelled in both reports; an item the two reports give
            different gold labels (not the same gold); a report made without per-item
            results.
    """
    other = baseline_row if baseline_row is not None else row
    mine, theirs = candidate[row], baseline[other]
    _check_items(candidate, mine)
    _check_items(baseline, theirs)
    index = {item: position for position, item in enumerate(baseline.item_ids)}
    first: list[bool | None] = []
    second: list[bool | None] = []
    for position, item in enumerate(candidate.item_ids):
        at = index.get(item)
        if at is None:
            continue
        if candidate.gold[position] != baseline.gold[at]:
            raise ConfigError(
                f"item {item!r} has gold label {baseline.gold[at]!r} in the baseline report "
                f"and {candidate.gold[position]!r} in this one: compare reports made against "
                "the same gold labels (and the same items, in the same order, when the "
                "reports were made without item ids)"
            )
        first.append(theirs.correct[at])
        second.append(mine.correct[position])
    if not first:
        raise ConfigError(
            "the two reports share no labelled item: compare reports of the same items "
            "against the same gold"
        )
    if names is None:
        names = (other, row) if other != row else (f"{other} (baseline)", f"{row} (candidate)")
    level = candidate.confidence if confidence is None else confidence
    return _paired(first, second, names, level)


def pairwise(
    report: GoldReport,
    rows: Sequence[str] | None = None,
    *,
    confidence: float | None = None,
) -> tuple[GoldComparison, ...]:
    """Every pair of ``rows`` (default every row: the critics, then the consensus), each
    compared as :func:`compare_rows` with the earlier row as the baseline, with Holm's
    adjustment over the pairs in ``p_adjusted``. Fewer than two rows give ``()``.

    The number of pairs grows as ``len(rows) ** 2 / 2``: pass the rows to compare for a
    large crowd.

    Raises:
        KeyError: a name in ``rows`` that is no row.
        ConfigError: a name given twice.
    """
    names = [row.name for row in report.rows] if rows is None else list(rows)
    if len(set(names)) != len(names):
        raise ConfigError(f"rows must be different, got {names!r}")
    for name in names:
        report[name]  # a KeyError naming the rows, before any pair is compared
    return compare_family(report, list(combinations(names, 2)), confidence=confidence)


def compare_family(
    report: GoldReport,
    pairs: Sequence[tuple[str, str]],
    *,
    confidence: float | None = None,
) -> tuple[GoldComparison, ...]:
    """Each ``(baseline, candidate)`` pair of rows as :func:`compare_rows`, with Holm's
    adjustment over the family in ``p_adjusted``; ``()`` for no pair.

    Raises:
        KeyError: a name that is no row.
        ConfigError: a pair of one row twice.
    """
    plain = [compare_rows(report, a, b, confidence=confidence) for a, b in pairs]
    adjusted = holm([c.p_value for c in plain])
    return tuple(_with_p_adjusted(c, p) for c, p in zip(plain, adjusted, strict=True))


def _with_p_adjusted(comparison: GoldComparison, p_adjusted: float) -> GoldComparison:
    from dataclasses import replace

    return replace(comparison, p_adjusted=p_adjusted)


def _check_items(report: GoldReport, *rows: GoldRow) -> None:
    for row in rows:
        if len(row.correct) != report.n_gold or len(report.item_ids) != report.n_gold:
            raise ConfigError(
                f"row {row.name!r} holds no per-item results (a GoldReport built by hand?): "
                "make the report with gold_metrics or batch.against(gold)"
            )


# --- views ---------------------------------------------------------------------------------


def accuracy_cell(accuracy: float | None, interval: tuple[float, float] | None) -> str:
    """An accuracy with its interval, ``"0.745 [0.695, 0.790]"``; ``"n/a"`` when undefined."""
    if accuracy is None:
        return "n/a"
    if interval is None:
        return _number(accuracy)
    return f"{accuracy:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def comparisons_table(
    comparisons: Sequence[GoldComparison], *, title: str | None = None
) -> RenderableType:
    """A ``rich`` table of paired comparisons, one per line (``candidate vs baseline``):
    the items both answered, the difference in accuracy with its interval, the items the
    candidate alone got right (``wins``) and the baseline alone (``losses``), the exact
    McNemar p and, for a family, Holm's. The caption says what each is."""
    from rich import box
    from rich.table import Table

    family = any(c.p_adjusted is not None for c in comparisons)
    level = comparisons[0].confidence if comparisons else 0.95
    caption = (
        "A vs B on the gold items both answered: difference = A's accuracy - B's "
        f"[{level:.0%} Agresti-Min interval]; wins: items only A got right, losses: only B; "
        "p: exact McNemar test on wins vs losses"
        + (f"; Holm: p adjusted over the {len(comparisons)} pairs" if family else "")
    )
    table = Table(
        box=box.SIMPLE_HEAD,
        title=title or "paired comparisons against gold",
        title_justify="left",
        caption=caption,
    )
    table.add_column("A vs B", min_width=10)
    for column in ("items", "difference", "wins", "losses", "p"):
        table.add_column(column, justify="right", no_wrap=True)
    if family:
        table.add_column("Holm", justify="right", no_wrap=True)
    for c in comparisons:
        cells = [
            f"{c.candidate} vs {c.baseline}",
            str(c.n),
            "n/a"
            if c.difference is None or c.interval is None
            else f"{c.difference:+.3f} [{c.interval[0]:+.3f}, {c.interval[1]:+.3f}]",
            str(c.better),
            str(c.worse),
            _p(c.p_value),
        ]
        if family:
            cells.append("n/a" if c.p_adjusted is None else _p(c.p_adjusted))
        table.add_row(*cells)
    return table


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _p(value: float) -> str:
    """A p-value with three significant digits, ``"<0.001"`` below a thousandth."""
    return "<0.001" if value < 0.001 else f"{value:.3g}"


def item_keys(item_ids: Sequence[Hashable] | None, n_items: int) -> list[Hashable]:
    """``item_ids`` as a list (checked: one per item, no repeat), or the item indexes.

    Raises:
        ConfigError: not one id per item, or an id given twice.
    """
    if item_ids is None:
        return list(range(n_items))
    ids = list(item_ids)
    if len(ids) != n_items:
        raise ConfigError(f"item_ids has {len(ids)} ids for {n_items} items.")
    seen: set[Hashable] = set()
    for item in ids:
        if item in seen:
            raise ConfigError(f"item_ids must be unique; {item!r} is given twice.")
        seen.add(item)
    return ids
