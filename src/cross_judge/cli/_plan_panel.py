"""``cross-judge plan-panel``: which panel to run, chosen from a pilot's own results.

Replays the stored verdicts of a pilot (every candidate critic judged the same items) under
every subset of critics, each voting strategy and two-tier cascades, within a budget per
item, and prints the ranked plans with their held-out accuracy; ``--out`` writes the best
as a panel file made from the pilot's. No model is called. The choice is
:func:`cross_judge.panel_choice.select_panel`'s; this module reads the options and writes
the result.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from pathlib import Path

from ..errors import ConfigError
from ._arguments import dollars, fraction, positive_int
from ._common import EXIT_OK, note, read_results_file, say, stderr_console, stdout_console

__all__ = ["add_parser", "run"]


def _price(text: str) -> tuple[str, float]:
    """``"mini=0.0004"`` -> ``("mini", 0.0004)``: a critic's cost per item in USD."""
    name, sep, value = text.rpartition("=")
    try:
        usd = float(value)
    except ValueError:
        usd = math.nan
    if not sep or not name.strip() or not math.isfinite(usd) or usd < 0:
        raise argparse.ArgumentTypeError(
            f"expected CRITIC=USD (a critic's cost per item, e.g. mini=0.0004), got {text!r}"
        )
    return name.strip(), usd


def _strategies(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected e.g. majority,weighted; got {text!r}")
    return names


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``plan-panel`` and its options to ``sub``."""
    plan = sub.add_parser(
        "plan-panel",
        help="choose the panel (critics, voting, tiers) from a pilot's results (no model calls)",
        description=(
            "Rank the panels a pilot run could have been: every subset of its critics (a "
            "greedy search beyond 12), voting by majority, learned weights or Dawid-Skene, "
            "and two-tier cascades with a calibrated escalation, within --budget-per-item. "
            "RESULTS.jsonl holds a run in which every candidate critic judged the same "
            "items. Plans are ranked on part of the items and their accuracy is reported "
            "on the others: against --gold, or estimated by a Dawid-Skene model of the "
            "votes without it. --out writes the best plan as a panel file. Calls no model."
        ),
    )
    plan.add_argument("results", metavar="RESULTS.jsonl", help="the pilot's results")
    plan.add_argument("--gold", metavar="GOLD.jsonl", help='labels: {"id", "label"} lines')
    plan.add_argument(
        "--budget-per-item",
        type=dollars,
        metavar="USD",
        help="the most a plan may cost per item (default: no limit)",
    )
    plan.add_argument("--size", type=positive_int, metavar="N", help="plans of N critics only")
    plan.add_argument(
        "--strategies",
        type=_strategies,
        default=["majority", "weighted", "dawid_skene"],
        metavar="LIST",
        help="voting to try, comma-separated (default majority,weighted,dawid_skene)",
    )
    plan.add_argument("--no-cascade", action="store_true", help="offer no two-tier cascade")
    plan.add_argument(
        "--price",
        type=_price,
        action="append",
        default=[],
        metavar="CRITIC=USD",
        help="a critic's cost per item, where its verdicts carry none (repeat per critic)",
    )
    plan.add_argument(
        "--holdout",
        type=fraction,
        default=0.5,
        metavar="SHARE",
        help="share of the items held out to report on (default 0.5)",
    )
    plan.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
    plan.add_argument(
        "--top", type=positive_int, default=10, metavar="N", help="plans shown (default 10)"
    )
    plan.add_argument(
        "--panel",
        metavar="PANEL.yaml",
        help="the pilot's panel file, for --out (default: the one its run manifest records)",
    )
    plan.add_argument(
        "--out", metavar="panel.yaml", help="write the best plan as a panel file (never over one)"
    )
    plan.add_argument("--json", action="store_true", help="print the plans as JSON")


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge plan-panel``; the exit code."""
    from ..panel_choice import select_panel

    gold = None
    if args.gold is not None:
        gold_path = Path(args.gold)
        if not gold_path.is_file():
            what = "not a file" if gold_path.exists() else "no such gold file"
            raise ConfigError(f'--gold {gold_path}: {what}; pass a JSONL file of {{"id", "label"}}')
        gold = str(gold_path)
    prices = dict(args.price)
    if len(prices) < len(args.price):
        raise ConfigError("--price names a critic twice: give each critic one price")
    out_path = None if args.out is None else Path(args.out)
    if out_path is not None and out_path.exists():
        raise ConfigError(f"--out {out_path} exists already; plan-panel never overwrites a file")
    panel_file = _panel_file(args) if out_path is not None else None
    batch = read_results_file(args.results, slim=True)
    err = stderr_console()
    with warnings.catch_warnings(record=True):  # the notes carry them
        warnings.simplefilter("always")
        plans = select_panel(
            batch,
            gold,
            budget_per_item=args.budget_per_item,
            size=args.size,
            strategies=args.strategies,
            cascade=not args.no_cascade,
            seed=args.seed,
            holdout=args.holdout,
            prices=prices or None,
            top=args.top,
        )
    out = stdout_console()
    if args.json:  # the record holds the notes; said on stderr too, for a reader
        say(out, json.dumps(plans.record(), indent=2, ensure_ascii=False))
        for line in plans.notes:
            note(err, line)
    else:  # the table ends with the notes
        out.print(plans.summary())
    if out_path is not None and panel_file is not None:
        written = plans.write(out_path, panel_file=panel_file)
        note(err, f"wrote {written}: {plans.best.describe()}")
    return EXIT_OK


def _panel_file(args: argparse.Namespace) -> Path:
    """The pilot's panel file: ``--panel``, else the last run's in the manifest."""
    from ..stats import manifest_runs

    if args.panel is not None:
        path = Path(args.panel)
        if not path.is_file():
            raise ConfigError(f"--panel {path}: no such panel file")
        return path
    for recorded in reversed(manifest_runs(args.results)):
        panel = recorded.get("panel")
        name = panel.get("file") if isinstance(panel, dict) else None
        if isinstance(name, str) and Path(name).is_file():
            return Path(name)
    raise ConfigError(
        f"--out needs the pilot's panel file and the run manifest beside {args.results} names "
        "none that exists here: pass --panel PANEL.yaml (the file the pilot was judged with)"
    )
