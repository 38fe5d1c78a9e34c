"""``cross-judge stats``: the agreement statistics of a finished run; with ``--gold`` the
critics against labels, with ``--fit-confidence`` their confidence calibration (that part
is :mod:`._fit_confidence`), and with ``--disputed`` the items that need a look, with the
text they judged. Critics the run manifest records as simulated are named as such. No
model is called.

The results file is read once, line by line, into a
:class:`~cross_judge.report._digest.BatchDigest`: memory holds counts, a few bytes per item,
the labelled items (with ``--gold``) and the disputed items listed, never every result.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._arguments import fraction, positive_int
from ._common import EXIT_OK, read_results_digest, say, stdout_console
from ._fit_confidence import fit_confidence

if TYPE_CHECKING:
    from rich.console import Console

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
            "(partial gold is fine): accuracy with its 95%% Wilson interval, Cohen's kappa, "
            "coverage, Brier score, calibration error, the log-odds weights they earn, and "
            "paired comparisons of the critics and the consensus on the same items (exact "
            "McNemar on the items one got right and the other wrong, Holm-adjusted)"
        ),
    )
    stats.add_argument(
        "--ci",
        type=fraction,
        metavar="LEVEL",
        help=(
            "with --gold: the level of the intervals (e.g. 0.95): Wilson's for accuracy "
            "(95%% without --ci), the paired comparisons', and a bootstrap interval for kappa"
        ),
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
    from ..report import render_disputed, render_summary
    from ..stats import jury_shown_note, read_gold_labels

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
    jury_note: str | None = None
    item_gold: dict[str, str] | None = None
    criteria_gold: dict[str, dict[str, str]] | None = None
    if args.gold is not None:
        gold_path = Path(args.gold)
        if not gold_path.is_file():
            raise ConfigError(
                f'--gold {gold_path}: no such file; pass a JSONL file of {{"id", "label"}}'
            )
        read = read_gold_labels(gold_path)
        item_gold, criteria_gold = read.split()
        jury_note = jury_shown_note(len(read.jury_shown), len(read.ids))
    digest = read_results_digest(
        args.results,
        level=args.level,
        values=order,
        gold=item_gold,
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
        digest,
        level=args.level,
        alpha=alpha,
        detailed=True,
        gold=gold_path if criteria_gold is None else item_gold,
        ci=args.ci,
    )
    console = stdout_console()
    console.print(summary)
    if jury_note is not None:
        say(console, f"note: {jury_note}")
    if _holds_criteria(args.results):
        _print_criteria(console, args.results, digest.critics, criteria_gold, args.ci)
    if args.disputed is not None:
        console.print(render_disputed(digest, args.disputed))
    if args.fit_confidence is None or gold_path is None:
        return EXIT_OK
    if criteria_gold is not None and item_gold is None:
        raise ConfigError(
            f"--fit-confidence fits on item labels, and {gold_path} holds criterion labels "
            'only; add "label" to its lines'
        )
    return fit_confidence(digest.gold_batch(), gold_path, args.fit_confidence, args.results)


def _holds_criteria(results: str) -> bool:
    """Whether some result line of the file carries criteria: a quick scan for the key
    before the file is parsed a second time (a file without any is never re-read)."""
    with open(results, "rb") as handle:
        return any(b'"criteria":' in line for line in handle)


def _print_criteria(
    console: Console,
    results: str,
    critics: Sequence[str],
    gold: Mapping[str, Mapping[str, str]] | None,
    ci: float | None,
) -> None:
    """The agreement per criterion of a rubric results file and, with criterion gold
    labels, each critic's and the consensus's accuracy per criterion, with its Wilson
    interval."""
    from ..report import criteria_gold_table
    from ..stats import CriteriaVotes, agreement_table, criteria_agreement, criteria_gold_metrics

    votes = CriteriaVotes.of(results, critics=critics, confidences=gold is not None)
    if not votes.ids:
        return
    console.print(agreement_table(criteria_agreement(votes)))
    if gold is not None:
        console.print(criteria_gold_table(criteria_gold_metrics(votes, gold, ci=ci)))
