"""``cross-judge compare BASE.jsonl CAND.jsonl``: a candidate run against a baseline run of
the same judge on the same items, as a gate.

Reads two results files of ``cross-judge review`` (each with the run manifest beside it) or
two ranking files of ``cross-judge rank``, and prints the comparison
(:func:`cross_judge.report.compare_runs`) to stdout as text, Markdown (for a pull-request
comment) or JSON; ``--html`` also writes the offline page with the flipped items side by
side. Calls no model.

Exit status: 1 when the comparison fails its gate (``--fail-on regression``, the default: a
significant regression larger than ``--min-effect``; ``--fail-on change``: a significant
change either way), 0 otherwise, 2 on bad input (a missing or unreadable file, a missing
manifest, different item sets, a different judge, a bad option), with a message that says
the fix.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._arguments import fraction, non_negative, positive_int
from ._common import EXIT_FAILED, EXIT_OK, note, stderr_console

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``compare`` and its options to ``sub``."""
    command = sub.add_parser(
        "compare",
        help="compare a candidate run with a baseline run of the same judge (a CI gate)",
        description=(
            "Pair the items of BASE.jsonl and CAND.jsonl by id, check that the judge is the "
            "same (the run manifests and what the verdicts record), and test the difference "
            "in the metric with a paired test (exact McNemar for a label share or an "
            "accuracy, Wilcoxon signed-rank with a paired-bootstrap interval for scores, a "
            "paired bootstrap of the ratings for rankings), per label, critic and criterion "
            "too (Holm's correction). Exit 1 on a significant regression larger than "
            "--min-effect (or any such change with --fail-on change), 0 otherwise, 2 on bad "
            "input. Calls no model."
        ),
    )
    command.add_argument("baseline", metavar="BASE.jsonl", help="the baseline run's results")
    command.add_argument("candidate", metavar="CAND.jsonl", help="the candidate run's results")
    command.add_argument(
        "--metric",
        choices=("auto", "label_share", "accuracy", "score", "rating"),
        default="auto",
        help="what to compare (default auto: rating for rankings, accuracy with --gold, "
        "else label_share)",
    )
    command.add_argument("--label", help="the label of label_share (default PASS)")
    command.add_argument("--gold", metavar="labels.jsonl", help="gold labels, for accuracy")
    command.add_argument(
        "--noise",
        metavar="AGAIN.jsonl",
        help="a second judgement of the baseline's own outputs (an A/A run): the judge's noise",
    )
    command.add_argument(
        "--min-effect",
        type=non_negative,
        default=0.0,
        help="the smallest difference that fails the gate, in the metric's units "
        "(0.02: 2 points of a share; default 0)",
    )
    command.add_argument(
        "--alpha", type=fraction, default=0.05, help="significance level (default 0.05)"
    )
    command.add_argument(
        "--confidence", type=fraction, default=0.95, help="intervals' level (default 0.95)"
    )
    command.add_argument(
        "--lower-is-better",
        action="store_true",
        help="the metric's direction is down (a FAIL share, an error rate)",
    )
    command.add_argument(
        "--fail-on",
        choices=("regression", "change"),
        default="regression",
        help="exit 1 on a significant regression (default) or on any significant change",
    )
    command.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="what stdout gets (markdown: ready for a pull-request comment)",
    )
    command.add_argument("--html", metavar="DIFF.html", help="also write the comparison page")
    command.add_argument(
        "--allow-panel-change",
        action="store_true",
        help="compare even when the judge differs (the output says how)",
    )
    command.add_argument(
        "--allow-missing-manifest",
        action="store_true",
        help="compare a run without its manifest on what its results record",
    )
    command.add_argument(
        "--allow-unmatched",
        action="store_true",
        help="compare the shared items when the runs judged different ones",
    )
    command.add_argument(
        "--resamples", type=positive_int, default=2000, help="paired bootstrap resamples"
    )
    command.add_argument("--seed", type=int, default=0, help="paired bootstrap seed")


def run(args: argparse.Namespace) -> int:
    """Compare the two runs, print the comparison, return the gate's exit status.

    Raises:
        ConfigError: bad input (the CLI's main turns it into exit 2 and its message).
    """
    from ..report import compare_runs

    diff = compare_runs(
        args.baseline,
        args.candidate,
        metric=args.metric,
        gold=args.gold,
        label=args.label,
        noise=args.noise,
        alpha=args.alpha,
        min_effect=args.min_effect,
        confidence=args.confidence,
        higher_is_better=not args.lower_is_better,
        allow_panel_change=args.allow_panel_change,
        allow_missing_manifest=args.allow_missing_manifest,
        allow_unmatched=args.allow_unmatched,
        resamples=args.resamples,
        seed=args.seed,
    )
    output = {"text": diff.to_text, "markdown": diff.to_markdown, "json": diff.to_json}
    text = output[args.format]()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if args.html:
        diff.write_html(Path(args.html))
        note(stderr_console(), f"comparison page: {args.html}")
    return EXIT_FAILED if diff.failed(args.fail_on) else EXIT_OK
