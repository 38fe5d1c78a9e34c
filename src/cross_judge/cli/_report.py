"""``cross-judge report``: a finished run as one self-contained HTML page that opens offline.

The page is built by :func:`cross_judge.report._page.write_report`; given the
``ranking.json`` of ``cross-judge rank`` instead, the leaderboard page
(``Ranking.to_html``); given the ``alignment.json`` of ``cross-judge align`` (a JSON
object whose ``kind`` is ``"cross-judge alignment"``), the alignment's before and after
(:func:`cross_judge.report.alignment_page`). This module checks the paths, tells the three
apart and says where the page went. No model is called.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._common import EXIT_OK, has_torn_tail, say, stdout_console

if TYPE_CHECKING:
    from ..ranking import Ranking

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` and its options to ``sub``."""
    report = sub.add_parser(
        "report",
        help="one self-contained HTML page of a finished run (opens offline)",
        description=(
            "Write OUT.jsonl's results as one HTML file that opens offline (styles, data and "
            "chart scripts inlined): the run's provenance from its manifest, a critic x critic "
            "kappa heatmap, per-critic error, parse-fail, latency and cost, confusion against "
            "--gold (else against the consensus), the consensus distribution, a cascade's "
            "tiers, the position bias of pairs, and a searchable, sortable table of the "
            "disputed items with the text each judged (when OUT stores it) and each critic's "
            "label, confidence and reasoning. With --gold, each disputed item's gold label "
            "and a table of the items whose consensus is wrong against it (unanimous ones "
            "included); with a rubric's gold, accuracy per criterion. Simulated critics are "
            "said to be so. Given the ranking.json of cross-judge rank, its leaderboard; "
            "given the alignment.json of cross-judge align, the alignment's before and after "
            "on the held-out items (each figure's gain and interval, the refusals or the new "
            "prompt versions, each critic's examples). Calls no model."
        ),
    )
    report.add_argument(
        "results",
        metavar="OUT.jsonl",
        help="results of cross-judge review, the ranking.json of cross-judge rank (its "
        "leaderboard page) or the alignment.json of cross-judge align (its before and after)",
    )
    report.add_argument(
        "-o",
        "--out",
        metavar="REPORT.html",
        help="where to write the page (replaced if it exists); default OUT.html beside OUT.jsonl",
    )
    report.add_argument(
        "--gold",
        metavar="GOLD.jsonl",
        help='labels to measure the critics and the consensus against: {"id", "label"} '
        'lines and/or a rubric\'s {"id", "criteria": {"<criterion>": "<label>"}} lines, '
        "as stats --gold reads them",
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


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge report``; the exit code."""
    from ..report import DEFAULT_MAX_ITEMS, write_report

    results = Path(args.results)
    if not results.is_file():
        raise ConfigError(
            f"{results}: no such results file; pass the OUT.jsonl of cross-judge review"
        )
    if args.gold is not None and not Path(args.gold).is_file():
        raise ConfigError(
            f'--gold {args.gold}: no such file; pass a JSONL file of {{"id", "label"}} '
            'or {"id", "criteria": {...}} lines'
        )
    if args.manifest is not None and not Path(args.manifest).is_file():
        raise ConfigError(f"--manifest {args.manifest}: no such file")
    if args.max_items is not None and args.max_items < 0:
        raise ConfigError(f"--max-items must be >= 0, got {args.max_items}")
    out = Path(args.out) if args.out else results.with_suffix(".html")
    if out.resolve() == results.resolve():
        raise ConfigError(f"--out {out} is the results file; write the report to another file")
    document = _json_object_in(results)
    record = None if document is None else _alignment_in(document)
    if record is not None:  # a cross-judge align record: its before and after
        return _alignment_report(args, results, record, out)
    ranking = None if document is None else _ranking_in(document)
    if ranking is not None:  # a cross-judge rank output: its leaderboard page
        ranking.to_html(out, title=args.title)
        say(stdout_console(), f"report: {out} (the leaderboard, opens offline)")
        return EXIT_OK
    if has_torn_tail(str(results)):
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
    say(
        stdout_console(),
        f"report: {written} ({written.stat().st_size / 1e6:.1f} MB, opens offline)",
    )
    return EXIT_OK


def _json_object_in(path: Path) -> bytes | None:
    """The bytes of ``path`` when it may hold one JSON object (it starts with ``{`` and is
    not named ``.jsonl``), else ``None`` (a results file)."""
    with path.open("rb") as handle:
        head = handle.read(1)
    if head != b"{" or path.suffix == ".jsonl":
        return None
    return path.read_bytes()


def _alignment_in(document: bytes) -> dict[str, Any] | None:
    """The alignment record (``cross-judge align``'s ``alignment.json``) ``document``
    holds, else ``None``; its keys are checked when the page is made."""
    from ..report import is_alignment_record

    try:
        data = json.loads(document)
    except ValueError:  # not one JSON object (a one-line results file, say)
        return None
    return data if isinstance(data, dict) and is_alignment_record(data) else None


def _alignment_report(
    args: argparse.Namespace, source: Path, record: dict[str, Any], out: Path
) -> int:
    """Write the page of an alignment record; the exit code.

    Raises:
        ConfigError: an option of a results file's page was given, the record is not as
            ``cross-judge align`` writes it, or the folder of ``out`` does not exist.
    """
    from ..report import alignment_page

    given = [
        option
        for option, value in (
            ("--gold", args.gold),
            ("--manifest", args.manifest),
            ("--max-items", args.max_items),
        )
        if value is not None
    ]
    if given:
        raise ConfigError(
            f"{source} is an alignment record, which holds its own figures: "
            f"{', '.join(given)} apply to a results file; pass only --out and --title"
        )
    page = alignment_page(record, title=args.title, source=str(source))
    if not out.parent.is_dir():
        raise ConfigError(
            f"--out {out}: {out.parent} does not exist; create it or choose another path"
        )
    out.write_text(page, encoding="utf-8")
    say(stdout_console(), f"report: {out} (the alignment's before and after, opens offline)")
    return EXIT_OK


def _ranking_in(document: bytes) -> Ranking | None:
    """The :class:`~cross_judge.ranking.Ranking` a ``cross-judge rank --out`` file holds
    (one JSON object with ``order`` and ``ratings``), else ``None`` (a results file)."""
    from ..ranking import Ranking

    try:
        return Ranking.model_validate_json(document)
    except ValueError:
        return None
