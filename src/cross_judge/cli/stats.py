"""``cross-judge stats``: the agreement statistics of a finished run; with ``--gold`` the
critics against labels, with ``--fit-confidence`` their confidence calibration (that part
is :mod:`.fit_confidence`), and with ``--disputed`` the items that need a look, with the
text they judged. Critics the run manifest records as simulated are named as such. No
model is called.

The results file is read once, line by line, into a
:class:`~cross_judge.report.digest.BatchDigest`: memory holds counts, a few bytes per item,
the labelled items (with ``--gold``) and the disputed items listed, never every result.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError
from .arguments import fraction, positive_int
from .common import EXIT_OK, read_results_digest, stdout_console
from .fit_confidence import fit_confidence

__all__ = ["LEVELS", "add_parser", "run"]

LEVELS = ("nominal", "ordinal", "interval", "ratio")
DISPUTED_SHOWN = 20
"""Disputed items ``--disputed`` lists when given no number."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``stats`` and its options to ``sub``."""
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
            "the panel file. With --disputed, the items that need a look with the text "
            "they judged. Critics the run manifest records as simulated are named as "
            "such. Calls no model."
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
        "--numbers",
        choices=("auto", "scores", "labels"),
        default="auto",
        help=(
            "for --level interval, ratio or ordinal without --order: read every verdict's "
            "score (scores), every label as a number (labels), or scores when every valid "
            "verdict has one and labels when none has (auto, the default; a run where only "
            "some have a score is refused)"
        ),
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
        type=fraction,
        metavar="LEVEL",
        help="with --gold: bootstrap intervals at this level (e.g. 0.95) for accuracy and kappa",
    )
    stats.add_argument(
        "--disputed",
        nargs="?",
        const=DISPUTED_SHOWN,
        type=positive_int,
        metavar="N",
        help=(
            f"also list the disputed items (split vote, failed call, no consensus, "
            f"escalated, order flip), at most N (default {DISPUTED_SHOWN}), each with its "
            "query and context as stored in OUT and every critic's label"
        ),
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


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge stats``; the exit code."""
    from ..report.summary import render_disputed, render_summary
    from ..stats.gold import load_gold

    order = [label.strip() for label in args.order.split(",")] if args.order else None
    if order is not None and args.level != "ordinal":
        raise ConfigError("--order is for --level ordinal")
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
    digest = read_results_digest(
        args.results,
        level=args.level,
        values=order,
        gold=None if gold_path is None else load_gold(gold_path),
        disputed=args.disputed or 0,
        reasoning=False,
    )
    try:
        alpha = digest.reliability_alpha(args.level, values=order, numbers=args.numbers)
    except ConfigError as exc:
        text = str(exc)
        if "numbers=" in text:
            text += " (on the command line: --numbers labels or --numbers scores)"
        elif "values=" in text:
            text += " (on the command line: --level ordinal --order LOW,...,HIGH)"
        raise ConfigError(text) from None
    summary = render_summary(
        digest, level=args.level, alpha=alpha, detailed=True, gold=gold_path, ci=args.ci
    )
    console = stdout_console()
    console.print(summary)
    if args.disputed is not None:
        console.print(render_disputed(digest, args.disputed))
    if args.fit_confidence is None or gold_path is None:
        return EXIT_OK
    return fit_confidence(digest.gold_batch(), gold_path, args.fit_confidence, args.results)
