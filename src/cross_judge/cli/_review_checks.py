"""The refusals of ``cross-judge review`` that come before anything is billed: a
``--budget-usd`` of 0, a ``--budget-usd`` run whose models have no known price, a
``--resume`` with another shard or another panel than the results file's last run, a
budget the file has already spent.

It only checks and raises :class:`~cross_judge.errors.ConfigError` (or notes on stderr);
the run itself is :mod:`._review`'s.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import counted, note

if TYPE_CHECKING:
    from rich.console import Console

    from ..batch import ResultsFile
    from ..budget import Budget
    from ..cascade import Cascade
    from ..ensemble import Ensemble
    from ..report import RunManifest

__all__ = [
    "check_budget_given",
    "check_prices",
    "check_same_panel",
    "check_same_shard",
    "file_budget",
]


def check_budget_given(budget_usd: float | None) -> None:
    """Refuse ``--budget-usd 0``, first of all: it would make no call and mark every verdict
    SKIPPED (over budget), leaving a results file of nothing to retry."""
    if budget_usd is not None and budget_usd <= 0:
        raise ConfigError(
            f"--budget-usd {budget_usd:g} would make no call: every call would be skipped as "
            "over budget. Give the most the results file may cost in US dollars (e.g. "
            "--budget-usd 5), or leave --budget-usd out for no cap"
        )


def check_prices(panel: Ensemble | Cascade) -> None:
    """Raise, for a ``--budget-usd`` run, naming every critic (of every tier) whose model
    has no known price and the ``--prices`` file that would give it one (the library's
    message points to ``register_price``, which a command-line user cannot call)."""
    missing = [c for c in panel.critics if c.price() is None]
    if not missing:
        return
    by_vendor: dict[str, dict[str, None]] = {}
    for critic in missing:
        by_vendor.setdefault(critic.endpoint().name, {})[critic.model] = None
    lines = "".join(
        f"      {vendor}:\n        models:\n"
        + "".join(
            f"          {json.dumps(model)}: {{input: ..., output: ...}}\n" for model in models
        )
        for vendor, models in by_vendor.items()
    )
    names = ", ".join(f"{c.name!r} ({c.model} on {c.endpoint().name})" for c in missing)
    raise ConfigError(
        f"--budget-usd needs the price of every critic's model, and none is known for "
        f"{names}; pass --prices FILE with a YAML price file such as\n"
        f"    vendors:\n{lines}"
        "(USD per million input and output tokens; the shipped table is "
        "cross_judge/prices.yaml)"
    )


def check_same_shard(args: argparse.Namespace, out_path: Path, manifest: RunManifest) -> None:
    """Refuse to resume ``out_path`` with another ``--shard`` (or none) than its last run
    used, as its manifest records it: the file holds that shard's results, and another
    shard's items are other machines' work. Not overridden by ``--allow-panel-change``
    (the panel is the same). Without a readable manifest, :func:`check_same_panel` says
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


def check_same_panel(
    args: argparse.Namespace, out_path: Path, manifest: RunManifest, err: Console
) -> None:
    """Refuse to resume ``out_path`` with a panel that judges differently from the one of
    its last run (as its manifest records it), unless ``--allow-panel-change``."""
    previous = manifest.previous_run()
    if previous is None:
        note(
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
        note(err, f"warning: resuming with a changed panel (--allow-panel-change):\n{listed}")
        return
    raise ConfigError(
        f"--resume with a changed panel: {out_path} holds results of the panel its last run "
        f"used (started {previous.get('started_at', '?')}), and {args.panel} now differs:\n"
        f"{listed}\n"
        "Mixing both in one file would make its agreement and consensus counts meaningless. "
        "Write the new panel's results to another --out, or pass --allow-panel-change to "
        "continue this file anyway (the manifest records both panels)."
    )


def file_budget(
    args: argparse.Namespace, out_path: Path, results: ResultsFile, err: Console
) -> Budget | None:
    """The budget of ``--budget-usd``: a cap on the results file as a whole, so it starts
    from what the results already in it cost (a resumed run)."""
    from ..budget import Budget

    if args.budget_usd is None:
        return None
    before = results.spent_usd
    if results.unpriced:
        note(
            err,
            f"note: {counted(results.unpriced, 'result')} in {out_path} "
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
