"""``cross-judge calibrate``: a cascade's escalation thresholds chosen on labelled items (the
results of ``review --all-tiers``) so that its agreement with the labels is guaranteed; the
fit, what weakens it, and the ``escalate:`` block for the panel file. No model is called.

The statistics are :func:`cross_judge.cascade_calibration.calibrate_cascade`'s; this module
checks the input and writes the result.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._arguments import fraction
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    counted,
    note,
    read_results_file,
    say,
    shown_ids,
    stderr_console,
    stdout_console,
)

if TYPE_CHECKING:
    from rich.console import Console

    from ..cascade_calibration import CascadeFit, Per
    from ..verdict import EnsembleVerdict

__all__ = ["add_parser", "run"]


def _score_names() -> tuple[str, ...]:
    """The scores a threshold can apply to (``agreement``, ``confidence``, ...)."""
    from typing import get_args

    from ..cascade import Score

    return tuple(str(name) for name in get_args(Score))


def _threshold_names() -> list[str]:
    """The threshold fields of an :class:`~cross_judge.cascade.Escalation`."""
    return [f"{name}_below" for name in _score_names()]


def _scores(text: str) -> list[str]:
    """``"agreement,confidence"`` -> ``["agreement", "confidence"]``: the scores of
    ``--score``, one or one per tier that can escalate."""
    scores = [part.strip() for part in text.split(",")]
    known = _score_names()
    if any(s not in known for s in scores):
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(known)}, or a comma-separated list of them (one per "
            f"tier that can escalate), got {text!r}"
        )
    return scores


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``calibrate`` and its options to ``sub``."""
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
        type=fraction,
        default=0.9,
        metavar="A",
        help="agreement with the labels to guarantee on decided items (default 0.9)",
    )
    calibrate.add_argument(
        "--delta",
        type=fraction,
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
        "--per",
        choices=("total", "criterion"),
        default=None,
        help=(
            "for a cascade of rubric panels: a threshold per criterion, checked against the "
            'gold label of each criterion (gold lines with "criteria": {id: label}), or one '
            'threshold checked against the item\'s PASS/FAIL ("label"); default criterion '
            "when the gold file gives criterion labels only"
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


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge calibrate``; the exit code."""
    from ..cascade_calibration import calibrate_cascade

    gold_path = Path(args.gold)
    if not gold_path.is_file():
        what = "not a file" if gold_path.exists() else "no such gold file"
        raise ConfigError(f'--gold {gold_path}: {what}; pass a JSONL file of {{"id", "label"}}')
    batch = read_results_file(args.results, slim=True)
    gold, per = _gold_for(gold_path, args.per)
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
            f"{counted(len(shallow), 'labelled result')} in {args.results} "
            f"{'does' if len(shallow) == 1 else 'do'} not hold every tier's result "
            f"({shown_ids(shallow)}): calibration needs every tier asked on every item. Judge "
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
        per=per,
    )
    out, err = stdout_console(), stderr_console()
    out.print(fit.summary())
    unlabelled = len(batch.verdicts) - len(labelled)
    if unlabelled:
        note(
            err, f"{counted(unlabelled, 'result')} of {args.results} without a gold label left out"
        )
    _calibration_notes(labelled, fit, err)
    say(out, "")
    say(out, _escalate_snippet(fit, args.results))
    if fit.guaranteed:
        return EXIT_OK
    # Said on stderr too (stdout may go to a file), in the summary's words.
    note(
        err,
        f"{fit.guarantee} Label more items, lower --target, raise --delta, or strengthen the tiers",
    )
    return EXIT_FAILED


def _gold_for(
    path: Path, per: str | None
) -> tuple[Mapping[str, str] | Mapping[str, Mapping[str, str]], Per]:
    """The gold labels ``--per`` calibrates on, and the mode: item labels (``"label"``) for
    ``total``, criterion labels (``"criteria"``) for ``criterion``; without ``--per``,
    ``criterion`` when the file gives criterion labels and no item label.

    Raises:
        ConfigError: the file lacks the labels the mode needs (saying which key to add).
    """
    from ..stats import load_gold, read_gold_file

    if b'"criteria"' not in path.read_bytes():
        items: dict[str, str] = load_gold(path)
        criteria: dict[str, dict[str, str]] = {}
    else:
        items, criteria = read_gold_file(path)
    chosen: Per = "criterion" if per == "criterion" or (per is None and not items) else "total"
    if chosen == "criterion":
        if not criteria:
            raise ConfigError(
                f'--gold {path}: --per criterion needs criterion labels: lines of {{"id", '
                '"criteria": {"<criterion id>": "<label>"}}'
            )
        return criteria, chosen
    if not items:
        raise ConfigError(
            f'--gold {path}: no line gives an item label ("label"); give one per item, or '
            "calibrate per criterion with --per criterion"
        )
    return items, chosen


def _calibration_notes(labelled: Sequence[EnsembleVerdict], fit: CascadeFit, err: Console) -> None:
    """Say what weakens a fit: labelled items with a failed call in some tier (that tier
    cannot stand there, and a last tier that decides is likely wrong), and a threshold on
    the agreement of a one-critic tier (always 1.0, so it never escalates)."""
    from ..batch import call_failed

    failed = [r.query_id for r in labelled if any(call_failed(v) for v in r.verdicts)]
    if failed:
        note(
            err,
            f"{counted(len(failed), 'labelled result')} with a failed call in some tier "
            f"({shown_ids(failed)}): that tier does not stand on those items, which weighs on "
            "the fit; judge them again (into a new --out) for a fairer one",
        )
    first = (labelled[0].tiers or []) if labelled else []
    for tier, score in enumerate(fit.scores):
        critics = {v.critic_id for v in first[tier].verdicts} if tier < len(first) else set()
        if score == "agreement" and len(critics) == 1:
            note(
                err,
                f"tier {tier} has one critic, whose agreement with itself is always 1.0: a "
                "threshold on it never escalates; give that tier --score confidence or "
                "support (a comma-separated list, one per tier)",
            )


def _escalate_snippet(fit: CascadeFit, source: str) -> str:
    """The ``final:`` and ``escalate:`` lines of a panel file for ``fit.escalation``, under
    comments that state its guarantee (or its absence) in the summary's words."""
    import textwrap

    escalation = fit.escalation
    if fit.guaranteed:
        said = f"Calibrated by cross-judge calibrate on {source}. {fit.guarantee}"
    else:
        said = f"NO GUARANTEE. {fit.guarantee}"
    lines = [f"# {line}" for line in textwrap.wrap(said, 88, break_on_hyphens=False)]
    lines += ["# paste into the panel file (top level, beside tiers:)", f"final: {fit.final}"]
    lines.append("escalate:")
    for name in _threshold_names():
        value = _threshold_yaml(getattr(escalation, name))
        if value is not None:
            lines.append(f"  {name}: {value}")
    lines.append(f"  on_error: {'true' if escalation.on_error else 'false'}")
    lines.append(f"  on_fallback: {'true' if escalation.on_fallback else 'false'}")
    if escalation.on_dispute is not None:
        lines.append(f"  on_dispute: {'true' if escalation.on_dispute else 'false'}")
    return "\n".join(lines)


def _threshold_yaml(value: object) -> str | None:
    """A threshold as YAML, as the escalation holds it: a number, or a list with one entry
    per tier that can escalate (``null`` where a tier has none), so that a panel with
    another number of tiers refuses it; ``None`` when no tier has one."""

    def number(x: object) -> str:
        if not isinstance(x, (int, float)):
            return "null"
        return ".inf" if math.isinf(x) else f"{x:g}"

    if isinstance(value, Mapping):  # per criterion id (a rubric cascade)
        entries = {key: _threshold_yaml(entry) for key, entry in value.items()}
        shown = [f"{key}: {entry}" for key, entry in entries.items() if entry is not None]
        return "{" + ", ".join(shown) + "}" if shown else None
    if isinstance(value, (int, float)):
        return number(value)
    if not isinstance(value, Sequence) or all(v is None for v in value):
        return None
    return "[" + ", ".join(number(v) for v in value) + "]"
