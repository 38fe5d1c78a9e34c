"""How good each critic is against gold labels, and how many independent votes a panel is worth.

Works on plain data (:mod:`cross_judge.reliability` converts a ``BatchResult`` or a results file):

- ``labels``: an items x critics matrix of ``str | None`` (``None`` = no valid verdict:
  missing, ERROR, PARSE_FAIL, SKIPPED);
- ``gold``: per item ``str | None`` (``None`` = unlabelled; partial gold is fine), aligned
  with the items or as ``{item index: label}``;
- ``confidences``: an items x critics matrix of floats in ``[0, 1]`` (``None`` = no stated
  confidence: a failed call, or a vote whose answer gave none, ``confidence_stated=False``).

:func:`gold_metrics` gives per critic, and for the panel's consensus, coverage, accuracy,
Cohen's kappa, the confusion matrix, and with confidences the Brier score, the expected
calibration error and a reliability-diagram table; with ``ci=`` percentile bootstrap
intervals for accuracy and kappa. :func:`bootstrap_ci` is the same bootstrap for any
statistic over items (e.g. Krippendorff's alpha of a batch). :func:`effective_votes` turns
the correlation of critics' errors into the number of independent votes the panel is
worth. :func:`check_gold` and :func:`unknown_ids` validate gold before any of it.

Pure standard library and deterministic: the bootstrap draws from ``random.Random(seed)``.
It deliberately does not fit weights, calibrate confidences or estimate labels without
gold (Dawid-Skene); those live in their own modules.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..results import plain_text
from ._agreement import cohen_kappa
from ._gold_file import jury_shown_note, read_gold
from ._gold_paired import accuracy_cell, item_keys, wilson_interval
from ._quantile import linear_quantile

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ._gold_paired import GoldComparison

__all__ = [
    "CONSENSUS",
    "EffectiveVotes",
    "GoldReport",
    "GoldRow",
    "ReliabilityBin",
    "bootstrap_ci",
    "check_gold",
    "effective_votes",
    "gold_metrics",
    "id_values",
    "load_gold",
    "unknown_ids",
]

CONSENSUS = "consensus"
"""Name of the row :func:`gold_metrics` adds for the panel's consensus."""

_EXAMPLES = 5

PAIRS_SHOWN = 4
"""Up to this many rows (critics and the consensus) the summary compares every pair; with
more, each critic against the consensus (up to :data:`CONSENSUS_PAIRS_SHOWN` critics)."""

CONSENSUS_PAIRS_SHOWN = 20
"""Up to this many critics the summary compares each with the consensus."""


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of a reliability diagram: votes whose stated confidence lies in ``[lo, hi)``
    (the last bin also holds ``1.0``). ``mean_confidence`` and ``accuracy`` are ``None`` for
    an empty bin; ``accuracy_interval`` is the accuracy's Wilson interval at the report's
    ``confidence`` (``None`` for an empty bin)."""

    lo: float
    hi: float
    count: int
    mean_confidence: float | None
    accuracy: float | None
    accuracy_interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class GoldRow:
    """One critic (or the consensus) measured against gold.

    ``n_gold`` counts labelled items, ``n_answered`` those of them with a valid verdict;
    ``coverage = n_answered / n_gold``. ``accuracy``, ``kappa`` and ``confusion``
    (``{gold: {answered: count}}``, every report label on both axes) use the answered
    labelled items only, so a critic is not marked wrong for a failed call; read accuracy
    next to coverage. ``brier``, ``ece`` and ``reliability`` use only the ``n_stated``
    answered labelled items whose vote stated a confidence; all three are ``None`` when
    there is none (no confidences given, always for the consensus, or a critic whose
    answers never stated one), and ``n_stated`` is ``None`` without confidences.
    ``*_ci`` are ``None`` without ``ci=``. Every statistic is ``None`` when undefined
    (nothing to measure; kappa with no room for chance disagreement).

    ``n_correct`` counts the answered labelled items it got right (``accuracy =
    n_correct / n_answered``), and ``accuracy_interval`` is Wilson's score interval for the
    accuracy at the report's ``confidence`` (``None`` with nothing answered): it needs no
    resampling and is what every view prints beside an accuracy. ``correct`` is, per
    labelled item in the order of the report's ``item_ids``, ``True`` (right), ``False``
    (wrong) or ``None`` (no valid verdict): what the paired comparisons
    (:meth:`GoldReport.compare`) read.
    """

    name: str
    n_gold: int
    n_answered: int
    coverage: float | None
    accuracy: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]
    brier: float | None = None
    ece: float | None = None
    reliability: tuple[ReliabilityBin, ...] | None = None
    accuracy_ci: tuple[float, float] | None = None
    kappa_ci: tuple[float, float] | None = None
    n_stated: int | None = None
    n_correct: int = 0
    accuracy_interval: tuple[float, float] | None = None
    correct: tuple[bool | None, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class GoldReport:
    """:func:`gold_metrics`'s result: one :class:`GoldRow` per critic, plus one for the
    consensus when it was given. ``report["name"]`` looks a row up by name.
    ``n_jury_shown``: how many of the gold labels were made with the jury's answers shown
    (a labels file's ``"jury_shown": true``, read by ``batch.against(path)``); the summary
    says so, since such labels lean towards the jury and flatter the critics that agree
    with it.

    ``confidence`` is the level of every row's ``accuracy_interval`` (``ci`` when given,
    else 0.95) and of the paired comparisons' intervals. ``item_ids`` are the labelled
    items (their ids, or their indexes among the items when the report was made without
    ids) and ``gold`` their gold labels, in the order of each row's ``correct``.

    Differences between rows are read with a paired test on the same items, never by
    comparing two accuracies or their intervals: :meth:`compare` (two rows),
    :meth:`pairwise` (every pair, Holm-adjusted), :meth:`versus` (the same row of two
    reports of one gold, e.g. one batch voted two ways)."""

    critics: tuple[GoldRow, ...]
    consensus: GoldRow | None
    n_items: int
    n_gold: int
    labels: tuple[str, ...]
    bins: int
    ci: float | None
    n_boot: int
    n_jury_shown: int = 0
    confidence: float = 0.95
    item_ids: tuple[Hashable, ...] = field(default=(), repr=False, compare=False)
    gold: tuple[str, ...] = field(default=(), repr=False)

    @property
    def rows(self) -> tuple[GoldRow, ...]:
        """The critics' rows, then the consensus row if any."""
        return self.critics if self.consensus is None else (*self.critics, self.consensus)

    def __getitem__(self, name: str) -> GoldRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"No row {name!r}; rows are {[row.name for row in self.rows]!r}.")

    def compare(self, baseline: str, candidate: str) -> GoldComparison:
        """Row ``candidate`` against row ``baseline`` on the labelled items both answered:
        the items right only by each, the exact McNemar p-value and an interval for the
        difference in accuracy
        (:class:`~cross_judge.stats._gold_paired.GoldComparison`).
        ``report.compare("gpt-judge", "consensus")``: is the panel better than its best
        critic, or is the difference noise?

        Raises:
            KeyError: no row of that name.
            ConfigError: the same row twice.
        """
        from ._gold_paired import compare_rows

        return compare_rows(self, baseline, candidate)

    def pairwise(self, rows: Sequence[str] | None = None) -> tuple[GoldComparison, ...]:
        """Every pair of ``rows`` (default all: the critics, then the consensus) as
        :meth:`compare`, the earlier row the baseline, with Holm's adjustment over the
        pairs (``p_adjusted``). Pass the rows to compare for a large crowd: the pairs grow
        as the square of the rows.

        Raises:
            KeyError: a name that is no row.
            ConfigError: a name given twice.
        """
        from ._gold_paired import pairwise

        return pairwise(self, rows)

    def versus(
        self,
        baseline: GoldReport,
        *,
        row: str = CONSENSUS,
        baseline_row: str | None = None,
        names: tuple[str, str] | None = None,
    ) -> GoldComparison:
        """This report's ``row`` (the candidate; default the consensus) against
        ``baseline``'s ``baseline_row`` (default the same name), paired by item on the
        items labelled in both and answered by both. As ``candidate.compare(baseline)``
        for runs: ``batch.revote("dawid_skene").against(gold).versus(batch.against(gold),
        names=("majority", "dawid_skene"))`` tests whether Dawid-Skene's consensus beats
        the stored one on these labels. ``names``: (baseline, candidate) as shown.

        Raises:
            KeyError: no such row.
            ConfigError: no labelled item in common, or an item the reports give different
                gold labels.
        """
        from ._gold_paired import compare_reports

        return compare_reports(self, baseline, row=row, baseline_row=baseline_row, names=names)

    def summary(self, *, detailed: bool = False) -> RenderableType:
        """A ``rich`` table: one row per critic then the consensus, with coverage, accuracy
        (with its Wilson interval at ``confidence``) and kappa (with its bootstrap interval
        when ``ci`` was given), Brier and ECE (columns shown only when confidences were
        given); then the paired comparisons of :meth:`pairwise` (exact McNemar, Holm) for
        up to :data:`PAIRS_SHOWN` rows, else each critic against the consensus for up to
        :data:`CONSENSUS_PAIRS_SHOWN` critics (Holm over those). A critic that answered
        labelled items without ever stating a confidence shows ``-`` there; when some votes
        stated none, the caption says how many of each critic's did (``0 of N`` for such a
        critic).
        ``detailed`` adds each row's confusion matrix and reliability table (its non-empty
        bins). ``print(report)`` gives the summary as plain text."""
        from rich import box
        from rich.console import Group
        from rich.table import Table

        show_calibration = any(row.n_stated is not None for row in self.rows)
        title = f"against gold ({self.n_gold} of {self.n_items} items labelled)"
        notes = [
            f"accuracy [{self.confidence:.0%} Wilson score interval]"
            + (
                ""
                if self.ci is None
                else f"; Cohen's kappa [{self.ci:.0%} bootstrap interval, {self.n_boot} "
                "resamples of items]"
            )
        ]
        comparisons = self.comparisons()
        if not comparisons and len(self.rows) > PAIRS_SHOWN:
            notes.append(
                f"{len(self.rows)} rows: no paired comparison shown; report.compare(a, b) or "
                "report.pairwise(rows) tests the ones you mean to compare"
            )
        unstated = [
            f"{row.name} {row.n_stated} of {row.n_answered}"
            for row in self.rows
            if row.n_stated is not None and row.n_stated < row.n_answered
        ]
        if unstated:
            notes.append(
                "Brier and ECE count only the votes that stated a confidence: "
                + ", ".join(unstated)
            )
        shown = jury_shown_note(self.n_jury_shown, self.n_gold)
        if shown is not None:
            notes.append(shown)
        caption = "\n".join(notes) or None
        table = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", caption=caption)
        columns = ["", "gold", "coverage", "accuracy", "Cohen's kappa"]
        if show_calibration:
            columns += ["Brier", "ECE"]
        for column in columns:
            table.add_column(
                column, justify="left" if column == "" else "right", no_wrap=column == "accuracy"
            )
        for row in self.rows:
            cells = [
                row.name,
                str(row.n_gold),
                _rate(row.coverage),
                accuracy_cell(row.accuracy, row.accuracy_interval),
                _with_ci(row.kappa, row.kappa_ci),
            ]
            if show_calibration:
                cells += [_calibration_cell(row, row.brier), _calibration_cell(row, row.ece)]
            table.add_row(*cells)
        parts: list[RenderableType] = [table]
        if comparisons:
            from ._gold_paired import comparisons_table

            parts.append(
                comparisons_table(comparisons, title="paired comparisons on the same gold items")
            )
        if not detailed:
            return table if len(parts) == 1 else Group(*parts)
        for row in self.rows:
            confusion = Table(
                box=box.SIMPLE_HEAD,
                title=f"{row.name}: confusion",
                title_justify="left",
            )
            confusion.add_column("gold \\ answered")
            for label in self.labels:
                confusion.add_column(label, justify="right")
            for label in self.labels:
                counts = row.confusion[label]
                confusion.add_row(label, *(str(counts[answered]) for answered in self.labels))
            parts.append(confusion)
            if row.reliability is not None:
                diagram = Table(
                    box=box.SIMPLE_HEAD, title=f"{row.name}: reliability", title_justify="left"
                )
                for column in ("confidence", "votes", "mean confidence", "accuracy"):
                    diagram.add_column(column, justify="right")
                for b in row.reliability:
                    if not b.count:
                        continue
                    diagram.add_row(
                        f"{b.lo:.2f}-{b.hi:.2f}",
                        str(b.count),
                        _number(b.mean_confidence),
                        accuracy_cell(b.accuracy, b.accuracy_interval),
                    )
                parts.append(diagram)
        return Group(*parts)

    def comparisons(self) -> tuple[GoldComparison, ...]:
        """The paired comparisons every view of the report shows: :meth:`pairwise` up to
        :data:`PAIRS_SHOWN` rows, else each critic against the consensus (Holm over
        those) up to :data:`CONSENSUS_PAIRS_SHOWN` critics; ``()`` for fewer than two
        rows, more than that, or a report without per-item results."""
        from ._gold_paired import compare_family

        rows = self.rows
        if len(rows) < 2 or len(self.item_ids) != self.n_gold:
            return ()
        if any(len(row.correct) != self.n_gold for row in rows):
            return ()
        if len(rows) <= PAIRS_SHOWN:
            return self.pairwise()
        if self.consensus is not None and len(self.critics) <= CONSENSUS_PAIRS_SHOWN:
            return compare_family(self, [(row.name, CONSENSUS) for row in self.critics])
        return ()

    def __rich__(self) -> RenderableType:
        return self.summary()

    def __str__(self) -> str:
        return plain_text(self.summary())


@dataclass(frozen=True)
class EffectiveVotes:
    """:func:`effective_votes`' result.

    ``pairwise[(i, j)]`` (``i < j``, critic column indexes) is the phi coefficient of the
    two critics' error indicators, ``None`` when undefined. ``mean_error_correlation`` is
    the mean of the defined ones (``None`` if none); ``effective`` the number of
    independent votes the panel is worth (``None`` when undefined). ``reference`` says what
    an error was measured against: ``"gold"`` labels (or any reference the caller passed),
    ``"consensus"``, or ``"model"`` (no reference: the correlation the correlated-errors
    Dawid-Skene model implies, see :meth:`cross_judge.reliability.effective_votes`).
    """

    n_critics: int
    mean_error_correlation: float | None
    pairwise: dict[tuple[int, int], float | None]
    effective: float | None
    reference: Literal["gold", "consensus", "model"] = "gold"


# --- validation ----------------------------------------------------------------------------


def check_gold(gold_labels: Iterable[object], vocabulary: Collection[str] | None = None) -> None:
    """Raise :class:`ConfigError` unless every gold label is ``None`` or a string in
    ``vocabulary`` (when given: the labels any critic may answer).

    The message names the offending labels (up to five) and the vocabulary. An empty
    ``gold_labels`` passes.
    """
    given = list(gold_labels)
    not_text = list(
        dict.fromkeys(repr(g) for g in given if g is not None and not isinstance(g, str))
    )
    if not_text:
        raise ConfigError(
            f"Gold labels must be strings (or null for unlabelled), got {_examples(not_text)}; "
            "quote them in the gold file as the critics' labels are written."
        )
    if vocabulary is None:
        return
    allowed = set(vocabulary)
    outside = list(dict.fromkeys(g for g in given if g is not None and g not in allowed))
    if outside:
        raise ConfigError(
            f"Gold label(s) {_examples([_spelled(str(g), allowed) for g in outside])} not in the "
            f"vocabulary {sorted(allowed)!r}; fix the gold file or add the label(s) to the "
            "critics' labels (labels are compared as written: 'fail' is not 'FAIL')."
        )


def _spelled(label: str, allowed: Collection[str]) -> str:
    """``'fail' (did you mean 'FAIL'?)`` when ``label`` differs from an allowed label only
    in case or surrounding spaces; else ``'fail'``."""
    key = label.strip().casefold()
    near = sorted(a for a in allowed if a.strip().casefold() == key)
    return f"{label!r} (did you mean {near[0]!r}?)" if near else repr(label)


def unknown_ids(gold_ids: Iterable[Hashable], item_ids: Iterable[Hashable]) -> None:
    """Raise :class:`ConfigError` if any gold id is not among ``item_ids``.

    The message counts the unknown ids and shows up to five, in first-seen order. Returns
    ``None`` when every gold id is known (empty gold included).
    """
    known = set(item_ids)
    unknown = list(dict.fromkeys(g for g in gold_ids if g not in known))
    if unknown:
        raise ConfigError(
            f"{len(unknown)} gold id(s) are not among the {len(known)} items: "
            f"{_examples([repr(g) for g in unknown])}; check that the gold file belongs to "
            "these results (ids are the items' query ids)."
        )


# --- gold metrics --------------------------------------------------------------------------


def gold_metrics(
    labels: Sequence[Sequence[str | None]],
    critics: Sequence[str],
    gold: Sequence[str | None] | Mapping[int, str | None],
    *,
    confidences: Sequence[Sequence[float | None]] | None = None,
    consensus: Sequence[str | None] | None = None,
    vocabulary: Collection[str] | None = None,
    bins: int = 10,
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    item_ids: Sequence[Hashable] | None = None,
) -> GoldReport:
    """Per critic (and for ``consensus``, as a last row named ``"consensus"``): coverage,
    accuracy, Cohen's kappa and the confusion matrix against ``gold``; with
    ``confidences``, calibration.

    Only labelled items count (``gold`` ``None`` or absent from a mapping = unlabelled).
    Accuracy, kappa and the confusion matrix use the labelled items a row gave a valid
    verdict on; coverage is their share of the labelled items.

    Calibration uses the votes with a stated confidence ``c`` in the answered label (a
    ``None`` confidence, a vote that stated none, still counts for accuracy, kappa,
    coverage and the confusion matrix): ``brier`` is ``mean((c - correct) ** 2)`` (the
    one-vs-rest binary Brier score, 0 is best, 1 worst); ``ece`` is
    ``sum_b (n_b / n) * |accuracy_b - mean confidence_b|`` over ``bins`` equal-width bins
    of ``[0, 1]`` (``[lo, hi)``, the last closed, each edge the float nearest ``b / bins``
    as :func:`~cross_judge.stats._confidence_calibration.calibration_bin` says: 0.29 is in
    bin 29 of 100); ``reliability`` lists every bin, empty
    ones included; ``n_stated`` counts those votes. A critic none of whose answered
    labelled votes stated a confidence has ``n_stated=0`` and the other three ``None``.

    ``ci=0.95`` adds percentile bootstrap intervals for accuracy and kappa: the labelled
    items are resampled with replacement ``n_boot`` times (the same resamples for every
    row, drawn as :func:`bootstrap_ci` draws them with ``seed``); resamples where a
    statistic is undefined are skipped. With ``ci=None`` nothing is resampled. Time is
    O(n_boot x labelled items x rows), pure Python: under 0.1 s for 200 labelled items and
    6 rows at ``n_boot=1000``, about 0.6 s for 2,000 and 6 s for 20,000.

    Every accuracy gets Wilson's score interval (``accuracy_interval``, at ``ci`` when
    given, else 95%: closed form, no resampling), and every row keeps which labelled items
    it got right (``correct``), so two rows, or the same row of two reports, can be
    compared on the same items with a paired test (:meth:`GoldReport.compare`,
    :meth:`GoldReport.pairwise`, :meth:`GoldReport.versus`). ``item_ids`` (one per item,
    unique) name the items for :meth:`GoldReport.versus`; by default their indexes.

    ``labels`` is items x critics; ``vocabulary``, when given, is checked against gold
    with :func:`check_gold` and fixes the order of ``report.labels`` (other observed labels
    follow, sorted); otherwise the labels are the sorted union of gold and answers.

    Raises:
        ConfigError: rows not one label per critic; repeated critic names or a critic
            named ``"consensus"`` alongside ``consensus``; ``gold``, ``consensus`` or
            ``confidences`` not aligned with the items; a gold mapping key that is not an
            item index; a gold label that is not a string or is outside ``vocabulary``; a
            confidence that is not a number in ``[0, 1]``; ``bins < 1``; ``ci`` not strictly
            between 0 and 1; ``n_boot < 1``; ``item_ids`` not one unique id per item.
    """
    n_items = len(labels)
    n_critics = len(critics)
    if len(set(critics)) != n_critics:
        raise ConfigError(f"Critic names must be unique, got {list(critics)!r}.")
    if consensus is not None and CONSENSUS in critics:
        raise ConfigError(
            f"A critic is named {CONSENSUS!r}, which is the consensus row's name; rename it."
        )
    for index, row in enumerate(labels):
        if len(row) != n_critics:
            raise ConfigError(
                f"Item {index} has {len(row)} labels for {n_critics} critics; labels must be "
                "items x critics (transpose BatchResult.labels_matrix())."
            )
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ConfigError(f"bins must be a positive integer, got {bins!r}.")
    if ci is not None:
        _check_ci(ci)
    _check_n_boot(n_boot)
    keys = item_keys(item_ids, n_items)
    confidence = 0.95 if ci is None else ci
    gold_list = _aligned_gold(gold, n_items)
    check_gold(gold_list, vocabulary)
    if consensus is not None and len(consensus) != n_items:
        raise ConfigError(f"consensus has {len(consensus)} entries for {n_items} items.")
    if confidences is not None:
        _check_confidences(confidences, n_items, n_critics)

    columns: list[tuple[str, list[str | None]]] = [
        (name, [row[j] for row in labels]) for j, name in enumerate(critics)
    ]
    if consensus is not None:
        columns.append((CONSENSUS, list(consensus)))
    report_labels = _label_order(gold_list, columns, vocabulary)
    labelled = [i for i, g in enumerate(gold_list) if g is not None]
    if item_ids is not None:  # resampled in the order of the ids, not of a file's lines
        labelled.sort(key=lambda i: str(keys[i]))
    positions = {label: position for position, label in enumerate(report_labels)}
    labelled_gold = [label for label in (gold_list[i] for i in labelled) if label is not None]
    codes_by_row = [
        _pair_codes(labelled_gold, [answers[i] for i in labelled], positions)
        for _, answers in columns
    ]

    intervals: list[tuple[tuple[float, float] | None, tuple[float, float] | None]]
    if ci is None:
        intervals = [(None, None)] * len(columns)
    else:
        intervals = _bootstrap_rows(
            codes_by_row, len(report_labels), ci=ci, n_boot=n_boot, seed=seed
        )

    rows: list[GoldRow] = []
    for j, ((name, answers), codes) in enumerate(zip(columns, codes_by_row, strict=True)):
        counts = Counter(codes)
        accuracy, _ = _accuracy_kappa(counts, len(report_labels))
        confusion = {g: dict.fromkeys(report_labels, 0) for g in report_labels}
        n_answered = n_correct = 0
        for code, count in counts.items():
            g, a = divmod(code, len(report_labels) + 1)
            if a < len(report_labels):
                confusion[report_labels[g]][report_labels[a]] += count
                n_answered += count
                n_correct += count if g == a else 0
        calibration: tuple[float | None, float | None, tuple[ReliabilityBin, ...] | None]
        calibration = (None, None, None)
        n_stated: int | None = None
        if confidences is not None and j < n_critics:
            scored = [
                (conf, answers[i] == gold_list[i])
                for i in labelled
                if answers[i] is not None and (conf := confidences[i][j]) is not None
            ]
            calibration = _calibration(scored, bins, confidence)
            n_stated = len(scored)
        rows.append(
            GoldRow(
                name=name,
                n_gold=len(labelled),
                n_answered=n_answered,
                coverage=n_answered / len(labelled) if labelled else None,
                accuracy=accuracy,
                kappa=cohen_kappa([answers[i] for i in labelled], [gold_list[i] for i in labelled]),
                confusion=confusion,
                brier=calibration[0],
                ece=calibration[1],
                reliability=calibration[2],
                accuracy_ci=intervals[j][0],
                kappa_ci=intervals[j][1],
                n_stated=n_stated,
                n_correct=n_correct,
                accuracy_interval=wilson_interval(n_correct, n_answered, confidence),
                correct=tuple(
                    None if answers[i] is None else answers[i] == gold_list[i] for i in labelled
                ),
            )
        )
    return GoldReport(
        critics=tuple(rows[:n_critics]),
        consensus=rows[n_critics] if consensus is not None else None,
        n_items=n_items,
        n_gold=len(labelled),
        labels=report_labels,
        bins=bins,
        ci=ci,
        n_boot=n_boot,
        confidence=confidence,
        item_ids=tuple(keys[i] for i in labelled),
        gold=tuple(labelled_gold),
    )


def _aligned_gold(
    gold: Sequence[str | None] | Mapping[int, str | None], n_items: int
) -> list[str | None]:
    if isinstance(gold, Mapping):
        keys = list(gold)
        bad = [k for k in keys if isinstance(k, bool) or not isinstance(k, int)]
        if bad:
            raise ConfigError(
                "Gold mapping keys must be item indexes (int), got "
                f"{_examples([repr(k) for k in bad])}; map query ids to indexes first."
            )
        unknown_ids(keys, range(n_items))
        aligned: list[str | None] = [None] * n_items
        for index, label in gold.items():
            aligned[index] = label
        return aligned
    if isinstance(gold, str):
        raise ConfigError("gold must be one label per item or {item index: label}, not a string.")
    if len(gold) != n_items:
        raise ConfigError(
            f"gold has {len(gold)} labels for {n_items} items; use None for unlabelled items "
            "or pass {item index: label}."
        )
    return list(gold)


def _check_confidences(
    confidences: Sequence[Sequence[float | None]], n_items: int, n_critics: int
) -> None:
    if len(confidences) != n_items:
        raise ConfigError(f"confidences has {len(confidences)} rows for {n_items} items.")
    for i, row in enumerate(confidences):
        if len(row) != n_critics:
            raise ConfigError(f"confidences row {i} has {len(row)} values for {n_critics} critics.")
        for j, value in enumerate(row):
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0.0 <= value <= 1.0
            ):
                raise ConfigError(
                    f"Confidence {value!r} (item {i}, critic {j}) is not a number in [0, 1]; "
                    "use None where a verdict stated none."
                )


def _label_order(
    gold: Sequence[str | None],
    columns: Sequence[tuple[str, Sequence[str | None]]],
    vocabulary: Collection[str] | None,
) -> tuple[str, ...]:
    observed = {g for g in gold if g is not None}
    for _, answers in columns:
        observed.update(a for a in answers if a is not None)
    if vocabulary is None:
        return tuple(sorted(observed))
    first = list(dict.fromkeys(vocabulary))
    return (*first, *sorted(observed - set(first)))


def _pair_codes(
    gold: Sequence[str], answers: Sequence[str | None], index: Mapping[str, int]
) -> list[int]:
    """Each labelled item as one small int, ``gold position * (K + 1) + answered position``
    with ``K = len(index)`` standing for no valid verdict: a bootstrap resample then costs
    one ``Counter`` of ints per row (about twice as fast as counting tuples of labels)."""
    none = len(index)
    width = none + 1
    return [
        index[g] * width + (none if a is None else index[a])
        for g, a in zip(gold, answers, strict=True)
    ]


def _accuracy_kappa(counts: Mapping[int, int], n_labels: int) -> tuple[float | None, float | None]:
    """Accuracy and unweighted Cohen's kappa from counts of :func:`_pair_codes` codes.

    The same arithmetic as :func:`cross_judge.agreement.cohen_kappa` (integer sums, one
    correctly rounded division), so the numbers agree exactly.
    """
    n = agree = 0
    by_gold = [0] * n_labels
    by_answer = [0] * n_labels
    for code, count in counts.items():
        g, a = divmod(code, n_labels + 1)
        if a == n_labels:
            continue
        n += count
        if g == a:
            agree += count
        by_gold[g] += count
        by_answer[a] += count
    if n == 0:
        return None, None
    chance = sum(x * y for x, y in zip(by_gold, by_answer, strict=True))  # n**2 * p_e
    kappa = None if chance == n * n else (n * agree - chance) / (n * n - chance)
    return agree / n, kappa


def _calibration(
    scored: Sequence[tuple[float, bool]], bins: int, confidence: float = 0.95
) -> tuple[float | None, float | None, tuple[ReliabilityBin, ...] | None]:
    """Brier score, ECE and the reliability table of (confidence, correct) votes; all
    three ``None`` without any vote."""
    from ._confidence_calibration import calibration_bin, expected_calibration_error

    if not scored:
        return None, None, None
    los = [b / bins for b in range(bins)]
    members: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for conf, correct in scored:  # the bins of expected_calibration_error, edges b / bins
        members[calibration_bin(conf, bins)].append((conf, correct))
    table = tuple(
        ReliabilityBin(
            lo=los[b],
            hi=(b + 1) / bins,
            count=len(votes),
            mean_confidence=math.fsum(c for c, _ in votes) / len(votes) if votes else None,
            accuracy=sum(ok for _, ok in votes) / len(votes) if votes else None,
            accuracy_interval=wilson_interval(sum(ok for _, ok in votes), len(votes), confidence),
        )
        for b, votes in enumerate(members)
    )
    n = len(scored)
    brier = math.fsum((conf - correct) ** 2 for conf, correct in scored) / n
    ece = expected_calibration_error([c for c, _ in scored], [ok for _, ok in scored], bins)
    return brier, ece, table


# --- bootstrap -----------------------------------------------------------------------------


def bootstrap_ci(
    statistic: Callable[[list[int]], float | None],
    n_items: int,
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``statistic`` over items.

    Each of ``n_boot`` resamples draws ``n_items`` item indexes in ``range(n_items)`` with
    replacement (``random.Random(seed)``, so the same seed gives the same interval) and
    calls ``statistic(indexes)``; ``None`` results (statistic undefined on that resample)
    are skipped. Returns the ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles of the rest
    (linear interpolation, as numpy's default), or ``None`` when ``n_items == 0`` or every
    resample was undefined.

    Raises:
        ConfigError: ``ci`` not strictly between 0 and 1, ``n_boot < 1`` or
            ``n_items < 0``.
    """
    _check_ci(ci)
    _check_n_boot(n_boot)
    if n_items < 0:
        raise ConfigError(f"n_items must be >= 0, got {n_items}.")
    if n_items == 0:
        return None
    values = [v for idx in _resamples(n_items, n_boot, seed) if (v := statistic(idx)) is not None]
    return _percentile_interval(values, ci)


def _check_ci(ci: float) -> None:
    if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not 0.0 < ci < 1.0:
        raise ConfigError(f"ci must be strictly between 0 and 1 (e.g. 0.95), got {ci!r}.")


def _check_n_boot(n_boot: int) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ConfigError(f"n_boot must be a positive integer, got {n_boot!r}.")


def _resamples(n_items: int, n_boot: int, seed: int) -> Iterator[list[int]]:
    rng = random.Random(seed)
    population = range(n_items)
    for _ in range(n_boot):
        yield rng.choices(population, k=n_items)


def _bootstrap_rows(
    codes_by_row: Sequence[Sequence[int]],
    n_labels: int,
    *,
    ci: float,
    n_boot: int,
    seed: int,
) -> list[tuple[tuple[float, float] | None, tuple[float, float] | None]]:
    """Accuracy and kappa intervals of every row from one shared set of resamples."""
    n = len(codes_by_row[0]) if codes_by_row else 0
    accuracies: list[list[float]] = [[] for _ in codes_by_row]
    kappas: list[list[float]] = [[] for _ in codes_by_row]
    if n:
        for idx in _resamples(n, n_boot, seed):
            for r, codes in enumerate(codes_by_row):
                counts = Counter(map(codes.__getitem__, idx))
                accuracy, kappa = _accuracy_kappa(counts, n_labels)
                if accuracy is not None:
                    accuracies[r].append(accuracy)
                if kappa is not None:
                    kappas[r].append(kappa)
    return [
        (_percentile_interval(a, ci), _percentile_interval(k, ci))
        for a, k in zip(accuracies, kappas, strict=True)
    ]


def _percentile_interval(values: list[float], ci: float) -> tuple[float, float] | None:
    if not values:
        return None
    values.sort()
    tail = (1.0 - ci) / 2.0
    return linear_quantile(values, tail), linear_quantile(values, 1.0 - tail)


# --- effective votes -----------------------------------------------------------------------


def effective_votes(
    labels: Sequence[Sequence[str | None]], reference: Sequence[str | None]
) -> EffectiveVotes:
    """How many independent votes a panel is worth, from how its critics' errors correlate.

    A critic is *wrong* on an item when its label differs from ``reference`` (gold, or the
    consensus when there is no gold). For each pair of critics, ``pairwise[(i, j)]`` is the
    phi coefficient (Pearson correlation of the 0/1 wrong indicators) over the items both
    judged and ``reference`` labels; ``None`` when undefined (no shared item, or either
    critic never or always wrong on them).

    With ``n`` critics whose errors correlate on average ``rho``, a majority is about as
    reliable as ``n_eff = n / (1 + (n - 1) * rho)`` independent votes: the design effect of
    cluster sampling (Kish), since the variance of the mean of ``n`` equicorrelated
    variables is ``(1 + (n - 1) * rho) / n`` times the single one's. ``rho`` is the mean of
    the defined pairwise phis, clamped to ``[0, 1]`` (negatively correlated errors are not
    counted as worth more than ``n`` votes). Identical critics give 1, independent ones
    ``n``; nine critics with ``rho = 0.5`` are worth 1.8.

    Prefer gold as the reference. Against the consensus, "wrong" means outvoted and every
    critic's own vote helps make the reference, so the figure is a rough guide only.

    ``n_critics`` counts the critics with at least one valid label on a referenced item (a
    critic whose every call failed casts no vote). ``effective`` is ``float(n_critics)``
    for fewer than two such critics (``None`` for none), and ``None`` when no pair has a
    defined correlation (e.g. no critic ever wrong).

    Raises:
        ConfigError: rows of different lengths, or ``reference`` not one per item.
    """
    n_items = len(labels)
    if len(reference) != n_items:
        raise ConfigError(f"reference has {len(reference)} labels for {n_items} items.")
    width = len(labels[0]) if labels else 0
    for index, row in enumerate(labels):
        if len(row) != width:
            raise ConfigError(
                f"Item {index} has {len(row)} labels but item 0 has {width}; labels must be "
                "items x critics with None for a missing verdict."
            )
    wrong: list[list[bool | None]] = [
        [
            None if ref is None or row[j] is None else row[j] != ref
            for row, ref in zip(labels, reference, strict=True)
        ]
        for j in range(width)
    ]
    voting = [j for j in range(width) if any(w is not None for w in wrong[j])]
    pairwise: dict[tuple[int, int], float | None] = {}
    for a, i in enumerate(voting):
        for j in voting[a + 1 :]:
            pairwise[i, j] = _phi(wrong[i], wrong[j])
    return votes_worth(len(voting), pairwise)


def votes_worth(n: int, pairwise: dict[tuple[int, int], float | None]) -> EffectiveVotes:
    """:class:`EffectiveVotes` of ``n`` voting critics whose errors correlate by
    ``pairwise`` (phi per pair, ``None`` where undefined); see :func:`effective_votes`."""
    defined = [phi for phi in pairwise.values() if phi is not None]
    mean = math.fsum(defined) / len(defined) if defined else None
    effective: float | None
    if n < 2:
        effective = float(n) if n else None
    elif mean is None:
        effective = None
    else:
        rho = min(1.0, max(0.0, mean))
        effective = n / (1.0 + (n - 1) * rho)
    return EffectiveVotes(
        n_critics=n, mean_error_correlation=mean, pairwise=pairwise, effective=effective
    )


def _phi(x: Sequence[bool | None], y: Sequence[bool | None]) -> float | None:
    table = Counter((a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None)
    n11, n10 = table[True, True], table[True, False]
    n01, n00 = table[False, True], table[False, False]
    denominator = (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
    if denominator == 0:
        return None
    return (n11 * n00 - n10 * n01) / math.sqrt(denominator)


# --- helpers -------------------------------------------------------------------------------


def _examples(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_EXAMPLES])
    more = len(items) - _EXAMPLES
    return shown + (f" (and {more} more)" if more > 0 else "")


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _calibration_cell(row: GoldRow, value: float | None) -> str:
    """A Brier or ECE cell: ``-`` for a row whose answered votes never stated a confidence
    (the caption says so), ``n/a`` when there is nothing to measure (no vote, the
    consensus)."""
    if value is None and row.n_stated == 0 and row.n_answered > 0:
        return "-"
    return _number(value)


def _with_ci(value: float | None, interval: tuple[float, float] | None) -> str:
    if interval is None:
        return _number(value)
    return f"{_number(value)} [{interval[0]:.3f}, {interval[1]:.3f}]"


def load_gold(gold: Mapping[str, str] | str | os.PathLike[str]) -> dict[str, str]:
    """Gold labels as ``{id: label}``: a mapping, or a JSONL file of ``{"id", "label"}``
    lines (blank lines skipped; other keys, such as the labelling page's ``probability``
    and ``jury_shown``, ignored), read and checked by
    :func:`cross_judge.stats._gold_file.read_gold`.

    Raises:
        ConfigError: a missing or unreadable file, a line that is not such an object (with
            its number), an id given two different labels, a label that is empty, padded
            with spaces or reserved for unmade judgements (``ERROR``, ``SKIPPED``, ...).
    """
    return read_gold(gold, require_label=True).items


def id_values(
    text: str,
    key: str,
    accept: Callable[[object], bool],
    bad_line: Callable[[int], Exception],
    conflict: Callable[[int, str, object, object], Exception],
) -> dict[str, Any]:
    """``{id: value}`` from JSONL ``text`` of ``{"id": "...", key: value}`` lines (blank
    lines skipped), what a gold file and a panel file's difficulty file hold. An id given
    twice with the same value is kept once.

    Raises:
        ``bad_line(number)``: a line that is not such an object, or whose value ``accept``
            refuses (``number`` counts from 1).
        ``conflict(number, id, known, value)``: an id given two different values.
    """
    values: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not (
            isinstance(record, dict)
            and isinstance(record.get("id"), str)
            and key in record
            and accept(record[key])
        ):
            raise bad_line(number)
        value = record[key]
        known = values.setdefault(record["id"], value)
        if known != value:
            raise conflict(number, record["id"], known, value)
    return values
