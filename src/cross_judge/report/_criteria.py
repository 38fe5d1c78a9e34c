"""The rubric parts of the views: what a rubric result shows per criterion.

* :func:`criteria_grid`: one item's criteria x critics (each critic's label per criterion,
  the panel's consensus, agreement, dispute, weight and gate), which the notebook views
  and the report's disputed items read;
* :class:`CriteriaDigest`: a batch's answers per criterion taken one result at a time (as
  :class:`~cross_judge.report._digest.BatchDigest` takes results), giving per criterion each
  critic's agreement with the panel's consensus, the disputed items and Krippendorff's
  alpha (:func:`cross_judge.stats._criteria.criteria_agreement`);
* :func:`criteria_section`: the report's "Criteria" section, a criteria x critics
  agreement table.

Plain data and escaped HTML only: no statistic of its own beyond counting agreement with
the consensus, no model called. Results without criteria give nothing here, so views of
other results are unchanged.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..rubric.models import CriterionConsensus, CriterionVerdict, Rubric
from ..stats import CriteriaVotes, CriterionAgreement, criteria_agreement
from ..verdict import EnsembleVerdict, Verdict

__all__ = [
    "CriteriaDigest",
    "CriterionLine",
    "CriterionRow",
    "criteria_grid",
    "criteria_section",
    "critic_answer",
    "disputed_criteria",
    "format_rate",
]


@dataclass(frozen=True)
class CriterionLine:
    """One criterion of one item: the panel's result on it (``None`` when the item was not
    judged on it), its weight and gate (``None`` without a stored rubric) and each critic's
    answer in panel order (``None``: the critic gave no verdict on the item)."""

    criterion: str
    result: CriterionConsensus | None
    weight: float | None
    gate: bool
    answers: tuple[CriterionVerdict | None, ...]


def critic_answer(verdict: Verdict, criterion_id: str) -> CriterionVerdict:
    """A critic's answer on a criterion as :func:`cross_judge.rubric.tally.criterion_verdicts`
    reads it: its own answer, else its call's failure (a failed call failed on every
    criterion), else ``SKIPPED`` (it was not asked about it)."""
    answer = (verdict.criteria or {}).get(criterion_id)
    if answer is not None:
        return answer
    if verdict.error is not None:
        return CriterionVerdict(
            kind=verdict.kind, error=verdict.error, error_kind=verdict.error_kind
        )
    return CriterionVerdict(kind="SKIPPED", error="not asked about this criterion")


def criteria_grid(result: EnsembleVerdict) -> tuple[list[str], list[CriterionLine]]:
    """The critics (in verdict order, a cascade's every tier) and one
    :class:`CriterionLine` per criterion of ``result`` (rubric order); ``([], [])`` for a
    result without criteria."""
    if result.criteria is None:
        return [], []
    verdicts = result.verdicts
    critics = list(dict.fromkeys(v.critic_id for v in verdicts))
    by_critic: dict[str, Verdict] = {}
    for v in verdicts:
        by_critic.setdefault(v.critic_id, v)
    rubric: Rubric | None = result.rubric
    ids = [cid for cid in (rubric.ids if rubric else ()) if cid in result.criteria]
    ids += [cid for cid in result.criteria if cid not in ids]
    lines: list[CriterionLine] = []
    for cid in ids:
        spec = rubric.criterion(cid) if rubric is not None and cid in rubric.ids else None
        lines.append(
            CriterionLine(
                criterion=cid,
                result=result.criteria.get(cid),
                weight=spec.weight if spec else None,
                gate=bool(spec and spec.gate),
                answers=tuple(
                    critic_answer(by_critic[name], cid) if name in by_critic else None
                    for name in critics
                ),
            )
        )
    return critics, lines


def disputed_criteria(result: EnsembleVerdict) -> list[str]:
    """One line per disputed or undecided criterion of ``result``, plain text:
    ``cites: PASS 2 of 3 (against: b FAIL)``, ``tone: undecided (PASS 1, FAIL 1)``."""
    critics, lines = criteria_grid(result)
    out: list[str] = []
    for line in lines:
        voted = line.result
        if voted is None or not (voted.disputed or voted.fallback):
            continue
        votes = [
            (name, a) for name, a in zip(critics, line.answers, strict=True) if a and a.is_valid
        ]
        if voted.fallback:
            counts: dict[str, int] = {}
            for _, a in votes:
                counts[a.kind] = counts.get(a.kind, 0) + 1
            tally = ", ".join(f"{k} {n}" for k, n in counts.items()) or "no vote"
            out.append(f"{line.criterion}: undecided ({tally})")
            continue
        agree = sum(1 for _, a in votes if a.kind == voted.consensus)
        against = ", ".join(f"{name} {a.kind}" for name, a in votes if a.kind != voted.consensus)
        out.append(
            f"{line.criterion}: {voted.consensus} {agree} of {len(votes)}"
            + (f" (against: {against})" if against else "")
        )
    return out


# -- a batch -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriterionRow:
    """One criterion over a batch: its weight and gate (``None``/False without a stored
    rubric), the items decided on it, those disputed, Krippendorff's alpha (and its level)
    from :func:`~cross_judge.stats._criteria.criteria_agreement`, and per critic the share
    of its valid answers that equal the panel's consensus (over the items decided on it;
    ``None`` when it answered none of them)."""

    criterion: str
    weight: float | None
    gate: bool
    n_items: int
    n_disputed: int
    alpha: float | None
    level: str
    agreement: dict[str, float | None]

    @property
    def disputed_share(self) -> float | None:
        """``n_disputed / n_items``; ``None`` with no item decided on it."""
        return self.n_disputed / self.n_items if self.n_items else None


class CriteriaDigest:
    """Each critic's answers per criterion of a batch's rubric results, fed one result at
    a time (:meth:`add`); results without criteria are not counted. Memory is one
    reference per critic, criterion and rubric item
    (:class:`~cross_judge.stats._criteria.CriteriaVotes`)."""

    def __init__(self, critics: Sequence[str] | None = None) -> None:
        self.votes = CriteriaVotes(critics=critics)

    def __len__(self) -> int:
        return len(self.votes)

    def add(self, result: EnsembleVerdict) -> None:
        """Take one result (ignored when it holds no criteria)."""
        if result.criteria is not None:
            self.votes.add(result)

    def rows(self) -> list[CriterionRow]:
        """One :class:`CriterionRow` per criterion, rubric order; empty with no rubric
        result."""
        if not len(self.votes):
            return []
        votes = self.votes
        agreements: dict[str, CriterionAgreement]
        try:
            agreements = criteria_agreement(votes)
        except ConfigError:  # a label off the scale: no alpha, the counts still hold
            agreements = {}
        rubric = votes.rubric
        rows: list[CriterionRow] = []
        for cid in votes.ids:
            matrix = votes.matrix(cid)
            consensus = votes.consensus(cid)
            shares: dict[str, float | None] = {}
            for name, labels in zip(votes.critics, matrix, strict=True):
                pairs = [
                    (label, decided)
                    for label, decided in zip(labels, consensus, strict=True)
                    if label is not None and decided is not None
                ]
                same = sum(1 for label, decided in pairs if label == decided)
                shares[name] = same / len(pairs) if pairs else None
            spec = rubric.criterion(cid) if rubric is not None and cid in rubric.ids else None
            found = agreements.get(cid)
            rows.append(
                CriterionRow(
                    criterion=cid,
                    weight=spec.weight if spec else None,
                    gate=bool(spec and spec.gate),
                    n_items=sum(1 for decided in consensus if decided is not None),
                    n_disputed=sum(
                        1
                        for column in zip(*matrix, strict=True)
                        if len({label for label in column if label is not None}) > 1
                    ),
                    alpha=found.alpha if found else None,
                    level=found.level if found else "nominal",
                    agreement=shares,
                )
            )
        return rows


def format_rate(value: float | None) -> str:
    """A share as a percentage with one decimal (``"12.5%"``), ``"n/a"`` when undefined:
    every table of the report's modules writes shares so (defined here, the lowest of
    them: the summary reads the digest, which reads this)."""
    return "n/a" if value is None else f"{value:.1%}"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _weight(row: CriterionRow) -> str:
    if row.weight is None:
        return "n/a"
    text = f"{row.weight:g}"
    return text + (' <span class="label">gate</span>' if row.gate else "")


def criteria_section(digest: CriteriaDigest, name: Callable[[str], str]) -> str:
    """The report's "Criteria" section (``<section id="criteria">``): one row per criterion
    (weight and gate, items decided, disputed items and share, Krippendorff's alpha, then
    per critic its agreement with the consensus on it); empty text when the batch holds no
    rubric result. ``name`` renders a critic's name as HTML (the page marks simulated
    critics)."""
    rows = digest.rows()
    if not rows:
        return ""
    critics = digest.votes.critics
    level = rows[0].level
    head = "".join(
        f'<th scope="col"{cls}>{text}</th>'
        for text, cls in [
            ("criterion", ""),
            ("weight", ""),
            ("items", " class=num"),
            ("disputed", " class=num"),
            (f"alpha ({_e(level)})", " class=num"),
            *((name(critic), " class=num") for critic in critics),
        ]
    )
    body = []
    for row in rows:
        share = row.disputed_share
        alpha = "n/a" if row.alpha is None else f"{row.alpha:.3f}"
        cells = [
            f'<td><span class="id">{_e(row.criterion)}</span></td>',
            f"<td>{_weight(row)}</td>",
            f"<td class=num>{row.n_items}</td>",
            f"<td class=num>{row.n_disputed} ({format_rate(share)})</td>",
            f"<td class=num>{alpha}</td>",
            *(f"<td class=num>{format_rate(row.agreement.get(c))}</td>" for c in critics),
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<section id="criteria"><h2>Criteria</h2><p>Per criterion of the rubric: the items '
        "the panel decided on it, those whose valid answers were split (disputed), "
        "Krippendorff's alpha of the critics' answers on it, and each critic's agreement "
        "with the panel's consensus on it (over the items decided; n/a: it answered none). "
        "The disputed items below name their disputed criteria.</p>"
        f'<table id="criteria-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )
