"""What comparing two runs gives: :class:`RunDiff`, its paired :class:`Difference` rows and
the :class:`Flip` of each item whose result changed.

:func:`cross_judge.report.compare_runs` (and ``candidate.compare(baseline)``) builds a
:class:`RunDiff`; it holds numbers and texts only, so it pickles, dumps to JSON
(:meth:`RunDiff.to_json`) and renders as text, Markdown for a pull-request comment, or an
offline HTML page. The views are implemented in the report layer
(``report/_diff_text.py``, ``report/_diff_page.py``) and reached through
:mod:`cross_judge._extensions`, as :class:`~cross_judge.batch.BatchResult`'s are.

Every difference is the candidate's value minus the baseline's, over the items both runs
judged (paired by id). Whether a difference is a regression depends on the direction of
the metric: ``higher_is_better`` (a PASS share, an accuracy, a score) unless told otherwise.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._extensions import provider

__all__ = ["CompareMetric", "Difference", "FailOn", "Flip", "RunDiff"]

CompareMetric = Literal["auto", "label_share", "accuracy", "score", "rating"]
"""What a comparison measures per run: ``label_share`` (the share of items whose consensus
is ``label``), ``accuracy`` (the consensus against gold labels), ``score`` (the mean item
score: a rubric's weighted total, or a score strategy's), ``rating`` (a ranking run's
ratings, per candidate). ``auto``: ``rating`` for ranking runs, ``accuracy`` when gold is
given, else ``label_share``."""

FailOn = Literal["regression", "change"]
"""What fails a gate: a significant regression larger than the minimum effect, or any
significant change larger than it, either way."""


class Difference(BaseModel):
    """One paired comparison: a quantity on the baseline and on the candidate over the same
    items, the difference (candidate - baseline), its interval and a paired test.

    ``name`` says what is compared (``"PASS share"``, a critic's name, a criterion id, a
    ranked candidate); ``n`` the paired items it is computed on; ``better`` and ``worse``
    the items that moved each way (a label gained or lost, right to wrong, a score up or
    down). ``p_value`` is the test's; ``p_adjusted`` Holm's over the family the row belongs
    to (the critics, the criteria, the labels, the candidates), ``None`` for the main
    metric. ``mde`` is the smallest difference this many items would detect with power 0.8
    at the comparison's alpha. ``None`` values mean undefined (no paired item), never 0.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    n: int
    baseline: float | None
    candidate: float | None
    difference: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    p_adjusted: float | None = None
    test: str
    interval_method: str
    better: int = 0
    worse: int = 0
    mde: float | None = None

    @property
    def p(self) -> float | None:
        """The p-value a decision uses: Holm's for a row of a family, else the test's."""
        return self.p_adjusted if self.p_adjusted is not None else self.p_value


class Flip(BaseModel):
    """An item whose result changed between the runs, with what each run said.

    ``direction`` is ``"better"`` or ``"worse"`` for the candidate (by the metric's
    direction); ``baseline`` and ``candidate`` the item's result in each (a label, or a
    score as text); ``*_votes`` each critic's label; ``*_text`` the text judged in each
    run (the candidate's outputs usually differ from the baseline's), ``None`` when the
    results file was written without item text.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    direction: Literal["better", "worse"]
    baseline: str
    candidate: str
    baseline_votes: dict[str, str] = Field(default_factory=dict)
    candidate_votes: dict[str, str] = Field(default_factory=dict)
    baseline_text: str | None = None
    candidate_text: str | None = None


class RunDiff(BaseModel):
    """A candidate run against a baseline run of the same judge on the same items.

    ``main`` is the metric's difference with its test (exact McNemar for a label share or
    an accuracy, Wilcoxon signed-rank with a paired-bootstrap interval for scores, a
    paired bootstrap of the refitted ratings for a ranking); ``labels`` every consensus
    label's share, ``critics`` each critic's own value of the metric and ``criteria`` each
    rubric criterion's, each family with Holm's correction; ``ratings`` a ranking run's
    candidates. ``flips`` are the items that moved, worse first. ``noise`` is the A/A
    check: the same metric between the baseline and a second judgement of its outputs,
    the judge's own noise (``None`` when none was given).

    ``panel_changes`` lists how the judge differs between the runs (empty: the same);
    ``panel_change_allowed`` says the comparison was told to go on anyway, and every view
    says so. ``manifests_compared`` is False when a run had no manifest and the comparison
    was allowed on what the results record alone. ``baseline_only`` and
    ``candidate_only`` are the ids one run judged and the other did not.
    """

    model_config = ConfigDict(frozen=True)

    metric: Literal["label_share", "accuracy", "score", "rating"]
    label: str | None = None
    baseline_name: str = "baseline"
    candidate_name: str = "candidate"
    n_paired: int
    baseline_only: list[str] = Field(default_factory=list)
    candidate_only: list[str] = Field(default_factory=list)
    main: Difference
    labels: list[Difference] = Field(default_factory=list)
    critics: list[Difference] = Field(default_factory=list)
    criteria: list[Difference] = Field(default_factory=list)
    ratings: list[Difference] = Field(default_factory=list)
    flips: list[Flip] = Field(default_factory=list)
    noise: Difference | None = None
    alpha: float = 0.05
    min_effect: float = 0.0
    confidence: float = 0.95
    higher_is_better: bool = True
    panel_changes: list[str] = Field(default_factory=list)
    panel_change_allowed: bool = False
    manifests_compared: bool = True
    notes: list[str] = Field(default_factory=list)

    # -- decisions ----------------------------------------------------------------------------

    def _moves(self, row: Difference) -> Literal["better", "worse"] | None:
        """Which way ``row`` moved significantly by more than the minimum effect, if it did."""
        p, difference = row.p, row.difference
        if p is None or difference is None or p >= self.alpha:
            return None
        if abs(difference) <= self.min_effect:
            return None
        up = difference > 0
        return "better" if up == self.higher_is_better else "worse"

    @property
    def gated(self) -> list[Difference]:
        """The rows a gate decides on: the main metric and, for rubric runs, each criterion
        (Holm-adjusted); a ranking's candidates for a ranking run."""
        return [self.main, *self.criteria, *self.ratings]

    @property
    def regressions(self) -> list[Difference]:
        """The gated rows that got significantly worse by more than ``min_effect``. A
        ranking's ratings have no better or worse (a candidate up is another one down):
        they count as changes only."""
        rows = [self.main, *self.criteria]
        return [row for row in rows if self._moves(row) == "worse"]

    @property
    def changes(self) -> list[Difference]:
        """The gated rows that changed significantly, either way, by more than
        ``min_effect``."""
        return [row for row in self.gated if self._moves(row) is not None]

    @property
    def regressed(self) -> bool:
        """True when :attr:`regressions` is not empty."""
        return bool(self.regressions)

    def failed(self, fail_on: FailOn = "regression") -> bool:
        """Whether a gate fails: on a significant regression larger than ``min_effect``
        (``"regression"``), or on any such change (``"change"``)."""
        if fail_on not in ("regression", "change"):
            raise ValueError(f"fail_on must be 'regression' or 'change', not {fail_on!r}")
        return bool(self.regressions if fail_on == "regression" else self.changes)

    # -- views --------------------------------------------------------------------------------

    def to_text(self) -> str:
        """The comparison as plain text (what ``print(diff)`` shows)."""
        text: str = provider("diff_text")(self)
        return text

    def to_markdown(self) -> str:
        """The comparison as GitHub-flavoured Markdown, for a pull-request comment."""
        text: str = provider("diff_markdown")(self)
        return text

    def to_json(self) -> str:
        """The comparison as one JSON document (every field, and ``regressed``), ASCII only:
        a text holding anything (a lone surrogate from a hostile file included) is escaped,
        and :meth:`from_json` reads it back."""
        import json

        document = self.model_dump(mode="json")
        document["regressed"] = self.regressed
        return json.dumps(document, indent=2, ensure_ascii=True) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> RunDiff:
        """A comparison read back from :meth:`to_json` (with Python's JSON reader, which
        keeps a lone surrogate that pydantic's refuses)."""
        import json

        return cls.model_validate(json.loads(text))

    def to_html(self) -> str:
        """The comparison as one self-contained HTML page (no network): the figures and
        the flipped items side by side, every text escaped."""
        page: str = provider("diff_page")(self)
        return page

    def write_html(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_html` to ``path`` (UTF-8; a lone surrogate, which UTF-8 cannot
        hold, is written as its escape)."""
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(self.to_html())

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        fragment: str = provider("diff_fragment")(self)
        return fragment


RunDiff.__module__ = Difference.__module__ = Flip.__module__ = "cross_judge.report"
