"""The ``cross-judge`` command.

Subcommands:

* ``review ITEMS.jsonl --panel PANEL.yaml --out OUT.jsonl``: judge every item with the
  panel, appending each result to OUT as it finishes (resumable with ``--resume``), then
  print a summary of the whole of OUT. One review at a time holds OUT (a lock file beside
  it, see :mod:`cross_judge.batch._lock`); ``--resume`` refuses a panel that judges differently
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
* ``label-queue OUT.jsonl -n N --out QUEUE.html``: choose the items people should label
  (``--strategy``, ``--seed``, ``--exclude``) and write an offline page to label them on,
  the queue and its inclusion probabilities beside it. No model is called.
* ``import VOTES.csv --out OUT.jsonl``: votes cast elsewhere (people's labels, another
  tool's judge logs; CSV, TSV or JSONL) voted into a results file. No model is called.
* ``rank CANDIDATES.jsonl --panel PANEL.yaml --out RANKING.json``: rank many candidates
  from pairwise verdicts (Bradley-Terry ratings with intervals; ``--pairs adaptive``,
  ``--resume``, ``--html``), printing the leaderboard.
* ``items convert --from openai|anthropic|otlp IN [-o OUT] [--as conversation|trajectory]``:
  OpenAI or Anthropic conversations, or OpenTelemetry traces (OTLP JSON), as an items
  file, one item per conversation or trace. No model is called.
* ``align PANEL.yaml --gold LABELS.jsonl --items ITEMS.jsonl --out DIR``: align the
  critics with people's labels (few-shot examples per critic, measured on held-out labels),
  writing each critic's next prompt version and a panel file using them (``--resume``).
* ``plan-panel RESULTS.jsonl [--gold GOLD.jsonl] --budget-per-item USD [--out panel.yaml]``:
  choose which critics, voting and tiers to run from a pilot's own results, ranked with
  held-out accuracy, and write the best as a panel file. No model is called.
* ``prompts list | show ID | validate FILE``: the packaged prompts, and checking a new one.
* ``cache stats | clear [--path FILE]``: the response cache's size and age; emptying it.
* ``demo``: the full pipeline offline, against simulated critics; ``version``.

Exit codes: 0 done; 1 finished, but some items were skipped for bad input or had a failed
call (``calibrate``: no threshold reaches the target, so there is no guarantee;
``stats --fit-confidence``: a critic's confidence could not be calibrated); 2 usage or
configuration error (nothing was billed); 3 ``align`` measured no clear gain, so wrote
nothing; 130 interrupted. Errors are
printed as ``cross-judge: error: <message>`` on stderr, never as a traceback. Results and
summaries go to stdout; progress, warnings and notes to stderr.

This module only builds the parser and dispatches: each command lives in its own module
(:mod:`._review`, :mod:`._revote`, :mod:`._stats`, :mod:`._calibrate`, :mod:`._report`,
:mod:`._prompts`, :mod:`._cache`, :mod:`._demo_command`, :mod:`._convert`), the shared helpers in
:mod:`._common` and :mod:`._arguments`, the items file in :mod:`._items`. The command modules
import the library lazily, inside their functions, so ``--help`` stays quick.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .._version import __version__
from ..errors import ConfigError
from . import (
    _align,
    _cache,
    _calibrate,
    _compare,
    _convert,
    _demo_command,
    _import_votes,
    _label_queue,
    _plan_panel,
    _prompts,
    _rank,
    _report,
    _review,
    _revote,
    _stats,
)
from ._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

__all__ = ["main"]

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "review": _review.run,
    "revote": _revote.run,
    "stats": _stats.run,
    "calibrate": _calibrate.run,
    "report": _report.run,
    "rank": _rank.run,
    "compare": _compare.run,
    "label-queue": _label_queue.run,
    "prompts": _prompts.run,
    "cache": _cache.run,
    "demo": _demo_command.run,
    "import": _import_votes.run,
    "items": _convert.run,
    "align": _align.run,
    "plan-panel": _plan_panel.run,
}


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cross-judge",
        description="Ask several LLMs to judge the same item; get one verdict you can trust.",
    )
    parser.add_argument("--version", action="version", version=f"cross-judge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _review.add_parser(sub)
    _revote.add_parser(sub)
    _stats.add_parser(sub)
    _calibrate.add_parser(sub)
    _report.add_parser(sub)
    _rank.add_parser(sub)
    _compare.add_parser(sub)
    _label_queue.add_parser(sub)
    _prompts.add_parser(sub)
    _cache.add_parser(sub)
    _demo_command.add_parser(sub)
    _import_votes.add_parser(sub)
    _convert.add_parser(sub)
    _align.add_parser(sub)
    _plan_panel.add_parser(sub)
    sub.add_parser("version", help="print the version")
    return parser


def _escape_unprintable_output() -> None:
    """Let stdout and stderr print any text: a lone surrogate (valid JSON, not Unicode; an
    id, a label or a message from an untrusted file or vendor may hold one) is written as
    its escape (``\\ud800``) instead of failing the command after its work is done.
    ``strict`` and ``surrogateescape`` streams (the latter can write only ``\\udc80`` to
    ``\\udcff``) change; a stream with another error handler is left alone."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        errors = getattr(stream, "errors", None)
        if reconfigure is not None and errors in ("strict", "surrogateescape"):
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (also for usage errors, instead of exiting)."""
    parser = _build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.argv = arguments  # for the run manifest
    _escape_unprintable_output()
    try:
        command = _COMMANDS.get(args.command)
        if command is not None:
            return command(args)
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
