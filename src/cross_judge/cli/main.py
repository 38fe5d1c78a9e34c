"""The ``cross-judge`` command.

Subcommands:

* ``review ITEMS.jsonl --panel PANEL.yaml --out OUT.jsonl``: judge every item with the
  panel, appending each result to OUT as it finishes (resumable with ``--resume``), then
  print a summary of the whole of OUT. One review at a time holds OUT (a lock file beside
  it, see :mod:`cross_judge._lock`); ``--resume`` refuses a panel that judges differently
  from the one OUT's last run used unless ``--allow-panel-change``; ``--budget-usd`` caps
  OUT as a whole, counting what its results already cost. A panel file with ``tiers:`` is
  a cascade: each item goes to the next tier only when the escalation rule says so, or to
  every tier with ``--all-tiers`` (the results ``calibrate`` needs). ``--shard i/N``
  judges only the items whose id falls in shard ``i`` of ``N``
  (:func:`cross_judge.batch.shard_of`), so ``N`` machines split a file without Ray.
* ``revote OUT.jsonl --voting NAME``: the same verdicts under another strategy; no model
  is called, and no existing file is ever overwritten.
* ``stats OUT.jsonl``: agreement statistics of a finished run; with ``--gold`` the critics
  against labels, and with ``--fit-confidence`` each critic's confidence calibration fitted
  on them, printed as the ``calibration:`` lines for the panel file. No model is called.
* ``calibrate FULL.jsonl --gold GOLD.jsonl``: choose a cascade's escalation thresholds on
  labelled items (results of ``review --all-tiers``) so that its agreement with the labels
  is guaranteed; prints the fit and the ``escalate:`` block for the panel file. No model is
  called.
* ``prompts list | show ID | validate FILE``: the packaged prompts, and checking a new one.
* ``cache stats | clear [--path FILE]``: the response cache's size and age; emptying it.
* ``demo``: the full pipeline offline, against simulated critics; ``version``.

Exit codes: 0 done; 1 finished, but some items were skipped for bad input or had a failed
call (``calibrate``: no threshold reaches the target, so there is no guarantee;
``stats --fit-confidence``: a critic's confidence could not be calibrated); 2 usage or
configuration error (nothing was billed); 130 interrupted. Errors are
printed as ``cross-judge: error: <message>`` on stderr, never as a traceback. Results and
summaries go to stdout; progress, warnings and notes to stderr.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import ConfigError, ErrorKind

if TYPE_CHECKING:
    from anyio import CancelScope
    from anyio.abc import TaskStatus
    from rich.console import Console

    from ..batch.provider_jobs import BatchOptions
    from ..batch.runner import BatchResult, Item, Mode, ResultsFile
    from ..budget import Budget
    from ..cascade import Cascade
    from ..cascade_calibration import CascadeFit
    from ..critic.cache import ResponseCache
    from ..critic.critic import Critic
    from ..critic.prompts import PromptSpec
    from ..ensemble import Ensemble
    from ..report.manifest import RunManifest
    from ..stats.confidence_calibration import CalibrationMethod, ConfidenceCalibration
    from ..verdict import EnsembleVerdict

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

LEVELS = ("nominal", "ordinal", "interval", "ratio")
_SHOWN_IDS = 5


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _dollars(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of US dollars, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of US dollars >= 0, got {text!r}")
    return value


def _names(text: str) -> frozenset[str]:
    names = frozenset(n.strip().lower() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(
            f"expected vendor names such as openai,custom; got {text!r}"
        )
    return names


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def _shard(text: str) -> tuple[int, int]:
    """``"i/N"`` -> ``(i, N)``, whole numbers with 1 <= i <= N."""
    fix = (
        "expected i/N, this machine's shard i of N (whole numbers, 1 <= i <= N), "
        f"e.g. --shard 2/8; got {text!r}"
    )
    index, slash, count = text.strip().partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(fix) from None
    if not slash or n < 1 or not 1 <= i <= n:
        raise argparse.ArgumentTypeError(fix)
    return i, n


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cross-judge",
        description="Ask several LLMs to judge the same item; get one verdict you can trust.",
    )
    parser.add_argument("--version", action="version", version=f"cross-judge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    review = sub.add_parser(
        "review",
        help="judge every item of a JSONL file with a panel; resumable",
        description=(
            "Judge each item of ITEMS.jsonl (one JSON object per line: id, query, context, "
            "meta; other keys are kept in meta) with the critics of PANEL.yaml, appending "
            "each result to OUT.jsonl as soon as it is ready. Bad lines are reported with "
            "their line number and skipped. Interrupted runs continue with --resume. One "
            "review at a time writes OUT: a second one exits, naming the first."
        ),
    )
    review.add_argument("items", metavar="ITEMS.jsonl", help="the items to judge")
    review.add_argument("--panel", required=True, metavar="PANEL.yaml", help="the panel file")
    review.add_argument("--out", required=True, metavar="OUT.jsonl", help="results file")
    review.add_argument(
        "--concurrency",
        type=_positive_int,
        metavar="N",
        help="items in flight at once (default: the panel's concurrency, else 32)",
    )
    review.add_argument(
        "--resume",
        action="store_true",
        help="continue a run: skip the items whose ids are already in OUT",
    )
    review.add_argument(
        "--retry-failed",
        action="store_true",
        help=(
            "continue a run and judge again the items whose result in OUT has a failed call "
            "(their lines are removed from OUT first); implies --resume"
        ),
    )
    review.add_argument(
        "--allow-panel-change",
        action="store_true",
        help=(
            "with --resume: continue OUT although the panel (voting, critics or prompts) "
            "differs from the one its earlier runs used; refused otherwise"
        ),
    )
    review.add_argument(
        "--budget-usd",
        type=_dollars,
        metavar="X",
        help=(
            "spend at most X dollars on OUT as a whole: a resumed run counts what OUT's "
            "results already cost. A call whose worst case no longer fits is not made (its "
            "verdict is SKIPPED, error_kind budget); needs known model prices"
        ),
    )
    review.add_argument(
        "--prices",
        metavar="FILE",
        help=(
            "a YAML price file (the shape of cross_judge/prices.yaml) for models the shipped "
            "table lacks, e.g. a custom endpoint's; its prices win"
        ),
    )
    review.add_argument(
        "--cache",
        nargs="?",
        const=True,
        metavar="PATH",
        help=(
            "reuse stored answers and store new valid ones (default file: see "
            "'cross-judge cache stats'); a re-run judges cached items without calling anyone"
        ),
    )
    review.add_argument(
        "--all-tiers",
        action="store_true",
        help=(
            "for a cascade panel (tiers:): ask every tier on every item, not only the items "
            "the escalation rule sends on. Costs every tier; stores the results "
            "'cross-judge calibrate' needs"
        ),
    )
    review.add_argument(
        "--shard",
        type=_shard,
        metavar="i/N",
        help=(
            "judge only shard i of N (1 <= i <= N): the items whose id hashes to it "
            "(cross_judge.batch.shard_of), the same on every machine and in any input order, "
            "so N machines, one shard each, judge every item once; items of other shards "
            "are passed over. --resume needs the same shard"
        ),
    )
    review.add_argument(
        "--mode",
        choices=("live", "batch"),
        default="live",
        help=(
            "live (default): call each vendor at once. batch: send the calls of critics on "
            "vendors with a batch API (see --batch-vendors) through it, at about half the "
            "price, results within the vendor's window (24 h); the others run live. The "
            "submitted batches are recorded in OUT.batches.jsonl, so --resume after a kill "
            "picks them up instead of paying twice"
        ),
    )
    review.add_argument(
        "--batch-vendors",
        type=_names,
        metavar="NAMES",
        help=(
            "with --mode batch: the comma-separated vendors whose batch API to use "
            "(default: openai,anthropic); e.g. custom for an OpenAI-compatible gateway that "
            "serves /v1/files and /v1/batches"
        ),
    )
    review.add_argument(
        "--deadline",
        type=_seconds,
        metavar="SECONDS",
        help=(
            "with --mode batch: stop waiting for batches after SECONDS; what is not back "
            "is cancelled and asked live"
        ),
    )
    review.add_argument(
        "--poll",
        type=_seconds,
        metavar="SECONDS",
        help="with --mode batch: seconds before the first poll of a batch (default 30; "
        "later polls back off up to 10 minutes)",
    )
    review.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (by default it is drawn when stderr is a terminal)",
    )

    revote = sub.add_parser(
        "revote",
        help="re-aggregate stored verdicts with another strategy (no model calls)",
        description=(
            "Apply another voting strategy to the verdicts stored in OUT.jsonl and count the "
            "items whose consensus changes. Calls no model. With --out the new results are "
            "written to NEW.jsonl, which must not exist yet: results are never overwritten."
        ),
    )
    revote.add_argument("results", metavar="OUT.jsonl", help="results of cross-judge review")
    revote.add_argument("--voting", required=True, metavar="NAME", help="strategy name")
    revote.add_argument(
        "--voting-kwargs",
        metavar="JSON",
        help='strategy arguments as a JSON object, e.g. \'{"priority": ["REJECT"]}\'',
    )
    revote.add_argument("--out", metavar="NEW.jsonl", help="write the re-voted results here")

    stats = sub.add_parser(
        "stats",
        help="agreement statistics of a finished run",
        description=(
            "Krippendorff's alpha, Fleiss' kappa, pairwise critic agreement, per-critic rates "
            "and consensus counts of the results in OUT.jsonl; for pairs, each critic's "
            "position bias (first-position and flip rates) and length bias, and for critics "
            "sampled more than once, their self-agreement. With --gold, the critics and "
            "the consensus against the labels; with --fit-confidence too, each critic's "
            "confidence calibration fitted on them and the calibration: lines to paste into "
            "the panel file. Calls no model."
        ),
    )
    stats.add_argument("results", metavar="OUT.jsonl", help="results of cross-judge review")
    stats.add_argument(
        "--level",
        choices=LEVELS,
        default="nominal",
        help="measurement level for Krippendorff's alpha (default nominal)",
    )
    stats.add_argument(
        "--order",
        metavar="LOW,...,HIGH",
        help="for --level ordinal over text labels: the labels from low to high",
    )
    stats.add_argument(
        "--gold",
        metavar="GOLD.jsonl",
        help=(
            'labels to measure the critics and the consensus against: {"id", "label"} lines '
            "(partial gold is fine): accuracy, Cohen's kappa, coverage, Brier score, "
            "calibration error, and the log-odds weights they earn"
        ),
    )
    stats.add_argument(
        "--ci",
        type=_fraction,
        metavar="LEVEL",
        help="with --gold: bootstrap intervals at this level (e.g. 0.95) for accuracy and kappa",
    )
    stats.add_argument(
        "--fit-confidence",
        choices=("temperature", "isotonic"),
        help=(
            "with --gold: fit each critic's confidence calibration on the labelled items "
            "(temperature or isotonic scaling of the confidence it states), print its "
            "calibration error before and after, and the calibration: lines to paste under "
            "the critics of the panel file. Exit code 1 when a critic cannot be calibrated "
            "(named on stderr)"
        ),
    )

    _add_calibrate_parser(sub)
    _add_report_parser(sub)

    prompts = sub.add_parser("prompts", help="list, show or validate judge prompts")
    prompts.set_defaults(prompts_parser=prompts)
    actions = prompts.add_subparsers(dest="prompts_command", metavar="ACTION")
    actions.add_parser("list", help="the packaged prompts")
    show = actions.add_parser("show", help="print one prompt's fields")
    show.add_argument("ref", metavar="ID", help="e.g. taxonomy-review@1, or a file path")
    validate = actions.add_parser("validate", help="check a prompt file")
    validate.add_argument("file", metavar="FILE", help="a prompt YAML file")

    _add_cache_parser(sub)

    demo = sub.add_parser(
        "demo",
        help="judge a sample taxonomy offline with three simulated critics",
        description=(
            "Runs the real pipeline (prompt, HTTP, retries, parsing, voting) against a local "
            "simulated vendor on 127.0.0.1. No API key, no network, no model download."
        ),
    )
    demo.add_argument(
        "--latency-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="multiply the simulated critics' latencies by X (default 1.0)",
    )
    demo.add_argument(
        "--mode",
        choices=("live", "batch"),
        default="live",
        help="batch: send every call through the simulator's OpenAI Batch API instead",
    )
    sub.add_parser("version", help="print the version")
    return parser


# -- demo ---------------------------------------------------------------------------------------


def _run_demo(latency_scale: float, mode: Mode = "live") -> int:
    import anyio
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from .demo import run_demo

    if latency_scale < 0:
        raise ConfigError("--latency-scale must be >= 0")
    rows, facts = anyio.run(lambda: run_demo(latency_scale=latency_scale, mode=mode))
    console = Console()
    console.print(
        "[bold]cross-judge demo[/bold]: the critics are [bold yellow]simulated[/bold yellow] "
        f"by cross_judge.testing.VendorServer at {facts['server_url']}. Their answers come "
        "from a seeded random generator, not a language model. Everything else is the real "
        f"pipeline: prompt {facts['prompt']}, HTTP with retries, tolerant parsing, majority "
        "vote. No API key, no network."
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("candidate category", no_wrap=True, overflow="ellipsis", max_width=24)
    for name in ["gold", *facts["critics"], "vote"]:
        table.add_column(name, no_wrap=True, min_width=6)
    table.add_column("agree", justify="right", no_wrap=True)
    for row in rows:
        cells = []
        for v in row.verdicts:
            label = v.kind if v.is_valid else f"[red]{v.kind}[/red]"
            cells.append(label + ("[yellow]*[/yellow]" if v.attempts > 1 else ""))
        mark = "[green]" if row.consensus == row.gold else "[red]"
        table.add_row(
            row.item,
            row.gold,
            *cells,
            f"{mark}{row.consensus}[/]",
            f"{row.agreement:.0%}",
        )
    console.print(table)
    if facts["retried_calls"]:
        console.print("[yellow]*[/yellow] answered after a retry (the vendor sent 429 first)")
    if mode == "batch":
        how = (
            f"{facts['batch_requests']} requests in {facts['batches']} provider batches, "
            f"{facts['batch_polls']} polls, {facts['requests']} live requests, "
            f"{facts['failed_calls']} failed"
        )
    else:
        how = (
            f"{facts['requests']} HTTP requests, {facts['retried_calls']} retried, "
            f"{facts['failed_calls']} failed"
        )
    console.print(
        f"{len(rows)} items x {len(facts['critics'])} critics = {facts['calls']} verdicts "
        f"({how}) in {facts['elapsed_s']:.2f} s; "
        f"consensus matched gold on {facts['correct']}/{len(rows)} items."
    )
    return EXIT_OK if facts["failed_calls"] == 0 else EXIT_FAILED


# -- shared helpers -----------------------------------------------------------------------------


def _stdout() -> Console:
    from rich.console import Console

    return Console(soft_wrap=False)


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def _check_prices(panel: Ensemble | Cascade) -> None:
    """Raise, for a ``--budget-usd`` run, naming every critic (of every tier) whose model
    has no known price and the ``--prices`` file that would give it one (the library's
    message points to ``register_price``, which a command-line user cannot call)."""
    missing = [c for c in panel.critics if c.price() is None]
    if not missing:
        return
    by_vendor: dict[str, dict[str, None]] = {}
    for critic in missing:
        by_vendor.setdefault(critic._endpoint().name, {})[critic.model] = None
    lines = "".join(
        f"      {vendor}:\n        models:\n"
        + "".join(
            f"          {json.dumps(model)}: {{input: ..., output: ...}}\n" for model in models
        )
        for vendor, models in by_vendor.items()
    )
    names = ", ".join(f"{c.name!r} ({c.model} on {c._endpoint().name})" for c in missing)
    raise ConfigError(
        f"--budget-usd needs the price of every critic's model, and none is known for "
        f"{names}; pass --prices FILE with a YAML price file such as\n"
        f"    vendors:\n{lines}"
        "(USD per million input and output tokens; the shipped table is "
        "cross_judge/prices.yaml)"
    )


def _note(console: Console, message: str) -> None:
    """A plain line on ``console``: no markup (ids and paths may hold brackets), no wrapping."""
    _say(console, f"cross-judge: {message}")


def _say(console: Console, text: str) -> None:
    """A plain line of the report: no markup, no wrapping (paths and ids stay whole)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _shown(ids: Sequence[str]) -> str:
    listed = ", ".join(repr(i) for i in ids[:_SHOWN_IDS])
    more = len(ids) - _SHOWN_IDS
    return listed + (f" and {more} more" if more > 0 else "")


def _read_results(path: str, *, slim: bool) -> BatchResult:
    from ..batch.runner import BatchResult

    if _torn_tail(path):
        raise ConfigError(
            f"{path}: the last line is torn (a run was stopped while writing it); "
            "run the same review again with --resume, which repairs it"
        )
    batch = BatchResult.from_jsonl(path, slim=slim)
    if not batch.verdicts:
        raise ConfigError(f"{path} holds no results")
    return batch


def _torn_tail(path: str) -> bool:
    """True if the file's last line lacks its newline (a writer was killed mid-line)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return False
            handle.seek(size - 1)
            return handle.read(1) != b"\n"
    except OSError:  # missing or unreadable: the reader reports it
        return False


# -- review -------------------------------------------------------------------------------------


class _ItemReader:
    """The items of a JSONL file, read one line at a time as the batch asks for them.

    Lines that cannot be judged are reported (with their line number) and skipped: not
    JSON, not an object, no usable ``query``, a context missing a template field, an id
    seen on an earlier line. Items whose ids are in ``done`` (a resumed run) are skipped
    silently and counted. With ``shard`` ``(i, N)``, so are the items of other shards
    (:func:`~cross_judge.batch.shard_of`), before the duplicate check, so a duplicate is
    reported by its own shard's run only; a line that is not an item has no id to place
    it, and every shard's run reports it.
    """

    def __init__(
        self,
        path: Path,
        critics: Sequence[Critic],
        done: set[str],
        console: Console,
        shard: tuple[int, int] | None = None,
    ) -> None:
        self.path = path
        self.critics = critics
        self.done = done
        self.console = console
        self.shard = shard
        self.bad_lines = 0
        self.already_done = 0
        self.other_shards = 0

    def __iter__(self) -> Iterator[Item]:
        from ..batch.runner import Item, ItemError, shard_of
        from ..errors import PromptError

        seen: dict[str, int] = {}
        with open(self.path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                if not raw.strip():
                    continue
                try:
                    value = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    self._skip(number, f"not UTF-8 text (byte {exc.start})")
                    continue
                except RecursionError:
                    self._skip(number, "not JSON (nested too deeply)")
                    continue
                except ValueError as exc:
                    reason = (
                        f"{exc.msg} at column {exc.colno}"
                        if isinstance(exc, json.JSONDecodeError)
                        else str(exc)
                    )
                    self._skip(number, f"not JSON ({reason})")
                    continue
                if not isinstance(value, dict):
                    self._skip(
                        number, f"expected a JSON object with 'query', got {_json_type(value)}"
                    )
                    continue
                try:
                    item = Item.from_value(value)
                except ItemError as exc:
                    self._skip(number, str(exc))
                    continue
                if self.shard is not None and shard_of(item.id, self.shard[1]) != self.shard[0]:
                    self.other_shards += 1
                    continue
                first = seen.get(item.id)
                if first is not None:
                    self._skip(number, f"duplicate id {item.id!r} (first on line {first})")
                    continue
                seen[item.id] = number
                if item.id in self.done:
                    self.already_done += 1
                    continue
                try:
                    for critic in self.critics:
                        critic.render_prompt(item.query, item.context)
                except PromptError as exc:
                    self._skip(number, f"id {item.id!r}: {exc}")
                    continue
                yield item

    def _skip(self, number: int, reason: str) -> None:
        self.bad_lines += 1
        _note(self.console, f"{self.path}:{number}: skipped: {reason}")


_EXPECTED_ITEMS = (
    'expected JSON Lines: one JSON object per line, e.g. {"id": "1", "query": "text to judge"}'
)
_SNIFF_BYTES = 65536
_SNIFF_LINES = 5


def _check_items_format(path: Path) -> None:
    """Raise one :class:`ConfigError` saying what ``path`` looks like when it is plainly not
    JSON Lines of objects: empty, UTF-16, a JSON array, one JSON document over several
    lines, CSV, or other text. Decided from its first few lines (up to 64 KiB): as soon
    as one of them is a JSON object the file is read line by line, each bad line reported
    on its own, so one damaged line never stops a run.
    """
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        more = bool(handle.read(1))
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise ConfigError(f"{path} is UTF-32 text; save it as UTF-8 ({_EXPECTED_ITEMS})")
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError(f"{path} is UTF-16 text; save it as UTF-8 ({_EXPECTED_ITEMS})")
    head = head.removeprefix(codecs.BOM_UTF8)
    lines = [line.strip() for line in head.split(b"\n")]
    if more:
        lines.pop()  # maybe cut short by the sniff limit
    sample = [line for line in lines if line][:_SNIFF_LINES]
    if not sample:
        if more:  # 64 KiB of blank lines, then something: let the reader see it
            return
        raise ConfigError(f"{path} is empty: there are no items to judge ({_EXPECTED_ITEMS})")
    values = [_json_or_none(line) for line in sample]
    first = sample[0]
    shown = first[:80].decode("utf-8", "replace")
    # One JSON value over several lines (pretty-printed): the whole of a small file parses
    # as one; a large one starts with a line that is only its opening bracket.
    whole = _json_or_none(head) if not more and len(sample) > 1 else None
    opening = values[0] is None and (first.startswith(b"[") or first == b"{")
    if (
        isinstance(whole, list)
        or (opening and first.startswith(b"["))
        or (isinstance(values[0], list) and not any(isinstance(v, dict) for v in values))
    ):
        raise ConfigError(
            f"{path} holds a JSON array, not JSON Lines ({_EXPECTED_ITEMS}); convert it with "
            f"e.g. jq -c '.[]' {shlex.quote(str(path))} > items.jsonl"
        )
    if isinstance(whole, dict) or opening:
        raise ConfigError(
            f"{path} holds a JSON document spread over several lines (line 1: {shown!r}), "
            f"not JSON Lines ({_EXPECTED_ITEMS}); write each item on one line, e.g. with "
            "jq -c"
        )
    if any(isinstance(value, dict) for value in values):
        return
    delimiter = _csv_delimiter(sample, path)
    if delimiter is not None:
        name = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}[delimiter]
        option = "" if delimiter == "," else f", delimiter={delimiter!r}"
        convert = (
            "import csv, json, sys; [print(json.dumps(row)) for row in csv.DictReader("
            f"open(sys.argv[1], newline='', encoding='utf-8'){option})]"
        )
        raise ConfigError(
            f"{path} looks like CSV ({name}-separated; line 1: {shown!r}), not JSON Lines "
            f"({_EXPECTED_ITEMS}); convert it, with a 'query' column, e.g. python -c "
            f"{shlex.quote(convert)} {shlex.quote(str(path))} > items.jsonl"
        )
    raise ConfigError(
        f"{path} is not JSON Lines: none of its first {_count(len(sample), 'line')} is a "
        f"JSON object (line 1: {shown!r}); {_EXPECTED_ITEMS}"
    )


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def _csv_delimiter(sample: list[bytes], path: Path) -> str | None:
    """The delimiter if ``sample`` (lines that are not JSON) reads as CSV with at least two
    columns in every line, else ``None``; a ``.csv`` or ``.tsv`` name settles it."""
    import csv

    text = "\n".join(line.decode("utf-8", "replace") for line in sample)
    suffix = path.suffix.lower()
    try:
        dialect = csv.Sniffer().sniff(text, delimiters=",\t;|")
    except csv.Error:
        return "\t" if suffix == ".tsv" else "," if suffix == ".csv" else None
    rows = list(csv.reader(text.splitlines(), dialect))
    if suffix in (".csv", ".tsv") or all(len(row) >= 2 for row in rows):
        return str(dialect.delimiter)
    return None


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"


def _count_lines(path: Path) -> int:
    """Non-blank lines, for the progress bar's total."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def _count_shard_items(path: Path, shard: tuple[int, int], done: set[str]) -> int:
    """The items of ``shard`` not in ``done``, for the progress bar's total: one pass over
    the file before the run (only when the bar is drawn). Bad lines are not counted."""
    from ..batch.runner import Item, ItemError, shard_of

    index, count = shard
    total = 0
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                value = json.loads(raw.removeprefix(codecs.BOM_UTF8))
                if not isinstance(value, dict):
                    continue
                item = Item.from_value(value)
            except (ValueError, RecursionError, ItemError):  # bad lines: the reader says why
                continue
            total += shard_of(item.id, count) == index and item.id not in done
    return total


@dataclass
class _RunState:
    interrupted: bool = False
    written: int = 0
    calls: int = 0
    cache_hits: int = 0
    budget_skips: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    def count(self, result: EnsembleVerdict) -> None:
        """Add one finished result to this run's totals."""
        self.written += 1
        for verdict in result.verdicts:
            self.calls += verdict.attempts
            self.cache_hits += verdict.cached
            self.budget_skips += verdict.error_kind is ErrorKind.BUDGET
        self.prompt_tokens += result.usage.prompt_tokens
        self.completion_tokens += result.usage.completion_tokens
        if result.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += result.cost_usd

    def totals(self, reader: _ItemReader) -> dict[str, Any]:
        """The run's totals, as the manifest records them."""
        return {
            "items_judged": self.written,
            "items_already_done": reader.already_done,
            "lines_skipped": reader.bad_lines,
            "items_other_shards": reader.other_shards,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "calls_over_budget": self.budget_skips,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6) if self.cost_known else None,
        }


async def _watch_interrupt(
    work: CancelScope, state: _RunState, *, task_status: TaskStatus[None]
) -> None:
    """Turn Ctrl-C into a clean stop: the first cancels ``work``, so calls in flight are
    dropped and nothing half-done is written; later ones, while the run winds down
    (closing the stream and the connections), are absorbed. Raised as KeyboardInterrupt
    at whatever line the loop was running, one could cut that cleanup in half (a stream
    whose cancellation is never delivered, waiting on its calls; a traceback). Runs until
    the caller cancels it, once the wind-down is over. Where signals cannot be received
    here (not the main thread, Windows), Ctrl-C arrives as KeyboardInterrupt instead."""
    import anyio

    try:
        receiver = anyio.open_signal_receiver(signal.SIGINT)
        signals = receiver.__enter__()
    except (NotImplementedError, RuntimeError, ValueError):
        task_status.started()
        return
    try:
        task_status.started()
        async for _ in signals:
            state.interrupted = True
            work.cancel()
    finally:
        receiver.__exit__(None, None, None)


async def _judge_into(
    panel: Ensemble | Cascade,
    items: _ItemReader,
    results: ResultsFile,
    *,
    concurrency: int,
    progress: bool,
    total: int | None,
    console: Console,
    budget: Budget | None,
    state: _RunState,
    all_tiers: bool = False,
    batch: BatchOptions | None = None,
) -> _RunState:
    """Stream ``items`` through ``panel`` (every tier of a cascade with ``all_tiers``; in
    batch mode with ``batch``) and append each result to ``results`` at once."""
    import anyio

    from ..batch.progress import BatchProgress
    from ..cascade import Cascade

    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        # The watcher is outside the scope it cancels, so it keeps absorbing Ctrl-C until
        # the wind-down below is over.
        work = anyio.CancelScope()
        await group.start(_watch_interrupt, work, state)
        try:
            with work, BatchProgress(total, enabled=progress, console=console) as bar:
                mode: Mode = "live" if batch is None else "batch"
                if isinstance(panel, Cascade):
                    stream = panel.stream(
                        items,
                        concurrency=concurrency,
                        budget_usd=budget,
                        all_tiers=all_tiers,
                        mode=mode,
                        batch=batch,
                    )
                else:
                    stream = panel.stream(
                        items, concurrency=concurrency, budget_usd=budget, mode=mode, batch=batch
                    )
                async with stream:
                    async for result in stream:
                        results.append(result)
                        state.count(result)
                        bar.advance(result)
        except Exception as exc:  # re-raised below, outside the task group
            failure = exc
        finally:
            with anyio.CancelScope(shield=True):
                await panel.aclose()
        group.cancel_scope.cancel()  # stop the interrupt watcher
    if failure is not None:
        raise failure
    return state


@contextlib.contextmanager
def _sigint_held(*, then_raise: bool) -> Iterator[None]:
    """Hold off Ctrl-C during a few milliseconds of bookkeeping that must not be cut in half.

    A SIGINT inside the block is recorded instead of raised; at the end the previous
    handler is restored and, if one came and ``then_raise``, ``KeyboardInterrupt`` is
    raised. Only the main thread may set signal handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if came and then_raise:
        raise KeyboardInterrupt


def _resume_command(args: argparse.Namespace) -> str:
    words = ["cross-judge", "review", args.items, "--panel", args.panel, "--out", args.out]
    if args.concurrency is not None:
        words += ["--concurrency", str(args.concurrency)]
    if args.no_progress:
        words.append("--no-progress")
    if args.cache is True:
        words.append("--cache")
    elif args.cache:
        words += ["--cache", args.cache]
    if args.budget_usd is not None:
        words += ["--budget-usd", f"{args.budget_usd:g}"]
    if args.prices is not None:
        words += ["--prices", args.prices]
    if args.all_tiers:
        words.append("--all-tiers")
    if args.shard is not None:
        words += ["--shard", "{}/{}".format(*args.shard)]
    if args.mode != "live":
        words += ["--mode", args.mode]
    if args.batch_vendors is not None:
        words += ["--batch-vendors", ",".join(sorted(args.batch_vendors))]
    if args.deadline is not None:
        words += ["--deadline", f"{args.deadline:g}"]
    if args.poll is not None:
        words += ["--poll", f"{args.poll:g}"]
    return shlex.join([*words, "--resume"])


def _review(args: argparse.Namespace) -> int:
    import anyio

    from ..batch.lock import ResultsLock
    from ..batch.runner import DEFAULT_CONCURRENCY, ResultsFile
    from ..critic.cache import resolve_cache
    from ..panel_file import load_panel
    from ..pricing import load_prices
    from ..report.manifest import RunManifest

    items_path, out_path = Path(args.items), Path(args.out)
    if not items_path.exists():
        raise ConfigError(f"{items_path}: no such items file")
    if not items_path.is_file():
        raise ConfigError(f"{items_path}: not a file; pass a JSONL file of items")
    _check_items_format(items_path)
    spec = load_panel(args.panel)
    if args.all_tiers and not spec.is_cascade:
        raise ConfigError(
            f"--all-tiers asks every tier of a cascade on every item, and {args.panel} is one "
            "ensemble (critics:, no tiers:) whose critics judge every item anyway; remove "
            "--all-tiers, or use a panel file with tiers:"
        )
    if out_path.exists() and out_path.resolve() == items_path.resolve():
        raise ConfigError(f"--out {out_path} is the items file; write results to another file")
    if not out_path.parent.exists():
        raise ConfigError(f"{out_path.parent} does not exist; create it or choose another path")
    concurrency = args.concurrency or spec.concurrency or DEFAULT_CONCURRENCY
    batch = _batch_options(args, out_path)
    if args.prices is not None:
        load_prices(args.prices)
    cache = resolve_cache(args.cache) if args.cache else None
    if cache is not None:
        cache.check()  # an unusable cache file stops the run before anything is billed
    resume = args.resume or args.retry_failed
    err = _stderr()
    simulated = spec.simulated_critics
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        # First of all: a second review of this OUT stops here, before it reads, repairs
        # or bills anything.
        lock = stack.enter_context(
            ResultsLock.acquire(out_path, command=["cross-judge", *args.argv])
        )
        if lock.warning is not None:
            _note(err, f"warning: {lock.warning}")
        simulator_url: str | None = None
        if simulated:
            server = stack.enter_context(spec.simulator())
            simulator_url = server.url
            _note(err, _simulated_note(simulated, simulator_url))
        panel = spec.build(simulator_url=simulator_url, cache=cache)
        if args.budget_usd is not None:
            _check_prices(panel)
        options: dict[str, Any] = {
            "concurrency": concurrency,
            "budget_usd": args.budget_usd,
            "prices": args.prices,
            "cache": str(cache.path) if cache is not None else None,
            "resume": resume,
            "retry_failed": args.retry_failed,
            "allow_panel_change": args.allow_panel_change,
            "simulated_critics": list(simulated),
            "mode": args.mode,
        }
        if batch is not None:
            options["batch_vendors"] = sorted(batch.vendors)
            options["batch_ledger"] = str(batch.ledger)
            options["deadline_s"] = batch.deadline_s
        manifest = RunManifest.prepare(
            out_path,
            ensemble=panel,
            argv=args.argv,
            items=items_path,
            panel=Path(args.panel),
            options=options,
            all_tiers=args.all_tiers,
            shard=args.shard,
        )
        if resume and out_path.exists() and out_path.stat().st_size > 0:
            _check_same_shard(args, out_path, manifest)
            _check_same_panel(args, out_path, manifest, err)
        results = stack.enter_context(
            ResultsFile.open(out_path, resume=args.resume, retry_failed=args.retry_failed)
        )
        if results.repaired:
            _note(
                err,
                f"{out_path}: cut off a torn last line (a run was killed while writing it); "
                "that item is judged again",
            )
        if results.dropped_ids:
            _note(
                err,
                f"{out_path}: removed {_count(len(results.dropped_ids), 'result')} with a "
                f"failed call, to judge again: {_shown(results.dropped_ids)}",
            )
        if results.done_ids:
            _note(
                err,
                f"resuming: {out_path} holds {_count(len(results.done_ids), 'result')}; "
                "items with those ids are skipped",
            )
        budget = _file_budget(args, out_path, results, err)
        if budget is not None:
            options["budget_spent_before_usd"] = round(results.spent_usd, 6)
        reader = _ItemReader(items_path, panel.critics, set(results.done_ids), err, args.shard)
        progress = not args.no_progress and sys.stderr.isatty()
        total: int | None = None
        if progress and args.shard is not None:
            total = _count_shard_items(items_path, args.shard, reader.done)
        elif progress:
            total = max(0, _count_lines(items_path) - len(results.done_ids))
        if batch is not None:
            _note(
                err,
                f"batch mode: {', '.join(sorted(batch.vendors))} through their batch APIs; "
                f"submitted batches are recorded in {batch.ledger}",
            )
        manifest.begin()
        state = _RunState()
        status = "failed"  # unless the run gets further
        try:
            anyio.run(
                lambda: _judge_into(
                    panel,
                    reader,
                    results,
                    concurrency=concurrency,
                    progress=progress,
                    total=total,
                    console=err,
                    budget=budget,
                    state=state,
                    all_tiers=args.all_tiers,
                    batch=batch,
                )
            )
            status = "interrupted" if state.interrupted else "done"
        except KeyboardInterrupt:
            state.interrupted, status = True, "interrupted"
        finally:
            # Cut short by Ctrl-C, the manifest would keep saying "running". A second
            # Ctrl-C of an interrupted run is dropped: it is stopping already.
            with _sigint_held(then_raise=not state.interrupted):
                manifest.finish(status, state.totals(reader))
    elapsed = time.perf_counter() - started
    if state.interrupted:
        _note(
            err,
            f"interrupted; {out_path} is intact and holds every finished result. "
            f"Resume with:\n  {_resume_command(args)}",
        )
        return EXIT_INTERRUPTED
    return _review_report(
        args, out_path, reader, state, simulated, elapsed, err, budget, results.spent_usd
    )


def _batch_options(args: argparse.Namespace, out_path: Path) -> BatchOptions | None:
    """Batch mode's options from the command line; ``None`` in live mode.

    Raises:
        ConfigError: a batch-only option without ``--mode batch``.
    """
    from ..batch.provider_jobs import BATCH_VENDORS, BatchOptions

    given = [
        flag
        for flag, value in (
            ("--batch-vendors", args.batch_vendors),
            ("--deadline", args.deadline),
            ("--poll", args.poll),
        )
        if value is not None
    ]
    if args.mode != "batch":
        if given:
            raise ConfigError(f"{', '.join(given)} apply to --mode batch only; add --mode batch")
        return None
    poll = 30.0 if args.poll is None else max(args.poll, 0.001)
    return BatchOptions(
        vendors=args.batch_vendors or BATCH_VENDORS,
        ledger=ledger_path(out_path),
        poll_s=poll,
        max_poll_s=max(600.0, poll),
        deadline_s=args.deadline,
    )


def ledger_path(results: Path) -> Path:
    """``OUT.jsonl`` -> ``OUT.jsonl.batches.jsonl``: batch mode's ledger beside the results."""
    return results.with_name(results.name + ".batches.jsonl")


def _note_dead_critics(batch: BatchResult, panel: str, err: Console) -> None:
    """Say why, for each critic whose every call failed: its error kinds and the vendor's
    own message (the summary's table has every critic's; this is the one to act on)."""
    from ..report.summary import failure_message

    for stats in batch.critic_stats().values():
        asked = stats.items - stats.skipped
        failed = stats.errors + stats.parse_failures
        if not asked or failed < asked:
            continue
        why = "; ".join(
            f"{kind} ({count}): {failure_message(kind, stats.error_messages.get(kind, ''))}"
            for kind, count in stats.error_kinds.items()
        )
        check = (
            "model and prompt" if set(stats.error_kinds) == {"parse"} else "model, base_url and key"
        )
        _note(
            err,
            f"critic {stats.critic!r}: every call failed ({failed} of {asked}): {why}. "
            f"Check its {check} in {panel}",
        )


def _check_same_shard(args: argparse.Namespace, out_path: Path, manifest: RunManifest) -> None:
    """Refuse to resume ``out_path`` with another ``--shard`` (or none) than its last run
    used, as its manifest records it: the file holds that shard's results, and another
    shard's items are other machines' work. Not overridden by ``--allow-panel-change``
    (the panel is the same). Without a readable manifest, :func:`_check_same_panel` says
    that nothing can be checked."""
    previous = manifest.previous_run()
    if previous is None:
        return
    change = manifest.shard_change(previous)
    if change is None:
        return
    was = previous.get("shard")
    if was is None:
        keep = "without --shard"
    elif isinstance(was, dict) and {"index", "count"} <= was.keys():
        keep = f"--shard {was['index']}/{was['count']}"
    else:
        keep = "the shard of its last run"
    wanted = "the whole file" if args.shard is None else "shard {}/{}".format(*args.shard)
    raise ConfigError(
        f"--resume with another shard ({change}): {out_path} holds the results of its "
        f"last run (started {previous.get('started_at', '?')}), and one results file holds "
        f"one shard's items. Resume it {keep}, or write {wanted} to another --out"
    )


def _check_same_panel(
    args: argparse.Namespace, out_path: Path, manifest: RunManifest, err: Console
) -> None:
    """Refuse to resume ``out_path`` with a panel that judges differently from the one of
    its last run (as its manifest records it), unless ``--allow-panel-change``."""
    previous = manifest.previous_run()
    if previous is None:
        _note(
            err,
            f"note: no readable {manifest.path.name} beside {out_path}: cannot check that "
            "its results came from the same panel",
        )
        return
    changes = manifest.panel_changes(previous)
    if not changes:
        return
    listed = "\n".join(f"  {change}" for change in changes)
    if args.allow_panel_change:
        _note(err, f"warning: resuming with a changed panel (--allow-panel-change):\n{listed}")
        return
    raise ConfigError(
        f"--resume with a changed panel: {out_path} holds results of the panel its last run "
        f"used (started {previous.get('started_at', '?')}), and {args.panel} now differs:\n"
        f"{listed}\n"
        "Mixing both in one file would make its agreement and consensus counts meaningless. "
        "Write the new panel's results to another --out, or pass --allow-panel-change to "
        "continue this file anyway (the manifest records both panels)."
    )


def _file_budget(
    args: argparse.Namespace, out_path: Path, results: ResultsFile, err: Console
) -> Budget | None:
    """The budget of ``--budget-usd``: a cap on the results file as a whole, so it starts
    from what the results already in it cost (a resumed run)."""
    from ..budget import Budget

    if args.budget_usd is None:
        return None
    before = results.spent_usd
    if results.unpriced:
        _note(
            err,
            f"note: {_count(results.unpriced, 'result')} in {out_path} "
            f"{'has' if results.unpriced == 1 else 'have'} no recorded cost and "
            "cannot count against --budget-usd",
        )
    if before >= args.budget_usd and before > 0:
        raise ConfigError(
            f"--budget-usd {args.budget_usd:g} caps {out_path} as a whole, and its results "
            f"have already cost ${before:.4f}; nothing more fits. Raise --budget-usd to "
            "judge the remaining items"
        )
    return Budget(args.budget_usd, spent_usd=before)


def _simulated_note(names: Sequence[str], url: str) -> str:
    return (
        f"critics {', '.join(names)} are SIMULATED by cross_judge.testing.VendorServer at "
        f"{url}: their answers come from a seeded random generator, not a language model"
    )


def _review_report(
    args: argparse.Namespace,
    out_path: Path,
    reader: _ItemReader,
    state: _RunState,
    simulated: Sequence[str],
    elapsed: float,
    err: Console,
    budget: Budget | None,
    spent_before: float,
) -> int:
    batch = _read_results(str(out_path), slim=True) if out_path.stat().st_size else None
    out = _stdout()
    if batch is not None:
        out.print(batch.summary())
    line = f"this run: judged {_count(state.written, 'item')} in {elapsed:.2f} s"
    line += f"; {_count(state.calls, 'call')}"
    if state.cache_hits:
        line += f", {_count(state.cache_hits, 'answer')} from the cache"
    if state.cost_known:
        line += f", ${state.cost_usd:.4f}"
    if reader.already_done:
        line += f"; {_count(reader.already_done, 'item')} already in {out_path}"
    if args.shard is not None:
        line += "; shard {}/{}: ".format(*args.shard)
        line += f"{_count(reader.other_shards, 'item')} of other shards passed over"
    if reader.bad_lines:
        line += f"; {_count(reader.bad_lines, 'line')} skipped for bad input"
    _say(out, line)
    if budget is not None:
        _say(
            out,
            f"budget (all of {out_path}): ${spent_before:.4f} before this run + "
            f"${budget.spent_usd - spent_before:.4f} in this run = ${budget.spent_usd:.4f} of "
            f"${budget.limit_usd:g}; {_count(state.budget_skips, 'call')} not made "
            "(over budget)",
        )
    _say(out, f"results: {out_path}")
    if simulated:
        _say(
            out,
            f"note: critics {', '.join(simulated)} were simulated (seeded random answers "
            "from cross_judge.testing), not language models",
        )
    failed = batch.failed_items if batch is not None else []
    if batch is not None:
        _note_dead_critics(batch, args.panel, err)
    if reader.bad_lines:
        _note(err, f"{_count(reader.bad_lines, 'line')} of {args.items} skipped for bad input")
    if failed:
        _note(
            err,
            f"{_count(len(failed), 'item')} with a failed call: {_shown(failed)}. To judge "
            "them again, run the same command with --retry-failed",
        )
    return EXIT_FAILED if failed or reader.bad_lines else EXIT_OK


# -- revote -------------------------------------------------------------------------------------


def _revote(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    kwargs: dict[str, Any] = {}
    if args.voting_kwargs is not None:
        try:
            parsed = json.loads(args.voting_kwargs)
        except ValueError as exc:
            raise ConfigError(f"--voting-kwargs is not valid JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise ConfigError(
                '--voting-kwargs must be a JSON object, e.g. \'{"priority": ["REJECT"]}\''
            )
        kwargs = parsed
    new_path = Path(args.out) if args.out is not None else None
    if new_path is not None:
        if new_path.exists():
            same = new_path.resolve() == Path(args.results).resolve()
            what = "is the results file being re-voted" if same else "already exists"
            raise ConfigError(
                f"--out {new_path} {what}; revote never overwrites results: choose a path "
                "that does not exist yet"
            )
        if not new_path.parent.exists():
            raise ConfigError(f"{new_path.parent} does not exist; create it or choose another path")
    batch = _read_results(args.results, slim=new_path is None)
    if batch.tier_stats():
        raise ConfigError(
            f"{args.results} holds a cascade's results: each item's verdicts come from the "
            "tiers it went through, and one strategy over all of them would mix tiers. "
            "Change a tier's voting in the panel file instead; to see what another "
            "escalation would have decided, use Cascade.replay in Python, or calibrate "
            "results of review --all-tiers with 'cross-judge calibrate'"
        )
    revoted = batch.revote(args.voting, **kwargs)
    changes = Counter(
        (old.consensus, new.consensus)
        for old, new in zip(batch.verdicts, revoted.verdicts, strict=True)
        if old.consensus != new.consensus
    )
    if new_path is not None:
        _write_new(new_path, revoted)
    out = _stdout()
    out.print(revoted.summary())
    n, changed = len(batch.verdicts), sum(changes.values())
    _say(out, f"consensus changed on {changed} of {n} items ({batch.voting} -> {revoted.voting})")
    if changes:
        table = Table(box=box.SIMPLE_HEAD, title="consensus changes", title_justify="left")
        for name in ("from", "to", "items"):
            table.add_column(name, justify="right" if name == "items" else "left")
        for (before, after), count in changes.most_common():
            table.add_row(before, after, str(count))
        out.print(table)
    if new_path is not None:
        _say(out, f"wrote {new_path}")
    else:
        _say(out, "nothing written; pass --out NEW.jsonl to save the re-voted results")
    return EXIT_OK


def _write_new(path: Path, batch: BatchResult) -> None:
    """Write ``batch`` to a file that must not exist yet (``x`` mode: never a clobber, not
    even one racing another process); a failed write removes the partial file."""
    from ..batch.runner import dump_result

    try:
        handle = open(path, "x", encoding="utf-8")  # noqa: SIM115 - closed below
    except FileExistsError:
        raise ConfigError(f"--out {path} already exists; revote never overwrites results") from None
    try:
        with handle:
            for result in batch.verdicts:
                handle.write(dump_result(result) + "\n")
    except BaseException:
        path.unlink(missing_ok=True)
        raise


# -- stats --------------------------------------------------------------------------------------


def _stats(args: argparse.Namespace) -> int:
    from ..report.summary import render_summary

    batch = _read_results(args.results, slim=True)
    order = [label.strip() for label in args.order.split(",")] if args.order else None
    if order is not None and args.level != "ordinal":
        raise ConfigError("--order is for --level ordinal")
    try:
        alpha = batch.reliability_alpha(args.level, values=order)
    except ConfigError as exc:
        hint = " (on the command line: --level ordinal --order LOW,...,HIGH)"
        raise ConfigError(str(exc) + (hint if "values=" in str(exc) else "")) from None
    if args.ci is not None and args.gold is None:
        raise ConfigError("--ci is for --gold: pass the labels to measure against")
    if args.fit_confidence is not None and args.gold is None:
        raise ConfigError(
            "--fit-confidence needs --gold: pass the labels to fit the confidences on "
            '(a JSONL file of {"id", "label"})'
        )
    gold_path = None
    if args.gold is not None:
        gold_path = Path(args.gold)
        if not gold_path.is_file():
            raise ConfigError(
                f'--gold {gold_path}: no such file; pass a JSONL file of {{"id", "label"}}'
            )
    summary = render_summary(
        batch, level=args.level, alpha=alpha, detailed=True, gold=gold_path, ci=args.ci
    )
    _stdout().print(summary)
    if args.fit_confidence is None or gold_path is None:
        return EXIT_OK
    return _fit_confidence(batch, gold_path, args.fit_confidence, args.results)


def _fit_confidence(
    batch: BatchResult, gold_path: Path, method: CalibrationMethod, source: str
) -> int:
    """``stats --fit-confidence``: each critic's calibration fitted on the labelled items
    (one at a time, so one that cannot be fit is named and the others are still printed),
    a table of its calibration error before and after on stdout; on stderr what that error
    is worth, and each critic whose error the fit did not lower; then the ``calibration:``
    lines for the panel file on stdout. Exit code 1 when some critic could not be fit."""
    from rich import box
    from rich.table import Table

    from ..cascade_calibration import load_gold
    from ..stats.reliability import calibrate_confidence

    gold = load_gold(gold_path)
    out, err = _stdout(), _stderr()
    fits: dict[str, ConfidenceCalibration] = {}
    failed: list[str] = []
    for name in batch.critics:
        try:
            fits.update(calibrate_confidence(batch, gold, method=method, critics=[name]))
        except ConfigError as exc:
            failed.append(name)
            _note(err, f"no calibration for {exc}")
    if fits:
        table = Table(
            box=box.SIMPLE_HEAD,
            title=f"confidence calibration ({method}), fitted on the labelled items",
            title_justify="left",
            caption="ECE after: on the same items it was fitted on (in-sample, so it flatters)",
        )
        for column in ("critic", "fitted on", "ECE before", "ECE after", "map"):
            table.add_column(column, justify="left" if column in ("critic", "map") else "right")
        for name, fit in fits.items():
            table.add_row(
                name,
                _count(fit.n, "vote"),
                f"{fit.ece_before:.3f}",
                f"{fit.ece_after:.3f}",
                _calibration_map(fit),
            )
        _say(out, "")
        out.print(table)
        for name, fit in fits.items():
            if fit.ece_after >= fit.ece_before:
                _note(
                    err,
                    f"critic {name!r}: {method} scaling did not lower its calibration error even "
                    f"on the items it was fitted on ({fit.ece_before:.3f} -> "
                    f"{fit.ece_after:.3f}); leave it uncalibrated (its lines out of the panel file)"
                    + (" or try --fit-confidence isotonic" if method == "temperature" else ""),
                )
        _note(
            err,
            "the ECE after calibration is measured on the labelled items the calibration was "
            "fitted on, so it flatters the fit (an isotonic map's is near 0 by construction). "
            "Fit on one labelled set, then check on another: review a second labelled set with "
            "the calibrated panel and run cross-judge stats on it with --gold",
        )
        _say(out, "")
        _say(out, _calibration_snippet(fits, method, source))
    return EXIT_FAILED if failed else EXIT_OK


def _calibration_map(fit: ConfidenceCalibration) -> str:
    """The fitted map in a few words: the temperature, or the isotonic steps."""
    if fit.temperature is not None:
        trend = "tempers" if fit.temperature > 1 else "sharpens"
        return f"temperature {fit.temperature:.3g} ({trend})"
    return _count(len(fit.values), "isotonic step")


def _calibration_snippet(fits: dict[str, ConfidenceCalibration], method: str, source: str) -> str:
    """Each critic's ``calibration:`` line for the panel file, under its name as a key."""
    lines = [
        f"# fitted by cross-judge stats --fit-confidence {method} on the labelled items of "
        f"{source}",
        "# paste each calibration: line into the panel file, under the critic of that name "
        "(beside its model:)",
    ]
    for name, fit in fits.items():
        lines.append(f"{_yaml_key(name)}:")
        lines.append(f"  calibration: {_calibration_yaml(fit)}")
    return "\n".join(lines)


def _calibration_yaml(fit: ConfidenceCalibration) -> str:
    """``fit.to_dict()`` as a one-line YAML flow mapping, only the keys its method uses;
    floats written so that YAML reads back exactly the same number."""
    data = fit.to_dict()
    keys = ["method", "temperature"] if fit.method == "temperature" else ["method"]
    if fit.method != "temperature":
        keys += ["breakpoints", "values"]
    keys += ["n", "bins", "ece_before", "ece_after"]

    def scalar(value: object) -> str:
        if isinstance(value, float):
            return _yaml_float(value)
        if isinstance(value, list):
            return "[" + ", ".join(scalar(v) for v in value) + "]"
        return str(value)

    return "{" + ", ".join(f"{key}: {scalar(data[key])}" for key in keys) + "}"


def _yaml_float(value: float) -> str:
    """``repr(value)``, which reads back exactly, with ``.0`` added to a bare exponent
    mantissa (``1e-06`` -> ``1.0e-06``): YAML 1.1 reads a float only with a dot."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def _yaml_key(name: str) -> str:
    """``name`` as a YAML mapping key: as is when YAML reads it back as that text, else
    double-quoted (JSON's quoting is valid YAML)."""
    import re

    import yaml

    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name) is not None
    if plain and yaml.safe_load(name) == name:
        return name
    return json.dumps(name)


# -- calibrate ----------------------------------------------------------------------------------


def _score_names() -> tuple[str, ...]:
    """The scores a threshold can apply to (``agreement``, ``confidence``, ...)."""
    from typing import get_args

    from ..cascade import Score

    return tuple(str(name) for name in get_args(Score))


def _threshold_names() -> list[str]:
    """The threshold fields of an :class:`~cross_judge.cascade.Escalation`."""
    return [f"{name}_below" for name in _score_names()]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number between 0 and 1, got {text!r}"
        ) from None
    if not 0.0 < value < 1.0:
        hint = " (a fraction, not a percent)" if 1.0 < value <= 100.0 else ""
        raise argparse.ArgumentTypeError(
            f"expected a number strictly between 0 and 1{hint}, got {text!r}"
        )
    return value


def _scores(text: str) -> list[str]:
    scores = [part.strip() for part in text.split(",")]
    known = _score_names()
    if any(s not in known for s in scores):
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(known)}, or a comma-separated list of them (one per "
            f"tier that can escalate), got {text!r}"
        )
    return scores


def _add_calibrate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    calibrate = sub.add_parser(
        "calibrate",
        help="choose a cascade's escalation thresholds on labelled items (no model calls)",
        description=(
            "Choose the escalation thresholds of a cascade on labelled items so that, on the "
            "items it decides, its agreement with the labels is at least --target with "
            "probability at least 1 - --delta (fixed-sequence testing with an exact binomial "
            "bound), for new items drawn like the labelled ones. FULL.jsonl holds the results "
            "of 'cross-judge review ... --all-tiers' (every tier asked on every item); "
            'GOLD.jsonl one {"id": ..., "label": ...} per line. Prints the fit and the '
            "escalate: block to paste into the panel file. Calls no model. Exit code 0 "
            "with a guarantee, 1 without one."
        ),
    )
    calibrate.add_argument(
        "results", metavar="FULL.jsonl", help="results of cross-judge review --all-tiers"
    )
    calibrate.add_argument(
        "--gold", required=True, metavar="GOLD.jsonl", help='the labels: {"id", "label"} lines'
    )
    calibrate.add_argument(
        "--target",
        type=_fraction,
        default=0.9,
        metavar="A",
        help="agreement with the labels to guarantee on decided items (default 0.9)",
    )
    calibrate.add_argument(
        "--delta",
        type=_fraction,
        default=0.1,
        metavar="D",
        help="allowed probability that the guarantee fails (default 0.1)",
    )
    calibrate.add_argument(
        "--score",
        type=_scores,
        default=["agreement"],
        metavar="SCORE",
        help=(
            "what a tier's threshold applies to: agreement (the share of its critics that "
            "voted the consensus), confidence (their mean confidence) or support (the "
            "confidence behind the consensus); default agreement. A one-critic tier always "
            "agrees with itself: give it confidence or support. A comma-separated list gives "
            "one per tier that can escalate"
        ),
    )
    calibrate.add_argument(
        "--final",
        choices=("decide", "abstain"),
        default="decide",
        help=(
            "the cascade's final mode: the last tier always decides (default), or abstains "
            "below the threshold too (the item is for a human)"
        ),
    )
    calibrate.add_argument(
        "--keep-last-tier-agreement",
        action="store_true",
        help=(
            "choose the cheapest guaranteed threshold that agrees with the labels at least "
            "as often as the last tier alone, instead of the cheapest guaranteed one"
        ),
    )


def _calibrate(args: argparse.Namespace) -> int:
    from ..cascade_calibration import calibrate_cascade, load_gold

    gold_path = Path(args.gold)
    if not gold_path.is_file():
        what = "not a file" if gold_path.exists() else "no such gold file"
        raise ConfigError(f'--gold {gold_path}: {what}; pass a JSONL file of {{"id", "label"}}')
    batch = _read_results(args.results, slim=True)
    gold = load_gold(gold_path)
    depth = max((len(r.tiers or ()) for r in batch.verdicts), default=0)
    if depth == 0:
        raise ConfigError(
            f"{args.results} holds results of one ensemble, not of a cascade (no per-tier "
            "results); calibrate needs a cascade panel's results with every tier asked on "
            "every item: cross-judge review ITEMS --panel CASCADE.yaml --out FULL.jsonl "
            "--all-tiers"
        )
    labelled = [r for r in batch.verdicts if r.query_id in gold]
    shallow = [r.query_id for r in labelled if len(r.tiers or ()) < depth]
    if shallow:
        raise ConfigError(
            f"{_count(len(shallow), 'labelled result')} in {args.results} "
            f"{'does' if len(shallow) == 1 else 'do'} not hold every tier's result "
            f"({_shown(shallow)}): calibration needs every tier asked on every item. Judge "
            "the items with cross-judge review ... --all-tiers, into a new --out"
        )
    score = args.score[0] if len(args.score) == 1 else args.score
    fit = calibrate_cascade(
        batch,
        gold,
        target=args.target,
        delta=args.delta,
        score=score,
        final=args.final,
        keep_last_tier_agreement=args.keep_last_tier_agreement,
    )
    out, err = _stdout(), _stderr()
    out.print(fit.summary())
    unlabelled = len(batch.verdicts) - len(labelled)
    if unlabelled:
        _note(
            err, f"{_count(unlabelled, 'result')} of {args.results} without a gold label left out"
        )
    _calibration_notes(labelled, fit, err)
    _say(out, "")
    _say(out, _escalate_snippet(fit, args.results))
    if fit.guaranteed:
        return EXIT_OK
    _note(
        _stderr(),
        f"no guarantee: no threshold reaches {fit.target:.0%} agreement with "
        f"{1 - fit.delta:.0%} confidence on these {fit.n_items} labelled items. Label more "
        "items, lower --target, raise --delta, or strengthen the tiers",
    )
    return EXIT_FAILED


def _calibration_notes(labelled: Sequence[EnsembleVerdict], fit: CascadeFit, err: Console) -> None:
    """Say what weakens a fit: labelled items with a failed call in some tier (that tier
    cannot stand there, and a last tier that decides is likely wrong), and a threshold on
    the agreement of a one-critic tier (always 1.0, so it never escalates)."""
    from ..batch.runner import call_failed

    failed = [r.query_id for r in labelled if any(call_failed(v) for v in r.verdicts)]
    if failed:
        _note(
            err,
            f"{_count(len(failed), 'labelled result')} with a failed call in some tier "
            f"({_shown(failed)}): that tier does not stand on those items, which weighs on "
            "the fit; judge them again (into a new --out) for a fairer one",
        )
    first = (labelled[0].tiers or []) if labelled else []
    for tier, score in enumerate(fit.scores):
        critics = {v.critic_id for v in first[tier].verdicts} if tier < len(first) else set()
        if score == "agreement" and len(critics) == 1:
            _note(
                err,
                f"tier {tier} has one critic, whose agreement with itself is always 1.0: a "
                "threshold on it never escalates; give that tier --score confidence or "
                "support (a comma-separated list, one per tier)",
            )


def _escalate_snippet(fit: CascadeFit, source: str) -> str:
    """The ``final:`` and ``escalate:`` lines of a panel file for ``fit.escalation``."""
    escalation = fit.escalation
    if fit.guaranteed:
        head = (
            f"# calibrated by cross-judge calibrate on {fit.n_items} labelled items of "
            f"{source}: agreement >= {fit.target:g} on decided items with probability >= "
            f"{1 - fit.delta:g}, for new items drawn like them"
        )
    else:
        head = "# NO GUARANTEE: no threshold passed; this is the strictest level " + (
            "(every item goes to the last tier)"
            if fit.final == "decide"
            else "(every item is abstained)"
        )
    lines = [head, "# paste into the panel file (top level, beside tiers:)", f"final: {fit.final}"]
    lines.append("escalate:")
    for name in _threshold_names():
        value = _threshold_yaml(getattr(escalation, name))
        if value is not None:
            lines.append(f"  {name}: {value}")
    lines.append(f"  on_error: {'true' if escalation.on_error else 'false'}")
    lines.append(f"  on_fallback: {'true' if escalation.on_fallback else 'false'}")
    return "\n".join(lines)


def _threshold_yaml(value: object) -> str | None:
    """A threshold as YAML, as the escalation holds it: a number, or a list with one entry
    per tier that can escalate (``null`` where a tier has none), so that a panel with
    another number of tiers refuses it; ``None`` when no tier has one."""

    def number(x: object) -> str:
        if not isinstance(x, (int, float)):
            return "null"
        return ".inf" if math.isinf(x) else f"{x:g}"

    if isinstance(value, (int, float)):
        return number(value)
    if not isinstance(value, Sequence) or all(v is None for v in value):
        return None
    return "[" + ", ".join(number(v) for v in value) + "]"


# -- prompts ------------------------------------------------------------------------------------


def _prompts(args: argparse.Namespace) -> int:
    from ..critic.prompts import list_prompts, load_prompt

    if args.prompts_command == "list":
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD)
        table.add_column("prompt", no_wrap=True)
        table.add_column("labels")
        table.add_column("description")
        for spec in list_prompts():
            labels = ", ".join(spec.labels) if spec.labels else "(any)"
            table.add_row(spec.ref, labels, _first_sentence(spec.description))
        _stdout().print(table)
        return EXIT_OK
    if args.prompts_command == "show":
        print(_prompt_yaml(load_prompt(args.ref)), end="")
        return EXIT_OK
    if args.prompts_command == "validate":
        path = Path(args.file)
        if not path.is_file():
            raise ConfigError(f"{path}: no such prompt file")
        spec = load_prompt(path)
        print(f"ok: {spec.ref}")
        return EXIT_OK
    args.prompts_parser.print_help(sys.stderr)
    return EXIT_USAGE


def _first_sentence(text: str) -> str:
    words = " ".join(text.split())
    end = words.find(". ")
    return words if end == -1 else words[: end + 1]


def _prompt_yaml(spec: PromptSpec) -> str:
    """A prompt's fields as YAML, multi-line text in literal blocks, as it would be written."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    fields: dict[str, Any] = {"id": spec.id, "version": spec.version}
    if spec.description:
        fields["description"] = spec.description
    if spec.labels is not None:
        fields["labels"] = list(spec.labels)
    fields["output"] = list(spec.output)
    if spec.score is not None:
        fields["score"] = dict(spec.score)
    if spec.variables:
        fields["variables"] = list(spec.variables)
    fields["system_prompt"] = spec.system_prompt
    fields["user_prompt_template"] = spec.user_prompt_template
    header = f"# {spec.ref} from {spec.source}; sha256 {spec.sha256}\n"
    body = yaml.dump(fields, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return header + body


# -- cache --------------------------------------------------------------------------------------


def _add_cache_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cache = sub.add_parser(
        "cache",
        help="show or clear the response cache",
        description=(
            "The response cache keeps the answers of valid verdicts (Critic(cache=True) or a "
            "cache path) so that asking again costs nothing. Its file is "
            "$CROSS_JUDGE_CACHE_DIR/responses.sqlite3 when that is set, else "
            "cross-judge/responses.sqlite3 in the user cache folder; --path names another."
        ),
    )
    cache.set_defaults(cache_parser=cache)
    actions = cache.add_subparsers(dest="cache_command", metavar="ACTION")
    where = (
        "the cache file (default: $CROSS_JUDGE_CACHE_DIR/responses.sqlite3, else "
        "cross-judge/responses.sqlite3 in the user cache folder)"
    )
    stats = actions.add_parser("stats", help="entries, size and age of the cache")
    stats.add_argument("--path", metavar="FILE", help=where)
    clear = actions.add_parser(
        "clear",
        help="remove every cached answer",
        description=(
            "Remove every cached answer, after asking for confirmation on a terminal. When "
            "stdin is not a terminal, --yes is required. A damaged cache file, or one of a "
            "newer cross-judge, is removed as a whole; a file that is not a cross-judge "
            "cache is never touched. Exit code 1 when the answer to the question is no."
        ),
    )
    clear.add_argument("--path", metavar="FILE", help=where)
    clear.add_argument("--yes", "-y", action="store_true", help="clear without asking")


def _cache(args: argparse.Namespace) -> int:
    from ..critic.cache import ResponseCache

    if args.cache_command is None:
        args.cache_parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.cache_command == "clear" and not args.yes and not _stdin_is_terminal():
        raise ConfigError(
            "cache clear asks for confirmation, and stdin is not a terminal; "
            "pass --yes to clear without asking"
        )
    with ResponseCache(args.path) as cache:
        if args.cache_command == "stats":
            return _cache_stats(cache)
        return _cache_clear(cache, ask=not args.yes)


def _cache_stats(cache: ResponseCache) -> int:
    from rich import box
    from rich.table import Table

    out = _stdout()
    stats = cache.stats()
    if not stats.exists:
        _say(out, f"no response cache at {cache.path} yet: nothing has been cached there")
        return EXIT_OK
    _say(out, f"response cache: {cache.path}")
    table = Table(box=box.SIMPLE_HEAD, show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("entries", f"{stats.entries:,}")
    table.add_row("size on disk", _human_size(stats.size_bytes))
    table.add_row("oldest entry", _local_time(stats.oldest))
    table.add_row("newest entry", _local_time(stats.newest))
    out.print(table)
    return EXIT_OK


def _cache_clear(cache: ResponseCache, *, ask: bool) -> int:
    from ..critic.cache import _database_files, _UnusableCache

    out = _stdout()
    path = cache.path
    if not path.exists():
        _say(out, f"nothing to clear: no response cache at {path}")
        return EXIT_OK
    try:
        entries = cache.stats().entries
    except _UnusableCache as exc:
        if not exc.removable:
            raise
        if ask and not _confirm(f"{exc}\nRemove the file {path}?"):
            _note(_stderr(), "nothing removed")
            return EXIT_FAILED
        cache.close()
        for file in _database_files(path):
            file.unlink(missing_ok=True)
        _say(out, f"removed the unusable response cache {path}")
        return EXIT_OK
    if entries == 0:
        _say(out, f"the response cache {path} is already empty")
        return EXIT_OK
    if ask and not _confirm(f"Remove all {_count(entries, 'cached answer')} from {path}?"):
        _note(_stderr(), "nothing removed")
        return EXIT_FAILED
    removed = cache.clear()
    _say(out, f"removed {_count(removed, 'cached answer')} from {path}")
    return EXIT_OK


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdin
        return False


def _confirm(question: str) -> bool:
    """Ask ``question`` on stderr and read the answer from stdin; only yes is yes."""
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _local_time(moment: datetime | None) -> str:
    return "n/a" if moment is None else moment.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


# -- report -------------------------------------------------------------------------------------


def _add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser(
        "report",
        help="one self-contained HTML page of a finished run (opens offline)",
        description=(
            "Write OUT.jsonl's results as one HTML file that opens offline (styles, data and "
            "chart scripts inlined): the run's provenance from its manifest, a critic x critic "
            "kappa heatmap, per-critic error, parse-fail, latency and cost, confusion against "
            "--gold (else against the consensus), the consensus distribution, a cascade's "
            "tiers, the position bias of pairs, and a searchable, sortable table of the "
            "disputed items with each critic's label, confidence and reasoning. Calls no model."
        ),
    )
    report.add_argument("results", metavar="OUT.jsonl", help="results of cross-judge review")
    report.add_argument(
        "-o",
        "--out",
        metavar="REPORT.html",
        help="where to write the page (replaced if it exists); default OUT.html beside OUT.jsonl",
    )
    report.add_argument(
        "--gold",
        metavar="GOLD.jsonl",
        help='labels to measure the critics and the consensus against: {"id", "label"} lines',
    )
    report.add_argument(
        "--manifest",
        metavar="FILE",
        help="the run manifest to show (default OUT.jsonl.manifest.json when it exists)",
    )
    report.add_argument("--title", metavar="TEXT", help="the page's title")
    report.add_argument(
        "--max-items",
        type=int,
        default=None,
        metavar="N",
        help="list at most N disputed items in the table (default 5000; counts cover all)",
    )


def _report(args: argparse.Namespace) -> int:
    from ..report.page import DEFAULT_MAX_ITEMS, write_report

    results = Path(args.results)
    if not results.is_file():
        raise ConfigError(
            f"{results}: no such results file; pass the OUT.jsonl of cross-judge review"
        )
    if args.gold is not None and not Path(args.gold).is_file():
        raise ConfigError(
            f'--gold {args.gold}: no such file; pass a JSONL file of {{"id", "label"}}'
        )
    if args.manifest is not None and not Path(args.manifest).is_file():
        raise ConfigError(f"--manifest {args.manifest}: no such file")
    if args.max_items is not None and args.max_items < 0:
        raise ConfigError(f"--max-items must be >= 0, got {args.max_items}")
    out = Path(args.out) if args.out else results.with_suffix(".html")
    if out.resolve() == results.resolve():
        raise ConfigError(f"--out {out} is the results file; write the report to another file")
    if _torn_tail(str(results)):
        raise ConfigError(
            f"{results}: the last line is torn (a run was stopped while writing it); "
            "run the same review again with --resume, which repairs it"
        )
    written = write_report(
        results,
        out,
        gold=args.gold,
        manifest=args.manifest,
        title=args.title,
        max_items=DEFAULT_MAX_ITEMS if args.max_items is None else args.max_items,
    )
    _say(_stdout(), f"report: {written} ({written.stat().st_size / 1e6:.1f} MB, opens offline)")
    return EXIT_OK


# -- entry point --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (also for usage errors, instead of exiting)."""
    parser = _build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.argv = arguments  # for the run manifest
    try:
        if args.command == "review":
            return _review(args)
        if args.command == "revote":
            return _revote(args)
        if args.command == "stats":
            return _stats(args)
        if args.command == "calibrate":
            return _calibrate(args)
        if args.command == "report":
            return _report(args)
        if args.command == "prompts":
            return _prompts(args)
        if args.command == "cache":
            return _cache(args)
        if args.command == "demo":
            return _run_demo(args.latency_scale, args.mode)
        if args.command == "version":
            print(f"cross-judge {__version__}")
            return EXIT_OK
        parser.print_help()
        return EXIT_USAGE
    except ConfigError as exc:
        message = str(exc).replace("\n", "\n  ")
        print(f"cross-judge: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"cross-judge: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cross-judge: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
