"""The offline labelling page of a :class:`~cross_judge.stats.label_queue.LabelQueue`
(``queue.to_html(results)``, ``cross-judge label-queue``).

One self-contained HTML file: its styles, script and data are inlined, a
Content-Security-Policy forbids every fetch and lets only the page's own script run, so it
opens from disk with no server and no network. It shows the queued items one at a time, in
queue order: the text judged (``EnsembleVerdict.item``'s query and context when the
results store it, else only the id; a conversation as turns and a trajectory as
collapsible steps, failed tool calls marked, the reference beside the answer:
:mod:`._structure`), each critic's answer (label, confidence, reasoning; failed and
skipped calls marked, simulated critics said to be so) and the consensus. The jury (the
consensus and every critic's answer) is hidden by default, since people who see it lean
towards it and the estimates assume their labels are independent of it: ``h`` or the
**Show the jury** button shows it for the current item only (``show_jury=True``,
``label-queue --show-jury``, shows it on every item); each turn's or step's result, for a
prompt judged per turn or step, is the jury's too and hides with it. A person labels an
item with a button or a key (``1`` to ``9`` for the first nine labels, ``o`` for a label
of their own), moves with the arrow keys or ``j`` / ``k``, undoes with ``u`` and sees
every key with ``?``. Labels are kept in the browser's ``localStorage`` under the queue's
id (:func:`queue_id`), so a reload or a closed tab keeps them; **Export** downloads them
as ``labels.jsonl``: one ``{"id", "label", "probability", "jury_shown"}`` line per
labelled item, in queue order, ``jury_shown`` true when the jury had been shown on that
item before it was labelled. :func:`cross_judge.stats._gold.load_gold` (``--gold``,
``gold=``) reads it as it is; :func:`cross_judge.stats.estimates.estimate_share` refuses
the labels made with the jury shown unless told to count them.

The labels offered are those of the valid verdicts and the consensus labels of all the
results given (not only the queued items), in alphabetical order, so that the same batch
gives the same keys; the labels reserved for unmade judgements (``ABSTAIN``, ...) are
not offered, since no gold file may hold them.

Every text from the results (ids, item text, labels, reasoning, error messages, critic
names) is escaped: items and answers are untrusted. The page calls no model and computes
no statistic; it deliberately keeps no labels anywhere but the browser until exported.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._extensions import provide
from .._version import __version__
from ..errors import ConfigError
from ..results import BatchResult, call_failed
from ..verdict import RESERVED_KINDS, EnsembleVerdict, Verdict
from ._html import asset
from ._page import json_for_script
from ._structure import Look, beside_reference, structure_html
from ._summary import judged_text, printable

if TYPE_CHECKING:
    from ..stats.label_queue import LabelQueue

__all__ = ["EXPORT_NAME", "offered_labels", "queue_id", "render_label_page"]

EXPORT_NAME = "labels.jsonl"
"""The name the page's **Export** gives the downloaded labels."""

_SHORTCUTS = 9  # labels 1..9 have a key each; the rest are buttons only


def queue_id(queue: LabelQueue) -> str:
    """A short, stable id of ``queue`` (16 hex digits of a sha256 over its items, their
    probabilities, strategy, seed and population): the page keeps its labels under it, so
    two pages of the same queue share them and pages of different queues never do."""
    text = json.dumps(
        [
            queue.items,
            [queue.probabilities[i] for i in queue.items],
            queue.strategy,
            queue.seed,
            queue.population,
        ],
        ensure_ascii=True,
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def offered_labels(results: Iterable[EnsembleVerdict]) -> list[str]:
    """The labels the page offers: every valid verdict's label and every consensus label in
    ``results``, sorted (a cascade's verdicts of every tier count), less those reserved
    for unmade judgements (a cascade's ``ABSTAIN``). Empty when there is none; the page
    then offers only a label of one's own."""
    seen: set[str] = set()
    for result in results:
        seen.add(result.consensus)
        seen.update(v.kind for v in result.verdicts if v.error is None)
    return sorted(seen - RESERVED_KINDS)


@provide("label_page")
def render_label_page(
    queue: LabelQueue,
    results: BatchResult | Sequence[EnsembleVerdict],
    path: str | os.PathLike[str] | None = None,
    *,
    show_jury: bool = False,
    labels: Sequence[str] | None = None,
    simulated: Sequence[str] | None = None,
) -> str:
    """The labelling page of ``queue`` over ``results`` (see the module docstring), written
    to ``path`` (replacing it) when given; the page's text either way.

    ``show_jury``: show the jury's answers on every item from the start (each label then
    records ``"jury_shown": true``); by default they are hidden until asked for, item by
    item. ``labels`` and ``simulated`` stand in for what the page would read of all of
    ``results`` (:func:`offered_labels`, the batch's simulated critics), so that
    ``results`` may hold only the queued items (``cross-judge label-queue`` reads a large
    results file so). An empty queue gives a page that says there is nothing to label.

    Raises:
        ConfigError: a queued id that ``results`` does not hold (the queue was drawn from
            other results); the folder of ``path`` does not exist.
    """
    stored = list(results.verdicts if isinstance(results, BatchResult) else results)
    by_id: dict[str, EnsembleVerdict] = {}
    for result in stored:
        by_id.setdefault(result.query_id, result)
    missing = [item for item in queue.items if item not in by_id]
    if missing:
        shown = ", ".join(repr(i) for i in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ConfigError(
            f"the queue names {len(missing)} item(s) the results do not hold: {shown}{more}; "
            "draw the queue from these results (label_queue) or pass the results it came from"
        )
    target = None if path is None else Path(path)
    if target is not None and not target.parent.exists():
        raise ConfigError(f"{target.parent} does not exist; create it or choose another path")
    if simulated is None:
        simulated = list(results.simulated_critics) if isinstance(results, BatchResult) else []
    offered = offered_labels(stored) if labels is None else sorted(set(labels) - RESERVED_KINDS)
    queued = [by_id[i] for i in queue.items]
    page = _render(queue, queued, offered, list(simulated), show_jury=show_jury)
    if target is not None:
        target.write_text(page, encoding="utf-8")
    return page


# -- the page ------------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _asset(name: str) -> str:
    text = asset(name)
    # The script holds no "</script" today; escaping keeps the page whole if it ever does.
    return text.replace("</script", "<\\/script")


def _render(
    queue: LabelQueue,
    shown: list[EnsembleVerdict],
    labels: list[str],
    simulated: list[str],
    *,
    show_jury: bool,
) -> str:
    ident = queue_id(queue)
    nonce = secrets.token_urlsafe(18)
    csp = f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'"
    title = f"cross-judge label queue {ident}"
    data = {
        "queue": ident,
        "export": EXPORT_NAME,
        "shortcuts": _SHORTCUTS,
        "showJury": show_jury,
        "reserved": sorted(RESERVED_KINDS),
        # as the buttons' data-label shows them (printable), so a key sets the same label
        "labels": [printable(label) for label in labels],
        "items": [{"id": item, "probability": queue.probabilities[item]} for item in queue.items],
    }
    about = (
        f"{len(queue)} of {queue.population} items, chosen by {_e(queue.strategy)}"
        + ("" if queue.seed is None else f" (seed {_e(queue.seed)})")
        + f"; queue {ident}"
    )
    jury = (
        "The jury's answers are shown on every item (--show-jury): each label records "
        "that it was made seeing them."
        if show_jury
        else "The jury's answers are hidden, so that your label is your own: <kbd>h</kbd> "
        "shows them for one item, and the export records that you saw them."
    )
    sections = "".join(_item(i, r, len(shown), simulated) for i, r in enumerate(shown))
    body = sections or '<p class="empty">The queue is empty: nothing to label.</p>'
    return printable(
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="cross-judge {_e(__version__)}">'
        f"<title>{_e(title)}</title><style>{_asset('label_page.css')}</style></head>"
        f'<body data-queue="{ident}">'
        "<header><h1>Label queue</h1>"
        f'<p class="muted" id="about">{about}</p>'
        f'<p class="muted" id="jury-note">{jury}</p>'
        '<div class="bar"><span id="progress">0 of '
        f"{len(queue)} labelled</span>"
        '<button type="button" id="export" disabled>Export labels</button>'
        '<button type="button" id="jury-button" aria-pressed="false">Show the jury (h)</button>'
        '<button type="button" id="help-button">Keys (?)</button></div>'
        f'<p id="storage-note" class="note" hidden>This browser keeps no labels across a '
        f"reload here: export before closing the page.</p>"
        "<noscript><p class=note>The page needs JavaScript to record labels.</p></noscript>"
        f"</header><main>{_buttons(labels)}{body}</main>{_help()}"
        f'<script type="application/json" id="cj-queue">{json_for_script(data)}</script>'
        f'<script nonce="{nonce}">{_asset("label_page.js")}</script></body></html>\n'
    )


def _buttons(labels: list[str]) -> str:
    buttons = "".join(
        f'<button type="button" class="choice" data-label="{_e(label)}">'
        + (f"<kbd>{n}</kbd> " if n <= _SHORTCUTS else "")
        + f"{_e(label)}</button>"
        for n, label in enumerate(labels, start=1)
    )
    return (
        '<div class="choices" id="choices">'
        f"{buttons}"
        '<form id="other-form" class="other"><label><kbd>o</kbd> other: '
        '<input type="text" id="other" autocomplete="off" placeholder="a label of your own">'
        '</label><button type="submit">Set</button></form>'
        '<span id="other-note" class="muted" hidden></span>'
        '<button type="button" id="clear"><kbd>u</kbd> undo</button></div>'
    )


def _help() -> str:
    keys = [
        ("1 … 9", "label the item (the buttons' numbers) and go to the next"),
        ("o", "type a label of your own; Enter sets it"),
        ("→ or j", "next item"),
        ("← or k", "previous item"),
        ("n", "next unlabelled item"),
        ("u", "undo the last label (or clear this item's)"),
        ("h", "show or hide the jury's answers on this item (the export records it)"),
        ("?", "show or hide this help; Esc closes it"),
    ]
    rows = "".join(f"<tr><th><kbd>{_e(k)}</kbd></th><td>{_e(w)}</td></tr>" for k, w in keys)
    return (
        '<aside id="help" hidden><h2>Keys</h2>'
        f"<table>{rows}</table>"
        f"<p>Labels stay in this browser until you export them: <b>Export labels</b> "
        f"downloads <code>{EXPORT_NAME}</code> for <code>--gold</code>.</p></aside>"
    )


_JURY_LOOK = Look(jury=True)  # the unit results hide with the jury's answers


def _item(index: int, result: EnsembleVerdict, total: int, simulated: list[str]) -> str:
    text = judged_text(result, answer=not beside_reference(result))
    structure = structure_html(result, _JURY_LOOK)
    if text or structure:
        judged = (
            "".join(
                f'<div class="field">{_e(name)}</div><div class="text">{_e(value)}</div>'
                for name, value in text
            )
            + structure
        )
    else:
        judged = '<p class="muted">The results store no text for this item: only its id.</p>'
    if result.fallback or result.n_valid == 0:
        consensus = (
            f'<span class="label fallback">{_e(result.consensus)}</span> '
            '<span class="muted">(no vote decided: the strategy\'s fallback)</span>'
        )
    else:
        consensus = (
            f'<span class="label">{_e(result.consensus)}</span> '
            f'<span class="muted">agreement {result.agreement_pct:.0%} of '
            f"{result.n_valid} valid, {_e(result.voting)}</span>"
        )
    if result.score is not None:
        consensus += f' <span class="muted">score {result.score:.3g}</span>'
    if result.tier is not None:
        consensus += f' <span class="muted">decided by tier {result.tier}</span>'
    answers = "".join(_answer(v, simulated) for v in result.verdicts)
    return (
        f'<section class="item" data-index="{index}" hidden>'
        f'<h2><span class="position">{index + 1} of {total}</span> '
        f'<span class="id">{_e(result.query_id)}</span></h2>'
        '<p class="yours">your label: <span class="given"></span></p>'
        f'<div class="judged">{judged}</div>'
        '<p class="jury-hidden muted">The jury\'s answers are hidden: <kbd>h</kbd> shows them '
        "for this item.</p>"
        f'<div class="jury"><h3>Consensus</h3><p class="consensus">{consensus}</p>'
        f'<h3>Critics</h3><ul class="answers">{answers}</ul></div>'
        "</section>"
    )


def _answer(verdict: Verdict, simulated: list[str]) -> str:
    name = verdict.critic_id or "(unnamed critic)"
    sim = ' <span class="sim">simulated</span>' if verdict.critic_id in simulated else ""
    if verdict.error is None and verdict.kind != "SKIPPED":
        confidence = (
            f'<span class="conf">{verdict.confidence:.0%}</span>'
            if verdict.confidence_stated
            else '<span class="conf">no confidence stated</span>'
        )
        head = f'<span class="label">{_e(verdict.kind)}</span> {confidence}'
        reason = f'<div class="reason">{_e(verdict.reasoning)}</div>' if verdict.reasoning else ""
        return f'<li class="answer"><b>{_e(name)}</b>{sim}: {head}{reason}</li>'
    if call_failed(verdict):
        marker, why = "failed", "call failed"
    elif verdict.kind == "PARSE_FAIL":
        marker, why = "parse", "answer unreadable"
    else:
        marker, why = "skipped", "not asked"
    message = verdict.error or ""
    return (
        f'<li class="answer {marker}"><b>{_e(name)}</b>{sim}: '
        f'<span class="label {marker}">{_e(verdict.kind)}</span> '
        f'<span class="muted">({why})</span>'
        + (f'<div class="msg">{_e(message)}</div>' if message else "")
        + "</li>"
    )
