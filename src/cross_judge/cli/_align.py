"""``cross-judge align``: align a panel's critics with people's labels and write the new
prompt versions.

``cross-judge align PANEL.yaml --gold labels.jsonl --items items.jsonl --out prompts/``
judges the labelled items with the panel (or reads that run from ``--results``), chooses
each critic's examples from part of them, judges the held-out part again with the aligned
panel and prints the before/after table (:func:`cross_judge.alignment.align`). When the
jury's gain is clearly above 0 and its effective votes did not fall, it writes each
critic's next prompt version, a panel file that uses them and ``alignment.json`` (the
figures) to ``--out``; otherwise it writes nothing and exits 3 (``--force`` writes anyway).

Both runs are kept in ``--out/.align/`` (``before.jsonl``, ``after.jsonl``) as they go, one
result a line: ``--resume`` after an interrupted run keeps every finished result and asks
only for the rest, so nothing finished is billed twice.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import AlignmentRefused, ConfigError
from ._arguments import positive_int
from ._common import EXIT_OK, EXIT_REFUSED, counted, note, say, stderr_console, stdout_console

if TYPE_CHECKING:
    from ..alignment import AlignmentPlan
    from ..batch import BatchResult, Item
    from ..ensemble import Ensemble
    from ..verdict import EnsembleVerdict

__all__ = ["WORK_DIR", "add_parser", "run"]

WORK_DIR = ".align"
"""The folder under ``--out`` that keeps both runs' results while an alignment runs."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``align`` and its options to ``sub``."""
    command = sub.add_parser(
        "align",
        help="align the panel's critics with people's labels: new prompt versions, measured",
        description=(
            "Choose each critic's few-shot examples from labelled items (those it and the "
            "jury got wrong first, different for each critic), judge the held-out labelled "
            "items again with the aligned prompts, print before and after with intervals, "
            "and write each critic's next prompt version and a panel file using them to "
            "--out, unless the jury's gain is not clearly above 0 (exit 3)."
        ),
    )
    command.add_argument("panel", metavar="PANEL.yaml", help="the panel to align")
    command.add_argument(
        "--gold", required=True, metavar="LABELS.jsonl", help='people\'s labels: {"id", "label"}'
    )
    command.add_argument(
        "--items", required=True, metavar="ITEMS.jsonl", help="the items, with their ids"
    )
    command.add_argument(
        "--out", required=True, metavar="DIR", help="where to write the new prompt versions"
    )
    command.add_argument(
        "--results",
        metavar="RESULTS.jsonl",
        help="the panel's results on the items (cross-judge review); default: judge them now",
    )
    command.add_argument(
        "--method", choices=("examples",), default="examples", help="how (default examples)"
    )
    command.add_argument("--k", type=positive_int, default=4, help="examples per critic (4)")
    command.add_argument(
        "--holdout", type=float, default=0.3, help="share of the labels held out to measure (0.3)"
    )
    command.add_argument("--seed", type=int, default=0, metavar="S", help="default 0")
    command.add_argument(
        "--shared",
        action="store_true",
        help="give every critic the same examples (they then err together: fewer effective votes)",
    )
    command.add_argument(
        "--budget-usd", type=float, metavar="USD", help="cap on the measuring calls' cost"
    )
    command.add_argument(
        "--force", action="store_true", help="write the versions even when the gain is unclear"
    )
    command.add_argument(
        "--resume", action="store_true", help="continue an interrupted alignment in --out"
    )
    command.add_argument("--concurrency", type=positive_int, metavar="N", help="items in flight")
    command.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge align``; the exit code."""
    import anyio

    from ..ensemble import Ensemble
    from ..panel_file import load_panel
    from ..stats import read_gold

    out = Path(args.out)
    work = out / WORK_DIR
    if work.exists() and not args.resume:
        raise ConfigError(
            f"{work} holds an earlier alignment's runs; add --resume to continue it, or "
            "choose another --out"
        )
    gold = read_gold(args.gold).items
    spec = load_panel(args.panel)
    err = stderr_console()
    if spec.simulated_critics:
        note(err, f"critics {', '.join(spec.simulated_critics)} are simulated: seeded draws")
    options: dict[str, Any] = {
        "progress": not args.no_progress and sys.stderr.isatty(),
        "concurrency": args.concurrency or spec.concurrency or 32,
    }
    work.mkdir(parents=True, exist_ok=True)
    kept = (_read_results(work / "before.jsonl"), _read_results(work / "after.jsonl"))
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(spec.simulator()) if spec.simulated_critics else None
        panel = spec.build(simulator_url=server.url if server else None)
        if not isinstance(panel, Ensemble):
            raise ConfigError(
                f"{args.panel} is a cascade; align one tier at a time (a panel file of that "
                "tier's critics)"
            )
        items = _read_items(Path(args.items), panel)
        files = (
            stack.enter_context(open(work / "before.jsonl", "a", encoding="utf-8")),
            stack.enter_context(open(work / "after.jsonl", "a", encoding="utf-8")),
        )
        plan = anyio.run(_align, args, panel, items, gold, kept, files, options)
    console = stdout_console()
    console.print(plan)
    if plan.refusals and not args.force:
        note(err, "nothing written; --force writes the versions anyway")
        return EXIT_REFUSED
    try:
        written = plan.write(out, force=args.force, panel_file=args.panel)
    except AlignmentRefused:  # pragma: no cover - refusals were handled above
        return EXIT_REFUSED
    record = out / "alignment.json"
    record.write_text(json.dumps(_record(plan), indent=2, sort_keys=False) + "\n", "utf-8")
    for path in [*written, record]:
        say(console, f"wrote {path}")
    return EXIT_OK


async def _align(
    args: argparse.Namespace,
    panel: Ensemble,
    items: dict[str, Item],
    gold: dict[str, str],
    kept: tuple[list[EnsembleVerdict], list[EnsembleVerdict]],
    files: tuple[IO[str], IO[str]],
    options: dict[str, Any],
) -> AlignmentPlan:
    """The alignment, its runs resumed from ``kept`` and appended to ``files`` (the
    first run's and the held-out run's)."""
    from ..alignment import align

    err = stderr_console()
    try:
        if args.results:
            from ..batch import BatchResult

            before = BatchResult.from_jsonl(args.results)
        else:
            labelled = [items[i] for i in items if i in gold]
            if not labelled:
                raise ConfigError(f"no item of {args.items} has a label in {args.gold}")
            before = await _judged_into(panel, labelled, kept[0], files[0], options, err)
        if kept[1]:
            note(err, f"resuming: {counted(len(kept[1]), 'held-out result')} kept")
        plan: AlignmentPlan = await align(
            before,
            gold,
            panel,
            items=items,
            k=args.k,
            holdout=args.holdout,
            seed=args.seed,
            shared=args.shared,
            panel_file=args.panel,
            done=kept[1],
            on_result=_appender(files[1]),
            budget_usd=args.budget_usd,
            **options,
        )
        return plan
    finally:
        import anyio

        with anyio.CancelScope(shield=True):
            await panel.aclose()


async def _judged_into(
    panel: Ensemble,
    items: list[Item],
    earlier: list[EnsembleVerdict],
    out: IO[str],
    options: dict[str, Any],
    err: Any,
) -> BatchResult:
    """The panel's results on ``items``: those ``earlier`` (a resumed run, judged whole)
    kept, the rest judged now and appended to ``out`` as they finish."""
    from ..batch import BatchResult

    kept = {r.query_id: r for r in earlier}
    if kept:
        note(err, f"resuming: {counted(len(kept), 'result')} of the first run kept")
    todo = [item for item in items if item.id not in kept]
    if todo:
        note(err, f"judging {counted(len(todo), 'labelled item')} with the panel")
        write = _appender(out)
        async with panel.stream(todo, **options) as results:
            async for result in results:
                kept[result.query_id] = result
                write(result)
    ordered = [kept[item.id] for item in items if item.id in kept]
    return BatchResult.from_results(ordered)


def _appender(out: Any) -> Callable[[EnsembleVerdict], None]:
    """A callback writing each result as one line of ``out``, flushed at once."""
    from ..results import dump_result

    def write(result: EnsembleVerdict) -> None:
        out.write(dump_result(result) + "\n")
        out.flush()

    return write


def _read_results(path: Path) -> list[EnsembleVerdict]:
    """The whole results in ``path`` (none if it does not exist); a torn last line (the
    run was killed while writing it) is left out, and every result with a failed call is
    dropped so that it is judged again."""
    from ..results import load_result

    if not path.is_file():
        return []
    results = []
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            result = load_result(line)
        except ValueError:
            continue  # torn by the interruption: asked again
        if not any(v.error is not None for v in result.verdicts):
            results.append(result)
    return results


def _read_items(path: Path, panel: Ensemble) -> dict[str, Item]:
    """The items of ``path`` by id (every line needs one)."""
    from ._items import ItemReader

    console = stderr_console()
    found: dict[str, Item] = {}
    for item in ItemReader(path, panel.critics, set(), console):
        found[item.id] = item
    if not found:
        raise ConfigError(f"{path} holds no item that can be judged")
    return found


def _record(plan: AlignmentPlan) -> dict[str, Any]:
    """What ``alignment.json`` holds: how the plan was made, its examples and figures."""
    from ..alignment import figures_record

    return {
        "method": plan.method,
        "k": plan.k,
        "holdout": plan.holdout,
        "seed": plan.seed,
        "shared": plan.shared,
        "gold_sha256": plan.gold_sha256,
        "held_out": list(plan.split.held_out),
        "prompts": {name: spec.ref for name, spec in plan.prompts.items()},
        "derived_from": plan.base_prompts,
        "examples": {name: list(choice.ids) for name, choice in plan.examples.items()},
        "spend_usd": plan.spend_usd,
        "budget_usd": plan.budget_usd,
        "refusals": list(plan.refusals),
        "figures": figures_record(plan.figures),
    }
