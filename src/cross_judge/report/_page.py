"""A batch's results as one self-contained HTML page (``cross-judge report``).

:func:`render_report` returns the page as text, :func:`write_report` writes it. The page
holds everything it shows: the styles, the data and the scripts are inlined, so it opens
from disk with no server and no network (a Content-Security-Policy forbids every fetch,
and scripts run only with the page's own nonce). It shows:

* provenance: the run manifest beside a results file (``OUT.jsonl.manifest.json``: each
  run's command, dates, versions, status and totals, each critic's settings and prompt id,
  version and sha256), or, without one, what the verdicts record (model, vendor, prompt);
* a critic x critic heatmap of Cohen's kappa
  (:meth:`~cross_judge.batch.BatchResult.pairwise_agreement`), with percent agreement and
  the number of items both critics answered;
* per critic (:meth:`~cross_judge.batch.BatchResult.critic_stats`): error and parse-fail
  rates, agreement with the consensus, mean latency, tokens and cost;
* confusion matrices of each critic against gold labels (with ``gold``, see
  :func:`cross_judge.reliability.gold_report`) or else against the consensus (a cascade's
  critic against its own tier's; items with no consensus left out);
* with gold, the items the panel got wrong (:mod:`._against_gold`): every labelled item
  whose consensus is not its gold label, unanimous ones included, in a table like the
  disputed items'; with a rubric's gold (``{"id", "criteria": {...}}`` lines), each
  critic's and the consensus's accuracy per criterion;
* the consensus distribution, a cascade's tiers, the position bias of pairs;
* a searchable, sortable table of the disputed items: those whose deciding vote was not
  unanimous, with a failed call (``ERROR``, ``PARSE_FAIL``, a budget skip), with no
  consensus (the strategy's fallback), abstained by a cascade or escalated past its first
  tier (a cheaper tier did not settle it), or with a pair whose two orders disagreed
  (``Verdict.flipped``); each with the text it judged (its query and context, when the
  results store them: ``EnsembleVerdict.item``), each critic's label, confidence and
  reasoning, a cascade's deciding tier and, with gold, the item's gold label beside the
  consensus (:mod:`._items_table`); an item's conversation, trajectory, reference and
  images, and each turn's or step's result, as :mod:`._structure` shows them;
* which panel (:mod:`._panel_section`): the panels the results could have been, ranked by
  :func:`~cross_judge.panel_choice.select_panel` against gold or a Dawid-Skene estimate
  (a results file is read a second time for it, without its text).

Critics the run manifest (or ``BatchResult.simulated_critics``) records as simulated are
said to be so under the overview and marked wherever a critic is named. Critics that are people
(``BatchResult.human_critics``: their verdicts have ``vendor="human"``) are marked
"person" wherever a critic is named.

Charts are Vega-Lite specs drawn by the Vega, Vega-Lite and Vega-Embed runtimes shipped
in ``cross_judge/report_assets`` (BSD-3-Clause, versions in :data:`RUNTIME_VERSIONS`; their
licenses are reproduced at the foot of every page). Every number a chart shows is in an
HTML table too, so the page reads without scripts. Every text that comes from the results
(ids, item text, labels, reasoning, meta, critic names, the manifest) is escaped: items are
untrusted. A lone surrogate (valid JSON, not Unicode) is written as its escape
(``\\ud800``), so any results make a page that UTF-8 can hold, and so is a bidirectional
control (``\\u202e``, :data:`~cross_judge.report._summary.BIDI_CONTROLS`), which would
reorder what a reader sees: in the page's text and in the charts' data alike.

It calls no model and does not compute statistics of its own: every number but the panel
section's comes from a :class:`~cross_judge.report._digest.BatchDigest` of the results,
which reads a results file in one pass and keeps only counts, a few bytes per item and the
disputed items it lists (at most ``max_items``). The panel section holds every verdict's
label and cost (no text) while it is computed, for up to
:data:`~cross_judge.report._panel_section.MAX_CRITICS` critics.
"""

from __future__ import annotations

import html
import json
import math
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import ConfigError
from ..results import BatchResult, manifest_path
from ._against_gold import (
    Gold,
    accuracy_html,
    criteria_gold_section,
    paired_table,
    read_gold,
    wrong_section,
)
from ._criteria import criteria_section
from ._digest import BatchDigest
from ._html import asset
from ._items_table import ItemColumns, items_table, wrong_reasons
from ._panel_section import panel_section
from ._summary import format_rate, printable, simulated_note

if TYPE_CHECKING:
    from ..stats import GoldReport

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "RUNTIME_VERSIONS",
    "json_for_script",
    "render_report",
    "write_report",
]

DEFAULT_MAX_ITEMS = 5000
"""Disputed items listed at most in the table (the first ones, in results order); the
page says how many were left out. Every count and chart covers all items. Only the listed
items are held whole while the page is made."""

RUNTIME_VERSIONS: dict[str, str] = {"vega": "6.4.0", "vega-lite": "6.5.0", "vega-embed": "7.3.0"}
"""The chart runtimes inlined in every report (``cross_judge/report_assets``)."""

_RUNTIME_FILES = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
_LICENSE_FILES = ("LICENSE.vega", "LICENSE.vega-lite", "LICENSE.vega-embed")

Results = BatchResult | str | os.PathLike[str]
Manifest = Mapping[str, Any] | str | os.PathLike[str]


# -- public API ----------------------------------------------------------------------------------


def write_report(
    results: Results,
    out_path: str | os.PathLike[str],
    *,
    gold: Gold | None = None,
    manifest: Manifest | None = None,
    title: str | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> Path:
    """Write :func:`render_report`'s page to ``out_path`` (replacing it) and return the path.

    Raises:
        ConfigError: as :func:`render_report`; the folder of ``out_path`` does not exist.
    """
    target = Path(out_path)
    if not target.parent.exists():
        raise ConfigError(f"{target.parent} does not exist; create it or choose another path")
    page = render_report(results, gold=gold, manifest=manifest, title=title, max_items=max_items)
    target.write_text(page, encoding="utf-8")
    return target


def render_report(
    results: Results,
    *,
    gold: Gold | None = None,
    manifest: Manifest | None = None,
    title: str | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> str:
    """The HTML report of ``results`` as one self-contained page (see the module docstring).

    ``results`` is a :class:`~cross_judge.batch.BatchResult` or a results file, read once,
    line by line, into a :class:`~cross_judge.report._digest.BatchDigest` (the listed
    disputed items keep each verdict's reasoning, never its raw text). ``gold`` is
    ``{id: label}``, ``{id: {criterion id: label}}`` or a JSONL file of ``{"id", "label"}``
    and/or ``{"id", "criteria": {...}}`` lines, read as ``cross-judge stats --gold`` reads
    it (:func:`~cross_judge.report._against_gold.read_gold`; partial gold is fine): the
    confusion matrices are then against the item labels, with accuracy and kappa, the
    disputed items show each one's gold label, and a section lists the items whose
    consensus is wrong; criterion labels give each critic's accuracy per criterion.
    ``manifest`` is a run manifest (its parsed JSON or its path); by default the one
    beside a results file is read when it exists (an unreadable one is skipped with a note
    on the page), and a ``BatchResult`` has none.
    ``max_items`` caps the rows of the disputed-items table.

    Raises:
        ConfigError: a missing or unreadable results file, gold or manifest file; no
            result at all; gold ids that are no item of the batch; criterion gold the
            results hold no such criterion for; ``max_items`` < 0.
    """
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
        raise ConfigError(f"max_items must be a whole number >= 0, got {max_items!r}")
    source: Path | None = None
    given = None if gold is None else read_gold(gold)
    labels, criteria_labels = (None, None) if given is None else given.split()
    if isinstance(results, BatchResult):
        digest = BatchDigest.of(results, gold=labels, disputed=max_items)
    else:
        source = Path(results)
        digest = BatchDigest.read(source, gold=labels, disputed=max_items)
        digest.simulated_critics = []  # the page reads the manifest's own runs
        digest.simulated_without_gold = []
    if not len(digest):
        where = f"{source}" if source is not None else "the batch"
        raise ConfigError(f"{where} holds no results: nothing to report")
    runs, manifest_note = _manifest_runs(manifest, source)
    report = None if labels is None else digest.gold_report()
    page = _Page(digest, runs, manifest_note, report, title, source, max_items)
    page.panel = panel_section(results, digest, labels)
    if criteria_labels is not None:
        from ..stats import criteria_gold_metrics

        page.criteria_gold = criteria_gold_metrics(digest.criteria.votes, criteria_labels)
    if given is not None:
        from ..stats import jury_shown_note

        page.criteria_only_gold = labels is None
        page.jury_note = jury_shown_note(len(given.jury_shown), len(given.ids))
    return page.render()


def _manifest_runs(
    manifest: Manifest | None, source: Path | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The manifest's runs (oldest first) and a note for the page when one was expected
    but could not be used.

    Raises:
        ConfigError: a manifest path given explicitly that cannot be read as JSON.
    """
    if isinstance(manifest, Mapping):
        document: object = dict(manifest)
    elif manifest is not None:
        path = Path(manifest)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the manifest ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise ConfigError(f"{path}: not a run manifest (invalid JSON: {exc})") from None
    elif source is not None and manifest_path(source).exists():
        path = manifest_path(source)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return [], f"the manifest {path.name} beside the results could not be read"
    else:
        return [], None
    runs = document.get("runs") if isinstance(document, dict) else None
    if not isinstance(runs, list):
        return [], "the manifest holds no runs"
    return [run for run in runs if isinstance(run, dict)], None


# -- formatting ----------------------------------------------------------------------------------


def _e(value: object) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def json_for_script(value: object) -> str:
    """JSON that cannot end the ``<script>`` element holding it, whatever its strings."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    table_id: str | None = None,
    numeric: Iterable[int] = (),
) -> str:
    """An HTML table; ``headers`` and cells are HTML already (escape text first)."""
    right = set(numeric)
    head = "".join(
        f'<th{" class=num" if i in right else ""} scope="col">{h}</th>'
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if i in right else ''}>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    ident = f' id="{_e(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _runtime_script(name: str) -> str:
    """A vendored runtime, ready to inline: without its source-map comment (no map ships)."""
    text = asset(name)
    lines = text.rstrip().splitlines()
    if lines and lines[-1].startswith("//# sourceMappingURL="):
        lines.pop()
    # A bundle holds no "</script" today; escaping keeps the page whole if one ever does.
    return "\n".join(lines).replace("</script", "<\\/script")


# -- the page ------------------------------------------------------------------------------------


class _Page:
    """One report being built: each section is a method returning HTML."""

    def __init__(
        self,
        batch: BatchDigest,
        runs: list[dict[str, Any]],
        manifest_note: str | None,
        gold: GoldReport | None,
        title: str | None,
        source: Path | None,
        max_items: int,
    ) -> None:
        self.batch = batch
        self.runs = runs
        self.manifest_note = manifest_note
        self.gold = gold
        self.source = source
        self.max_items = max_items
        self.title = title or (
            f"cross-judge report: {source.name}" if source else "cross-judge report"
        )
        self.stats = batch.critic_stats()
        self.cascade = batch.cascade
        self.pairs = batch.pairs
        self.rubric = len(batch.criteria) > 0
        self.specs: dict[str, dict[str, Any]] = {}
        recorded = [*batch.simulated_critics, *_simulated_in(runs)]
        self.simulated = [name for name in dict.fromkeys(recorded) if name in batch.critics]
        self.people = batch.human_critics
        self.criteria_gold: dict[str, GoldReport] = {}  # per criterion, with a rubric's gold
        self.criteria_only_gold = False  # the gold labels criteria only, no item
        self.jury_note: str | None = None  # some gold labels were made with the jury shown
        self.panel = ""  # the "Which panel" section, computed once by render_report
        self.columns = ItemColumns(
            critics=batch.critics,
            name=self._name,
            cascade=self.cascade,
            rubric=self.rubric,
            gold=batch.gold_label if gold is not None else None,
        )

    def render(self) -> str:
        nonce = secrets.token_urlsafe(18)
        sections = [
            self._overview(),
            self._provenance(),
            self._agreement(),
            self._critics(),
            criteria_section(self.batch.criteria, self._name) if self.rubric else "",
            criteria_gold_section(self.criteria_gold, self._name),
            self._confusion(),
            self._consensus(),
            self._tiers() if self.cascade else "",
            self._pairs() if self.pairs else "",
            self._disputed(),
            wrong_section(self.batch, self.columns, self.max_items) if self.gold else "",
            self.panel,
            self._footer(),
        ]
        runtimes = "".join(
            f'<script nonce="{nonce}">{_runtime_script(name)}</script>' for name in _RUNTIME_FILES
        )
        csp = (
            "default-src 'none'; "
            f"script-src 'nonce-{nonce}'; "
            "style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
        )
        # printable: a lone surrogate (an id, a label) is written as its escape, since no
        # UTF-8 page can hold it.
        return printable(
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="cross-judge {_e(__version__)}">'
            f"<title>{_e(self.title)}</title><style>{asset('report.css')}</style></head><body>"
            f"<header><h1>{_e(self.title)}</h1>{self._nav()}</header><main>"
            + "".join(sections)
            + "</main>"
            f'<script type="application/json" id="cj-specs">{json_for_script(self.specs)}</script>'
            f'{runtimes}<script nonce="{nonce}">{asset("report.js")}</script></body></html>\n'
        )

    def _nav(self) -> str:
        links = [
            ("overview", "Overview"),
            ("provenance", "Provenance"),
            ("agreement", "Agreement"),
            ("critics", "Critics"),
            *([("criteria", "Criteria")] if self.rubric else []),
            *([("criteria-gold", "Criteria against gold")] if self.criteria_gold else []),
            ("confusion", "Confusion"),
            ("consensus", "Consensus"),
        ]
        if self.cascade:
            links.append(("tiers", "Tiers"))
        if self.pairs:
            links.append(("pairs", "Pairs"))
        links.append(("disputed", "Disputed items"))
        if self.gold is not None:
            links.append(("wrong", "Wrong against gold"))
        if self.panel:
            links.append(("which-panel", "Which panel"))
        return "<nav>" + " ".join(f'<a href="#{a}">{t}</a>' for a, t in links) + "</nav>"

    def _chart(self, chart_id: str, spec: dict[str, Any], caption: str) -> str:
        self.specs[chart_id] = {
            "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
            "config": {"font": "system-ui, sans-serif", "view": {"stroke": None}},
            **_printable_data(spec),
        }
        return (
            f'<figure><div class="chart" id="{_e(chart_id)}" data-rendered="false"></div>'
            f"<figcaption>{caption}</figcaption></figure>"
        )

    # -- sections --------------------------------------------------------------------------------

    def _overview(self) -> str:
        batch = self.batch
        disputed = batch.n_disputed
        alpha = batch.reliability_alpha()
        cards = [
            ("items", str(len(batch)), "items"),
            ("critics", str(len(batch.critics)), "critics"),
            ("voting", _e(batch.voting), "voting"),
            ("alpha", _num(alpha), "Krippendorff's alpha (nominal)"),
            ("fleiss", _num(batch.fleiss_kappa()), "Fleiss' kappa"),
            ("disputed", str(disputed), "disputed items"),
            ("failed", str(batch.n_failed), "items with a failed call"),
            ("no-consensus", str(batch.n_no_consensus), "items with no consensus"),
            *self._gold_cards(),
            ("cost", _usd(batch.cost_usd), "cost"),
            (
                "tokens",
                f"{batch.usage.prompt_tokens:,} / {batch.usage.completion_tokens:,}",
                "tokens (prompt / completion)",
            ),
        ]
        body = "".join(
            f'<div class="card" data-stat="{key}"><div class="value">{value}</div>'
            f'<div class="what">{what}</div></div>'
            for key, value, what in cards
        )
        made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        origin = f" from <code>{_e(self.source)}</code>" if self.source else ""
        kinds = []
        if self.cascade:
            kinds.append("a cascade")
        if self.pairs:
            kinds.append("pairs")
        kind = f" ({' and '.join(kinds)})" if kinds else ""
        return (
            f'<section id="overview"><h2>Overview{kind}</h2><div class="cards">{body}</div>'
            f'<p class="muted">Report made {made}{origin} by cross-judge {_e(__version__)}. '
            "Calls no model: every number comes from the stored verdicts.</p>"
            + self._simulated_note()
            + "</section>"
        )

    def _gold_cards(self) -> list[tuple[str, str, str]]:
        """With gold: the labelled items whose consensus is wrong, and how many of them
        the panel was unanimous on."""
        if self.gold is None:
            return []
        wrong = self.batch.wrong_against_gold()
        unanimous = sum(1 for result in wrong if wrong_reasons(result) == ["unanimous"])
        return [
            ("wrong", f"{len(wrong)} of {len(self.batch.gold_results)}", "wrong against gold"),
            ("wrong-unanimous", str(unanimous), "wrong and unanimous"),
        ]

    def _simulated_note(self) -> str:
        if not self.simulated:
            return ""
        return f'<p class="note" id="simulated">{_e(simulated_note(self.simulated))}.</p>'

    def _name(self, critic: str) -> str:
        """A critic's name as HTML, marked when it is simulated or a person."""
        mark = ' <span class="sim">simulated</span>' if critic in self.simulated else ""
        if critic in self.people:
            mark += ' <span class="sim human">person</span>'
        return _e(critic) + mark

    def _provenance(self) -> str:
        parts = ['<section id="provenance"><h2>Provenance</h2>']
        if self.manifest_note:
            parts.append(f'<p class="note">{_e(self.manifest_note)}</p>')
        if self.runs:
            parts.append(self._runs_table())
            latest = self.runs[-1]
            parts.append(self._prompts_table(latest))
            parts.append(self._panel_table(latest))
        else:
            if not self.manifest_note:
                parts.append(
                    '<p class="note">No run manifest: what follows is what the verdicts '
                    "record. <code>cross-judge review</code> writes one beside its results "
                    "(<code>OUT.jsonl.manifest.json</code>).</p>"
                )
            parts.append(self._recorded_critics())
        parts.append("</section>")
        return "".join(parts)

    def _runs_table(self) -> str:
        rows = []
        for number, run in enumerate(self.runs, start=1):
            command = run.get("command")
            shown = " ".join(str(w) for w in command) if isinstance(command, list) else ""
            totals = run.get("totals") if isinstance(run.get("totals"), dict) else {}
            assert isinstance(totals, dict)
            summary = _totals_text(totals)
            shard = run.get("shard")
            rows.append(
                [
                    str(number),
                    _e(run.get("status", "?")),
                    _e(run.get("started_at") or ""),
                    _e(run.get("ended_at") or ""),
                    _e(
                        f"cross-judge {run.get('cross_judge', '?')}, "
                        f"Python {run.get('python', '?')}"
                    ),
                    f"<code>{_e(shown)}</code>",
                    _e(f"{shard['index']}/{shard['count']}")
                    if isinstance(shard, dict) and "index" in shard
                    else "all",
                    _e(summary),
                ]
            )
        headers = ["run", "status", "started", "ended", "versions", "command", "shard", "totals"]
        return "<h3>Runs</h3>" + _table(headers, rows, table_id="runs")

    def _prompts_table(self, run: dict[str, Any]) -> str:
        prompts = run.get("prompts")
        if not isinstance(prompts, dict) or not prompts:
            return ""
        rows = [
            [
                _e(name),
                _e(record.get("id") or "(inline prompt)"),
                _e(record.get("version") or ""),
                f'<code title="{_e(record.get("sha256") or "")}">'
                f"{_e(str(record.get('sha256') or '')[:12])}</code>",
            ]
            for name, record in prompts.items()
            if isinstance(record, dict)
        ]
        return "<h3>Prompts (latest run)</h3>" + _table(
            ["critic", "prompt id", "version", "sha256"], rows, table_id="prompts"
        )

    def _panel_table(self, run: dict[str, Any]) -> str:
        panel = run.get("panel") if isinstance(run.get("panel"), dict) else None
        if panel is None:
            return ""
        tier_of: dict[str, int] = {}
        tiers = panel.get("tiers")
        if isinstance(tiers, list):
            for index, tier in enumerate(tiers):
                if isinstance(tier, dict):
                    for name in tier.get("critics") or ():
                        tier_of[str(name)] = index
        rows = []
        for critic in panel.get("critics") or ():
            if not isinstance(critic, dict):
                continue
            name = str(critic.get("name", "?"))
            rows.append(
                [
                    self._name(name),
                    _e(critic.get("vendor", "")),
                    _e(critic.get("model", "")),
                    _e(tier_of.get(name, "")) if tier_of else "",
                    _e(_shown(critic.get("temperature"))),
                    _e(_shown(critic.get("weight"))),
                    _e(_shown(critic.get("labels"))),
                ]
            )
        headers = ["critic", "vendor", "model", "tier", "temperature", "weight", "labels"]
        if not tier_of:
            headers.pop(3)
            rows = [r[:3] + r[4:] for r in rows]
        voting = _e(_shown(panel.get("voting")))
        extra = f" &middot; panel file <code>{_e(panel.get('file', ''))}</code>"
        sha = panel.get("sha256")
        if sha:
            extra += f' (sha256 <code title="{_e(sha)}">{_e(str(sha)[:12])}</code>)'
        return f"<h3>Panel (latest run)</h3><p>voting {voting}{extra}</p>" + _table(
            headers, rows, table_id="panel"
        )

    def _recorded_critics(self) -> str:
        first = self.batch.first_verdicts
        rows = [
            [
                self._name(name),
                _e(v.vendor or ""),
                _e(v.model or ""),
                _e(v.prompt_id or ""),
                _e(v.prompt_version or ""),
                f"<code>{_e((v.prompt_sha256 or '')[:12])}</code>",
            ]
            for name in self.batch.critics
            if (v := first.get(name)) is not None
        ]
        return _table(
            ["critic", "vendor", "model", "prompt id", "version", "sha256"],
            rows,
            table_id="critics-recorded",
        )

    def _agreement(self) -> str:
        critics = self.batch.critics
        kappa = self.batch.pairwise_agreement("cohen")
        percent = self.batch.pairwise_agreement("percent")
        both = self.batch.shared_items()
        values: list[dict[str, Any]] = []
        for i, a in enumerate(critics):
            for j, b in enumerate(critics):
                shared = both[a, b]
                k = None if i == j else kappa.get((a, b))
                values.append(
                    {
                        "a": a,
                        "b": b,
                        "kappa": None if k is None else round(k, 4),
                        "text": "—" if i == j else ("n/a" if k is None else f"{k:.2f}"),
                        "percent": None if i == j else percent.get((a, b)),
                        "items": shared,
                    }
                )
        spec = {
            "data": {"values": values},
            "width": {"step": 56},
            "height": {"step": 40},
            "layer": [
                {
                    # invalid "show": a diagonal or undefined cell is drawn too (grey)
                    "mark": {"type": "rect", "tooltip": True, "invalid": "show"},
                    "encoding": {
                        "x": {"field": "b", "type": "nominal", "sort": critics, "title": None},
                        "y": {"field": "a", "type": "nominal", "sort": critics, "title": None},
                        "color": {
                            "condition": {"test": "datum.kappa === null", "value": "#eceff3"},
                            "field": "kappa",
                            "type": "quantitative",
                            "title": "Cohen's κ",
                            "scale": {"domain": [-1, 1], "scheme": "redblue"},
                        },
                        "tooltip": [
                            {"field": "a", "title": "critic"},
                            {"field": "b", "title": "with"},
                            {"field": "kappa", "title": "Cohen's kappa", "format": ".3f"},
                            {"field": "percent", "title": "agree", "format": ".1%"},
                            {"field": "items", "title": "items both answered"},
                        ],
                    },
                },
                {
                    "mark": {"type": "text", "fontSize": 12},
                    "encoding": {
                        "x": {"field": "b", "type": "nominal", "sort": critics},
                        "y": {"field": "a", "type": "nominal", "sort": critics},
                        "text": {"field": "text"},
                    },
                },
            ],
        }
        unique: list[list[str]] = []  # each pair once, in panel order
        seen: set[frozenset[str]] = set()
        for v in values:
            key = frozenset((v["a"], v["b"]))
            if v["a"] == v["b"] or key in seen:
                continue
            seen.add(key)
            unique.append(
                [
                    _e(v["a"]),
                    _e(v["b"]),
                    _num(v["kappa"]),
                    format_rate(v["percent"]),
                    str(v["items"]),
                ]
            )
        chart = (
            self._chart(
                "chart-agreement",
                spec,
                "Cohen's kappa of each pair of critics over the items both answered validly "
                "(1: always agree, 0: chance, below 0: worse than chance).",
            )
            if len(critics) > 1
            else '<p class="note">One critic: no pair to compare.</p>'
        )
        return (
            '<section id="agreement"><h2>Critic agreement</h2>'
            + chart
            + "<details><summary>as a table</summary>"
            + _table(
                ["critic", "with", "Cohen's kappa", "agree", "items both answered"],
                unique,
                table_id="agreement-table",
                numeric=(2, 3, 4),
            )
            + "</details></section>"
        )

    def _critics(self) -> str:
        rows = []
        rates: list[dict[str, Any]] = []
        latency: list[dict[str, Any]] = []
        cost: list[dict[str, Any]] = []
        for name, s in self.stats.items():
            message = next(iter(s.error_messages.values()), "")
            rows.append(
                [
                    self._name(name),
                    str(s.items),
                    str(s.valid),
                    str(s.errors),
                    str(s.parse_failures),
                    str(s.skipped),
                    format_rate(s.error_rate),
                    format_rate(s.parse_fail_rate),
                    format_rate(s.agreement),
                    _num(s.mean_elapsed_s, 3),
                    f"{s.usage.prompt_tokens:,} / {s.usage.completion_tokens:,}",
                    _usd(s.cost_usd),
                    f'<span class="msg">{_e(message)}</span>',
                ]
            )
            for measure, value in (("errors", s.error_rate), ("parse failures", s.parse_fail_rate)):
                rates.append({"critic": name, "measure": measure, "rate": value or 0.0})
            if s.mean_elapsed_s is not None:
                latency.append({"critic": name, "seconds": round(s.mean_elapsed_s, 4)})
            if s.cost_usd is not None:
                cost.append({"critic": name, "usd": s.cost_usd})
        critics = self.batch.critics
        charts = [
            self._chart(
                "chart-rates",
                {
                    "data": {"values": rates},
                    "mark": {"type": "bar", "tooltip": True},
                    "width": {"step": 28},
                    "height": 160,
                    "encoding": {
                        "x": {"field": "critic", "type": "nominal", "sort": critics, "title": None},
                        "xOffset": {"field": "measure"},
                        "y": {
                            "field": "rate",
                            "type": "quantitative",
                            "axis": {"format": ".0%"},
                            "title": "share of calls",
                            # all zero: still an axis to read the zeros on
                            "scale": {"domain": [0, max(0.1, *(r["rate"] for r in rates))]},
                        },
                        "color": {"field": "measure", "title": None},
                    },
                },
                "Failed calls (ERROR) and unparseable answers (PARSE_FAIL) per critic.",
            ),
            self._chart(
                "chart-latency",
                {
                    "data": {"values": latency},
                    "mark": {"type": "bar", "tooltip": True},
                    "height": 160,
                    "encoding": {
                        "x": {"field": "critic", "type": "nominal", "sort": critics, "title": None},
                        "y": {"field": "seconds", "type": "quantitative", "title": "mean s"},
                    },
                },
                "Mean latency of a call per critic (retries included).",
            ),
        ]
        if cost:
            charts.append(
                self._chart(
                    "chart-cost",
                    {
                        "data": {"values": cost},
                        "mark": {"type": "bar", "tooltip": True},
                        "height": 160,
                        "encoding": {
                            "x": {
                                "field": "critic",
                                "type": "nominal",
                                "sort": critics,
                                "title": None,
                            },
                            "y": {"field": "usd", "type": "quantitative", "title": "USD"},
                        },
                    },
                    "Cost per critic (critics whose cost is unknown are left out).",
                )
            )
        headers = [
            "critic",
            "items",
            "valid",
            "errors",
            "parse fails",
            "skipped",
            "error rate",
            "parse-fail rate",
            "agrees with consensus",
            "mean s",
            "tokens (prompt / completion)",
            "cost",
            "most common failure",
        ]
        return (
            '<section id="critics"><h2>Critics</h2><div class="charts">'
            + "".join(charts)
            + "</div>"
            + _table(headers, rows, table_id="critic-stats", numeric=range(1, 12))
            + "</section>"
        )

    def _confusion(self) -> str:
        critics = self.batch.critics
        if self.gold is not None:
            reference = "gold"
            confusion = {row.name: row.confusion for row in self.gold.rows}
            names = [*critics, "consensus"]
            score_rows = [
                [
                    _e(row.name),
                    f"{row.n_answered} / {row.n_gold}",
                    format_rate(row.coverage),
                    accuracy_html(row.accuracy, row.accuracy_interval),
                    _num(row.kappa),
                ]
                for row in self.gold.rows
            ]
            headers = ["", "answered / labelled", "coverage", "accuracy", "Cohen's kappa"]
            intro = (
                f"Each critic and the consensus against {self.gold.n_gold} gold labels "
                "(failed calls left out: read accuracy beside coverage), each accuracy with "
                f"its {self.gold.confidence:.0%} Wilson interval."
            )
        else:
            reference = "consensus"
            confusion = self.batch.against_consensus()
            names = list(critics)
            score_rows = []
            for name in critics:
                cells = confusion.get(name, {})
                total = sum(sum(row.values()) for row in cells.values())
                same = sum(cells.get(label, {}).get(label, 0) for label in cells)
                score_rows.append(
                    [_e(name), str(total), format_rate(same / total if total else None)]
                )
            headers = ["", "votes compared", "agrees with consensus"]
            intro = (
                "No gold labels: each critic against the consensus (a cascade's critic "
                "against its own tier's), items with no consensus left out. Pass "
                "<code>--gold GOLD.jsonl</code> to measure against labels."
            )
            if self.criteria_only_gold:
                intro = (
                    "The gold labels criteria only (see Criteria against gold): each critic "
                    "against the consensus (a cascade's critic against its own tier's), "
                    'items with no consensus left out. Add <code>"label"</code> to the gold '
                    "lines to measure the items' labels too."
                )
        values = [
            {"critic": name, "reference": ref, "answered": answered, "count": count}
            for name in names
            for ref, row in confusion.get(name, {}).items()
            for answered, count in row.items()
        ]
        spec = {
            "data": {"values": values},
            "facet": {"field": "critic", "type": "nominal", "sort": names, "title": None},
            "columns": 4,
            "spec": {
                "width": {"step": 30},
                "height": {"step": 30},
                "layer": [
                    {
                        "mark": {"type": "rect", "tooltip": True},
                        "encoding": {
                            "x": {"field": "answered", "type": "nominal", "title": "answered"},
                            "y": {"field": "reference", "type": "nominal", "title": reference},
                            "color": {
                                "field": "count",
                                "type": "quantitative",
                                "scale": {"scheme": "blues"},
                                "legend": None,
                            },
                        },
                    },
                    {
                        "mark": {"type": "text", "fontSize": 10},
                        "encoding": {
                            "x": {"field": "answered", "type": "nominal"},
                            "y": {"field": "reference", "type": "nominal"},
                            "text": {"field": "count"},
                        },
                    },
                ],
            },
            "resolve": {"scale": {"color": "independent"}},
        }
        chart = (
            self._chart(
                "chart-confusion",
                {**spec, "data": {"values": [v for v in values if v["count"]]}},
                f"Rows: the {reference} label; columns: the critic's answer.",
            )
            if values
            else '<p class="note">Nothing to compare.</p>'
        )
        if self.jury_note:
            intro += f' <span class="note" id="jury-shown">{_e(self.jury_note)}.</span>'
        return (
            f'<section id="confusion"><h2>Confusion against {reference}</h2><p>{intro}</p>'
            + chart
            + _table(headers, score_rows, table_id="confusion-table", numeric=range(1, 5))
            + ("" if self.gold is None else paired_table(self.gold))
            + "</section>"
        )

    def _consensus(self) -> str:
        counts = self.batch.consensus_counts()
        missing = self.batch.n_no_consensus
        values: list[dict[str, Any]] = [{"label": k, "items": n} for k, n in counts.items()]
        if missing:
            values.append({"label": "(no consensus)", "items": missing})
        total = len(self.batch)
        rows = [[_e(v["label"]), str(v["items"]), format_rate(v["items"] / total)] for v in values]
        spec = {
            "data": {"values": values},
            "mark": {"type": "bar", "tooltip": True},
            "height": {"step": 22},
            "width": 360,
            "encoding": {
                "y": {"field": "label", "type": "nominal", "sort": "-x", "title": None},
                "x": {"field": "items", "type": "quantitative", "title": "items"},
            },
        }
        return (
            '<section id="consensus"><h2>Consensus distribution</h2>'
            + self._chart(
                "chart-consensus",
                spec,
                "Items per consensus label; (no consensus): the strategy's fallback, no vote "
                "decided.",
            )
            + _table(["label", "items", "share"], rows, table_id="consensus-table", numeric=(1, 2))
            + "</section>"
        )

    def _tiers(self) -> str:
        rows = [
            [
                str(t.tier),
                _e(", ".join(t.critics)),
                str(t.asked),
                str(t.decided),
                str(t.abstained),
                format_rate(t.share_asked),
                format_rate(t.share_decided),
                format_rate(t.agreement),
                _usd(t.cost_usd),
            ]
            for t in self.batch.tier_stats()
        ]
        headers = [
            "tier",
            "critics",
            "asked",
            "decided",
            "abstained",
            "share asked",
            "share decided",
            "agreement where decided",
            "cost",
        ]
        return (
            '<section id="tiers"><h2>Cascade tiers</h2>'
            + _table(headers, rows, table_id="tiers-table", numeric=range(2, 9))
            + "</section>"
        )

    def _pairs(self) -> str:
        bias = self.batch.position_bias()
        rows = [
            [
                _e(name),
                str(s.answers),
                str(s.decisive),
                format_rate(s.first_position),
                str(s.pairs_both),
                str(s.flips),
                format_rate(s.flip_rate),
                _num(s.fairness, 2),
            ]
            for name, s in [*bias.critics.items(), ("panel", bias.panel)]
        ]
        headers = [
            "critic",
            "answers",
            "decisive",
            "picks the first shown",
            "pairs in both orders",
            "flips",
            "flip rate",
            "fairness",
        ]
        return (
            '<section id="pairs"><h2>Pairs: position bias</h2><p>A flip: the two orders of a '
            'pair disagreed once mapped back (marked <span class="flip">flip</span> in the '
            "table below). 0.5 first-shown picks and fairness 1 mean no lean.</p>"
            + _table(headers, rows, table_id="pairs-table", numeric=range(1, 8))
            + "</section>"
        )

    def _disputed(self) -> str:
        n_disputed = self.batch.n_disputed
        shown = self.batch.disputed[: self.max_items]
        left_out = n_disputed - len(shown)
        note = (
            f'<p class="note" id="disputed-left-out">Showing the first {len(shown)} of '
            f"{n_disputed} disputed items ({left_out} left out; raise max_items / "
            "--max-items).</p>"
            if left_out
            else ""
        )
        counts = self.batch.dispute_counts
        reasons = ", ".join(f"{_e(reason)} {n}" for reason, n in counts.most_common())
        return (
            '<section id="disputed"><h2>Disputed items</h2>'
            f"<p>{n_disputed} of {len(self.batch)} items need a look"
            + (f" ({reasons})" if reasons else "")
            + ": not unanimous, a failed call, no consensus, abstained or escalated by a "
            "cascade, or a pair whose orders disagreed."
            + (" The gold column marks a consensus that is wrong." if self.gold else "")
            + " Click a header to sort; type to filter.</p>"
            + note
            + items_table(
                shown,
                self.columns,
                table_id="disputed-table",
                search_id="search",
                count_id="shown-count",
                what="the disputed items",
            )
            + "</section>"
        )

    def _footer(self) -> str:
        versions = ", ".join(f"{name} {version}" for name, version in RUNTIME_VERSIONS.items())
        licenses = "".join(
            f"<h4>{_e(name.removeprefix('LICENSE.'))}</h4><pre>{_e(asset(name))}</pre>"
            for name in _LICENSE_FILES
        )
        return (
            f'<footer><p class="muted">Charts drawn by {versions} (BSD-3-Clause), inlined: this '
            "page needs no network.</p><details><summary>Third-party licenses</summary>"
            f"{licenses}</details></footer>"
        )


def _printable_data(value: Any) -> Any:
    """``value`` (a chart's spec) with every string :func:`printable`: the charts draw
    names and labels from it into the page, where an escape must stay an escape (the page's
    own ``printable`` would leave a JSON escape the script decodes back)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: _printable_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable_data(item) for item in value]
    return value


def _shown(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _simulated_in(runs: list[dict[str, Any]]) -> list[str]:
    """The critics the manifest's runs record as simulated (``options.simulated_critics``)."""
    names: list[str] = []
    for run in runs:
        options = run.get("options")
        listed = options.get("simulated_critics") if isinstance(options, dict) else None
        if isinstance(listed, list):
            names.extend(str(name) for name in listed)
    return names


def _totals_text(totals: Mapping[str, Any]) -> str:
    """A run's totals as one line: ``items judged 30, calls 90, ..., cost $0.0123`` (cost
    ``n/a`` when unknown, any other missing value ``n/a``); nested records are left out."""
    parts: list[str] = []
    for key, value in totals.items():
        if isinstance(value, dict):
            continue
        if key == "cost_usd":
            number = value if isinstance(value, (int, float)) else None
            parts.append(f"cost {_usd(number)}")
        else:
            parts.append(f"{key.replace('_', ' ')} {'n/a' if value is None else value}")
    return ", ".join(parts)
