"""The ``rich`` summary of a :class:`~cross_judge.batch.BatchResult` (``batch.summary()``,
``print(batch)`` and the CLI's end-of-run table). Presentation only: every number comes
from a :class:`~cross_judge.report._digest.BatchDigest` of the results (one pass, bounded
memory), which a batch in memory is digested into too, so both give the same numbers."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING

from .._extensions import provide
from ..results import BatchResult, plain_text
from ._criteria import format_rate
from ._digest import BatchDigest, dispute_reasons

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.measure import Measurement
    from rich.segment import Segment
    from rich.text import Text

    from ..verdict import EnsembleVerdict, Verdict

__all__ = [
    "BIDI_CONTROLS",
    "dispute_reasons",
    "failure_message",
    "format_cost",
    "format_number",
    "format_rate",
    "judged_text",
    "plain_text",
    "printable",
    "render_disputed",
    "render_summary",
    "simulated_note",
    "simulated_without_gold_note",
]

_MESSAGE_CHARS = 160


_MODEL_MIN_ITEMS = 200
"""Below this many items the summary shows no effective votes without gold: too few for
the correlated-errors model to tell hard items from weak critics."""


_SKIPPED_CAPTION = (
    "skipped: items a critic was not asked (early stop: the vote was decided without it; a "
    "cascade tier the item did not reach; a call over budget). valid, error rate and agrees "
    "count only the items it was asked; agrees is the share of its valid answers equal to "
    "their consensus (its tier's, in a cascade), so a critic asked only to settle a split, "
    "or alone in its tier, agrees by construction"
)
"""Under the critics table when a critic skipped items: why valid votes fall short of the
items, and what the rates are over."""

_ECHO_AGREEMENT = 0.98
"""Without gold, two critics agreeing on this share of items or more get a warning: nothing
in their votes tells copies of one model from two critics that are always right."""


BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's bidirectional formatting characters (the ``Bidi_Control`` property: ALM, LRM,
RLM, the embeddings and overrides LRE to RLO, the isolates LRI to PDI). Shown raw, they
reorder the text around them (the id ``"abc\\u202etxt.exe"`` reads ``abcexe.txt``), so
:func:`printable` writes each as its escape."""

_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def printable(text: str) -> str:
    """``text`` as any view can show it without being misread: each lone surrogate and each
    bidirectional control (:data:`BIDI_CONTROLS`) written as its escape (``"\\ud800"``,
    ``"\\u202e"``). A lone surrogate is valid JSON (an id, a label or a message from an
    untrusted file or vendor may hold one) but not Unicode, and UTF-8 output cannot hold
    it; a bidirectional control reorders what a reader sees around it. Any other text
    (accents, emoji, right-to-left scripts themselves) is returned as it is. Every view
    of results (the report, the labelling page, the leaderboard, the notebook views, the
    terminal summary) shows text through this one function."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if _BIDI.search(text) is None:
        return text
    return _BIDI.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


class _Printable:
    """``renderable`` (a ``rich`` table, text, group...) with every text it renders passed
    through :func:`printable`: what the terminal summary and the disputed listing return,
    so a bidirectional control in an id, a label or a message shows as its escape. The
    escape is applied once the layout is made (as the output stream escapes a lone
    surrogate), so a row holding one is a few columns wider than the others."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        from rich.segment import Segment

        for segment in console.render(self.renderable, options):
            text = segment.text
            shown = printable(text)
            yield segment if shown is text else Segment(shown, segment.style, segment.control)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement.get(console, options, self.renderable)


def judged_text(result: EnsembleVerdict, *, answer: bool = True) -> list[tuple[str, str]]:
    """The text ``result`` judged, as ``(name, text)`` pairs: ``("query", ...)`` then
    ``("context.<key>", ...)`` per context value (numbers and booleans as JSON text),
    each as stored (a cut text ends with its marker); empty when the result stores none
    (``item_text=False``, or a results file from before the text was stored). Without
    ``answer``, the query is left out (a view showing it beside the item's reference)."""
    import json

    stored = result.item
    if stored is None:
        return []
    pairs = [("query", stored.query)] if answer else []
    for key, value in stored.context.items():
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        pairs.append((f"context.{key}", text))
    return pairs


def simulated_note(critics: list[str]) -> str:
    """The sentence every view of results prints when some critics were simulated."""
    verb = "is" if len(critics) == 1 else "are"
    return (
        f"{', '.join(critics)} {verb} simulated: their answers come from the simulated vendor "
        "(cross_judge.testing, a seeded random generator), not a language model"
    )


def simulated_without_gold_note(critics: list[str], *, measured_against_gold: bool) -> str:
    """The sentence ``stats`` prints when simulated critics had no gold: their simulator drew
    each item's truth from a hash of its text, so accuracy against gold labels is chance.
    ``measured_against_gold``: the view measures them against gold labels now."""
    verb = "was" if len(critics) == 1 else "were"
    consequence = (
        "the accuracy against --gold below is chance agreement, not a property of the critic"
        if measured_against_gold
        else "their accuracy against gold labels would be chance agreement"
    )
    return (
        f"{', '.join(critics)} {verb} simulated without gold: the simulator knew no item's "
        f"truth and drew it from a hash of the item's text, so {consequence}. Give the "
        "panel file's simulator your labels (simulator: {items: ITEMS.jsonl, gold: "
        "GOLD.jsonl}) to simulate critics of a known accuracy."
    )


def format_number(value: float | None, digits: int = 3) -> str:
    """A statistic to ``digits`` decimals; ``"n/a"`` when undefined."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def format_cost(value: float | None) -> str:
    """A cost in USD to four decimals (``"$0.0123"``); ``"n/a"`` when unknown."""
    return "n/a" if value is None else f"${value:.4f}"


def failure_message(kind: str, message: str) -> str:
    """A failed call's ``error`` text for one line of a report: whitespace folded, the
    leading ``"<kind>: "`` the kind column already shows dropped, at most 160 characters."""
    text = " ".join(message.split())
    if text.startswith(f"{kind}: "):
        text = text[len(kind) + 2 :]
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


@provide("render_summary")
def render_summary(
    batch: BatchResult | BatchDigest,
    *,
    level: str = "nominal",
    alpha: float | None = None,
    detailed: bool = False,
    gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
    ci: float | None = None,
) -> RenderableType:
    """The run and its agreement, consensus counts, one row per critic, and why calls
    failed (error kinds and the vendor's message per critic) when any did. When a vendor
    reported no usable usage for some calls, the overview counts them (``calls priced at
    worst case``): the cost shown holds their worst case, not a measured cost.

    The consensus table counts labels chosen by a vote; items where the strategy fell
    back to its ``fallback`` label (no valid verdict, quorum not met, no unanimity) get a
    row of their own, ``no consensus (fallback UNCLEAR)``, never the label's row.

    Rubric results (critics judging with a prompt's ``criteria``) add a ``criteria`` table
    (not with ``detailed``: ``cross-judge stats`` prints its own): per criterion its weight
    (and gate), the items decided on it, the share disputed, Krippendorff's alpha and the
    range over the critics of the share of their answers equal to the panel's consensus.

    Results of a cascade (:meth:`~cross_judge.batch.BatchResult.tier_stats` is not empty)
    add a ``tiers`` table: per tier its critics, the items it was asked, decided and (only
    when any) abstained on, its share of all items decided, and its cost. Items a cascade
    abstained on (consensus ``ABSTAIN``) are counted in the overview as ``abstained (for a
    human)`` and get a row of that name in the consensus table.

    With ``gold`` (``{id: label}`` or a JSONL file), the critics and the consensus against
    it (:meth:`~cross_judge.batch.BatchResult.against`, with bootstrap intervals at
    ``ci``) and the log-odds weights the labels earn.

    Last, for a panel of two or more critics (not a cascade, whose tiers vote apart), how
    many independent votes it is worth (:func:`cross_judge.reliability.effective_votes`),
    from how its critics' errors correlate against ``gold`` or, without it and with at
    least 200 items, as the correlated-errors Dawid-Skene model estimates it; a warning
    below 2. Without gold, also a warning for critics that give the same label on 98% of
    items or more: their votes cannot tell copies of one model from two always-right
    critics.

    For a batch of pairs (:mod:`cross_judge.bias`): a ``position bias`` table (per critic
    and, for two critics or more, all together: valid answers on pairs in the order shown,
    decisive ones, the share that picked the first-shown candidate, the flip rate of pairs
    judged in both orders, fairness) and a ``length bias`` table (per critic and for the
    consensus, the win rate of the longer candidate per bin of the length gap
    ``|len(a) - len(b)| / max(len(a), len(b))``, with its count). For critics sampled
    more than once (``Critic(samples=n)``), a ``self-consistency`` table. A batch with
    neither shows none of them.

    Critics the batch records as simulated (``simulated_critics``) are marked ``*`` in
    the critics table, and a line under the overview says that their answers come from
    the simulated vendor, not a language model. Critics that are people
    (``human_critics``: votes imported with ``from_votes`` or ``add_votes``) are marked
    ``†``.

    ``alpha`` is Krippendorff's alpha at ``level`` when the caller has computed it (the
    nominal one is computed here otherwise). ``detailed`` (``cross-judge stats``) adds the
    items with disagreement, a pairwise agreement table and each critic's ``skipped``
    column, which any summary shows when a critic was not asked about some items: calls not
    made (early stop, budget) and, in a cascade, items that did not reach its tier. A
    caption then says so, and that ``valid``, the error rate and ``agrees`` (the share of
    its valid answers equal to the consensus) count only the items it was asked.

    ``batch`` is a :class:`~cross_judge.batch.BatchResult` or the
    :class:`~cross_judge.report._digest.BatchDigest` of a results file (what the CLI
    passes: one pass over the file, memory that does not grow with its text); a digest
    measured against ``gold`` must have been built with those labels.

    Raises:
        ConfigError: as :meth:`~cross_judge.batch.BatchResult.against` for ``gold``; a
            digest built without gold given ``gold``.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ..verdict import ABSTAIN

    if isinstance(batch, BatchResult):
        from ..stats import load_gold

        labels = None if gold is None else load_gold(gold)
        batch = BatchDigest.of(batch, gold=labels)
    n = len(batch)
    usage = batch.usage
    tier_stats = batch.tier_stats()
    abstained = batch.n_abstained if tier_stats else 0
    if alpha is None and level == "nominal":
        alpha = batch.reliability_alpha()
    overview = Table(box=box.SIMPLE_HEAD, show_header=False, title="batch", title_justify="left")
    overview.add_column("what")
    overview.add_column("value", justify="right")
    overview.add_row("items", str(n))
    overview.add_row("critics", ", ".join(batch.critics))
    simulated = [name for name in batch.critics if name in batch.simulated_critics]
    people = batch.human_critics
    overview.add_row("voting", batch.voting)
    overview.add_row(f"Krippendorff's alpha ({level})", format_number(alpha))
    overview.add_row("Fleiss' kappa", format_number(batch.fleiss_kappa()))
    if detailed:
        overview.add_row("items with disagreement", str(batch.n_disagreement))
    if abstained:
        overview.add_row("abstained (for a human)", str(abstained))
    overview.add_row("items to retry (call failed or over budget)", str(batch.n_failed))
    tokens = f"{usage.prompt_tokens} / {usage.completion_tokens}"
    overview.add_row("tokens (prompt / completion)", tokens)
    overview.add_row("cost", format_cost(batch.cost_usd))
    estimated = sum(stats.cost_estimates for stats in batch.critic_stats().values())
    if estimated:  # calls whose vendor reported no usable usage: the cost above errs high
        overview.add_row("calls priced at worst case (usage not reported)", str(estimated))
    if batch.elapsed_s:
        rate = n / batch.elapsed_s
        overview.add_row("wall time", f"{batch.elapsed_s:.2f} s ({format_number(rate, 1)} items/s)")
    tables: list[RenderableType] = [overview]
    if simulated:
        tables.append(Text(simulated_note(simulated), style="yellow"))
    without_gold = [name for name in simulated if name in batch.simulated_without_gold]
    if without_gold:
        note = simulated_without_gold_note(without_gold, measured_against_gold=gold is not None)
        tables.append(Text(note, style="yellow"))

    consensus = Table(box=box.SIMPLE_HEAD, title="consensus", title_justify="left")
    consensus.add_column("label")
    consensus.add_column("items", justify="right")
    consensus.add_column("share", justify="right")
    for label, count in batch.consensus_counts().items():
        if label == ABSTAIN and abstained:
            count -= abstained
            if not count:
                continue
        consensus.add_row(label, str(count), format_rate(count / n if n else None))
    for label, count in batch.fallback_counts().items():
        consensus.add_row(
            f"no consensus (fallback {label})", str(count), format_rate(count / n if n else None)
        )
    if abstained:
        consensus.add_row("abstained (for a human)", str(abstained), format_rate(abstained / n))
    tables.append(consensus)

    if tier_stats:
        tiers = Table(box=box.SIMPLE_HEAD, title="tiers", title_justify="left")
        columns = ["tier", "critics", "asked", "decided"]
        if abstained:
            columns.append("abstained")
        for name in (*columns, "share decided", "cost"):
            tiers.add_column(name, justify="left" if name in ("tier", "critics") else "right")
        for tier in tier_stats:
            cells = [str(tier.tier), ", ".join(tier.critics), str(tier.asked), str(tier.decided)]
            if abstained:
                cells.append(str(tier.abstained))
            tiers.add_row(*cells, format_rate(tier.share_decided), format_cost(tier.cost_usd))
        tables.append(tiers)

    criteria_rows = batch.criteria.rows() if not detailed else []  # stats prints its own
    if criteria_rows:
        criteria = Table(box=box.SIMPLE_HEAD, title="criteria", title_justify="left")
        for name in ("criterion", "weight", "items", "disputed", "alpha", "critics agreeing"):
            criteria.add_column(
                name, justify="left" if name == "criterion" else "right", no_wrap=True
            )
        for row in criteria_rows:
            weight = "" if row.weight is None else f"{row.weight:g}" + (" gate" if row.gate else "")
            criteria.add_row(
                row.criterion,
                weight,
                str(row.n_items),
                format_rate(row.disputed_share),
                format_number(row.alpha),
                _agreeing(row.agreement),
            )
        criteria.caption = (
            "critics agreeing: the lowest and highest share of a critic's answers equal to "
            "the panel's consensus (per critic: cross-judge report)"
        )
        criteria.caption_justify = "left"
        tables.append(criteria)

    if detailed:
        pairs = Table(box=box.SIMPLE_HEAD, title="pairwise agreement", title_justify="left")
        for name in ("critic", "with", "agreement", "Cohen's kappa"):
            pairs.add_column(
                name, justify="right" if name in ("agreement", "Cohen's kappa") else "left"
            )
        percent = batch.pairwise_agreement("percent")
        kappa = batch.pairwise_agreement("cohen")
        for i, a in enumerate(batch.critics):
            for b in batch.critics[i + 1 :]:
                pairs.add_row(
                    a, b, format_rate(percent.get((a, b))), format_number(kappa.get((a, b)))
                )
        tables.append(pairs)

    critic_stats = batch.critic_stats()
    # Not asked: calls not made (early stop, budget) and items without a verdict of the
    # critic (a cascade tier the item did not reach).
    not_asked = {
        name: stats.skipped + max(0, n - stats.items) for name, stats in critic_stats.items()
    }
    skipping = any(not_asked.values())
    critics = Table(
        box=box.SIMPLE_HEAD,
        title="critics",
        title_justify="left",
        caption="; ".join(
            [
                *(["*: a simulated critic, not a language model"] if simulated else []),
                *(["†: a person (votes imported with from_votes or add_votes)"] if people else []),
                *([_SKIPPED_CAPTION] if skipping else []),
            ]
        )
        or None,
        caption_justify="left",
    )
    columns = ["critic", "valid", "errors", "parse fails"]
    if detailed or skipping:
        columns.append("skipped")
    for name in (*columns, "error rate", "agrees", "mean s"):
        critics.add_column(
            name, justify="left" if name == "critic" else "right", no_wrap=name == "critic"
        )
    for key, stats in critic_stats.items():
        name = stats.critic + ("*" if stats.critic in simulated else "")
        name += "†" if stats.critic in people else ""
        cells = [name, str(stats.valid), str(stats.errors), str(stats.parse_failures)]
        if detailed or skipping:
            cells.append(str(not_asked[key]))
        critics.add_row(
            *cells,
            format_rate(stats.error_rate),
            format_rate(stats.agreement),
            format_number(stats.mean_elapsed_s, 2),
        )
    tables.append(critics)

    failing = [stats for stats in critic_stats.values() if stats.error_kinds]
    if failing:
        failures = Table(box=box.SIMPLE_HEAD, title="failed calls", title_justify="left")
        for name in ("critic", "failed", "kind", "calls", "message (most common)"):
            failures.add_column(name, justify="right" if name == "calls" else "left")
        for stats in failing:
            asked = stats.items - stats.skipped
            failed = f"{stats.errors + stats.parse_failures} of {asked}"
            for index, (kind, count) in enumerate(stats.error_kinds.items()):
                failures.add_row(
                    stats.critic if index == 0 else "",
                    failed if index == 0 else "",
                    kind,
                    str(count),
                    Text(failure_message(kind, stats.error_messages.get(kind, ""))),
                )
        tables.append(failures)
    tables += _bias_parts(batch)
    if gold is not None:
        tables += _gold_parts(batch, ci)
    if not tier_stats:
        tables += _effective_votes_parts(batch, gold=gold is not None)
    return _Printable(Group(*tables))


def _agreeing(shares: Mapping[str, float | None]) -> str:
    """``"60.0%-100.0%"``: the range of the critics' agreement with a criterion's consensus
    (one value when they are equal; ``n/a`` when no critic answered)."""
    known = [share for share in shares.values() if share is not None]
    if not known:
        return format_rate(None)
    low, high = min(known), max(known)
    return format_rate(low) if low == high else f"{format_rate(low)}-{format_rate(high)}"


DISPUTED_TEXT_CHARS = 240
"""Characters of each stored text (query, context value) ``stats --disputed`` prints."""


def render_disputed(batch: BatchResult | BatchDigest, limit: int) -> RenderableType:
    """The items of ``batch`` that need a look (:func:`dispute_reasons`), in batch order,
    at most ``limit`` of them, one block each: its id, consensus, agreement and why; each
    critic's label and confidence (a failed call's kind and why); then the text it judged
    (:func:`judged_text`), one line per part, whitespace folded and each cut to
    :data:`DISPUTED_TEXT_CHARS` characters. What ``cross-judge stats --disputed`` prints.

    The title counts the disputed items by reason, all of them, and says how many are
    shown when that is fewer. A :class:`~cross_judge.report._digest.BatchDigest` shows the
    disputed items it kept (its ``disputed``), at most ``limit``. Results that store no
    text (judged with ``item_text=False`` or before it was stored) show their ids alone,
    and a line says so. No disputed item: a line says so.
    """
    from rich.console import Group
    from rich.text import Text

    if isinstance(batch, BatchResult):
        batch = BatchDigest.of(batch, disputed=limit)
    if not batch.n_disputed:
        return Text(f"disputed items: none of {len(batch)}")
    counts = batch.dispute_counts
    shown = batch.disputed[: max(0, limit)]
    title = (
        f"disputed items: {batch.n_disputed} of {len(batch)} "
        f"({', '.join(f'{reason} {n}' for reason, n in counts.most_common())})"
    )
    if len(shown) < batch.n_disputed:
        title += f"; the first {len(shown)} shown"
    parts: list[RenderableType] = [Text(title, style="bold")]
    for result, why in shown:
        consensus = f"no consensus ({result.consensus})" if result.fallback else result.consensus
        agreement = format_rate(result.agreement_pct if result.n_valid else None)
        head = Text("\n")
        head.append(result.query_id, style="bold")
        head.append(f"  consensus {consensus}, agreement {agreement}: {', '.join(why)}")
        by_critic = {v.critic_id: v for v in result.verdicts}
        votes = Text("  ")
        for index, name in enumerate(batch.critics):
            votes.append(("  " if index else "") + f"{name} ")
            votes.append_text(_verdict_text(by_critic.get(name)))
        lines = [head, votes]
        for name, text in judged_text(result):
            folded = " ".join(text.split())
            if len(folded) > DISPUTED_TEXT_CHARS:
                folded = folded[: DISPUTED_TEXT_CHARS - 1] + "\u2026"
            line = Text(f"  {name}: ", style="dim")
            line.append(folded)
            lines.append(line)
        parts.extend(lines)
    if not any(result.item is not None for result, _ in shown):
        parts.append(
            Text(
                "\nthese results store no item text (judged with --no-item-text / "
                "item_text=False, or before results stored it): ids only"
            )
        )
    return _Printable(Group(*parts))


def _verdict_text(verdict: Verdict | None) -> Text:
    """One critic's answer on one item for the disputed table: ``KEEP 0.80``, or a failed
    call's kind and error kind."""
    from rich.text import Text

    if verdict is None:
        return Text("-")
    if verdict.error is not None or verdict.kind == "SKIPPED":
        kind = verdict.error_kind.value if verdict.error_kind else ""
        return Text(f"{verdict.kind} {kind}".strip(), style="red")
    return Text(f"{verdict.kind} {verdict.confidence:.2f}")


def _bin_label(low: float, high: float) -> str:
    """A length-difference bin as a column title: ``0-10%``, and ``50%+`` for the last."""
    if high == 1.0 and low > 0:
        return f"{low * 100:g}%+"
    return f"{low * 100:g}-{high * 100:g}%"


def _bias_parts(batch: BatchDigest) -> list[RenderableType]:
    """The position, length and self-consistency tables; each only when the batch has
    something for it (pairs; decisive verdicts on pairs; sampled critics)."""
    from rich import box
    from rich.table import Table

    parts: list[RenderableType] = []
    position = batch.position_bias()
    if position.panel.answers:
        table = Table(
            box=box.SIMPLE_HEAD,
            title="position bias (answers on pairs, in the order shown)",
            title_justify="left",
        )
        for name in ("critic", "answers", "decisive", "first-position", "flips", "fairness"):
            table.add_column(name, justify="left" if name == "critic" else "right")
        rows = list(position.critics.items())
        if len(rows) > 1:
            rows.append(("all critics", position.panel))
        for name, stats in rows:
            flips = (
                f"{format_rate(stats.flip_rate)} of {stats.pairs_both}"
                if stats.pairs_both
                else "n/a"
            )
            table.add_row(
                name,
                str(stats.answers),
                str(stats.decisive),
                format_rate(stats.first_position),
                flips,
                format_number(stats.fairness, 2),
            )
        parts.append(table)

    lengths = batch.length_bias()
    rows_by_name = [*lengths.critics.items(), ("consensus", lengths.consensus)]
    equal = any(bins[0].equal_length for _, bins in rows_by_name)
    if any(b.decisive or b.equal_length for _, bins in rows_by_name for b in bins):
        table = Table(
            box=box.SIMPLE_HEAD,
            title="length bias (longer candidate's win rate, by length gap)",
            title_justify="left",
        )
        table.add_column("critic")
        for low, high in pairwise(lengths.edges):
            table.add_column(_bin_label(low, high), justify="right")
        if equal:
            table.add_column("same length", justify="right")
        for name, bins in rows_by_name:
            cells = [
                f"{format_rate(b.longer_win_rate)} of {b.decisive}" if b.decisive else "n/a"
                for b in bins
            ]
            if equal:
                cells.append(str(bins[0].equal_length))
            table.add_row(name, *cells)
        parts.append(table)

    selves = batch.self_consistency()
    if any(own.sampled for own in selves.values()):
        table = Table(
            box=box.SIMPLE_HEAD,
            title="self-consistency (a critic against itself)",
            title_justify="left",
        )
        for name in ("critic", "sampled verdicts", "self-agreement"):
            table.add_column(name, justify="left" if name == "critic" else "right")
        for name, own in selves.items():
            table.add_row(name, str(own.sampled), format_rate(own.self_agreement))
        parts.append(table)
    return parts


def _gold_parts(batch: BatchDigest, ci: float | None) -> list[RenderableType]:
    """The gold table and the log-odds weights the labels earn."""
    from rich.text import Text

    parts: list[RenderableType] = [batch.gold_report(ci=ci).summary()]
    weights = batch.learn_weights().weights
    parts.append(
        Text(
            "log-odds weights learned on these labels: "
            + ", ".join(f"{name} {weight:.2f}" for name, weight in weights.items())
        )
    )
    return parts


def _effective_votes_parts(batch: BatchDigest, *, gold: bool) -> list[RenderableType]:
    """How many independent votes the panel is worth (errors against ``gold``, else as the
    correlated-errors model estimates it), with a warning below 2. Nothing for fewer than
    two critics, without gold for fewer than :data:`_MODEL_MIN_ITEMS` items, or when no
    pair of critics has a defined error correlation."""
    from rich.text import Text

    if len(batch.critics) < 2 or (not gold and len(batch) < _MODEL_MIN_ITEMS):
        return []
    votes = batch.effective_votes(gold=gold)
    if votes.effective is None or votes.mean_error_correlation is None:
        return []
    source = {
        "gold": "errors against gold",
        "model": "estimated without gold by the correlated-errors Dawid-Skene model",
        "consensus": "errors against the consensus, which hides shared errors; pass gold",
    }[votes.reference]
    parts: list[RenderableType] = [
        Text(
            f"effective votes: {votes.effective:.1f} of {votes.n_critics} critics (mean "
            f"correlation of their errors {votes.mean_error_correlation:.2f}; {source})"
        )
    ]
    if votes.effective < 2 <= votes.n_critics:
        parts.append(
            Text(
                f"warning: the critics err together so often that the panel is worth "
                f"{votes.effective:.1f} independent votes; add a critic that errs "
                "differently (another model or vendor) rather than more of the same",
                style="yellow",
            )
        )
    if not gold:
        echoes = [
            (a, b, share)
            for (a, b), share in batch.pairwise_agreement("percent").items()
            if a < b and share is not None and share >= _ECHO_AGREEMENT
        ]
        if echoes:
            a, b, share = max(echoes, key=lambda echo: echo[2])
            more = f" (and {len(echoes) - 1} more pairs)" if len(echoes) > 1 else ""
            parts.append(
                Text(
                    f"warning: {a} and {b} give the same label on {share:.1%} of items"
                    f"{more}; without gold that looks like two critics that are always "
                    "right, but if they are the same model they are one vote: check "
                    "with gold (--gold)",
                    style="yellow",
                )
            )
    return parts
