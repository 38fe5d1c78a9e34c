"""``cross-judge align``: align a panel's critics with people's labels and write the new
prompt versions.

``cross-judge align PANEL.yaml --gold labels.jsonl --items items.jsonl --out prompts/``
judges the labelled items with the panel (or reads that run from ``--results``), chooses
each critic's examples from part of them (``--method instructions``: has the panel's
``--editor`` critic draft an instruction for each from its mistakes; ``both``), judges
the held-out part again with the aligned panel and prints the before/after table
(:func:`cross_judge.alignment.align`). When the jury's gain is clearly above 0 and its
effective votes did not fall, it writes each critic's next prompt version, a panel file
that uses them and ``alignment.json`` (how it was made and the figures,
:meth:`~cross_judge.alignment.AlignmentPlan.record`) to ``--out``; otherwise it writes
nothing and exits 3 (``--force`` writes anyway).

Both runs are kept in ``--out/.align/`` (``before.jsonl``, ``after.jsonl``) as they go, one
result a line, and the editor's drafts in ``instructions.json``: ``--resume`` after an
interrupted run keeps every finished result and draft and asks only for the rest, so
nothing finished is billed twice.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AlignmentRefused, ConfigError
from ._arguments import positive_int
from ._common import EXIT_OK, EXIT_REFUSED, counted, note, say, stderr_console, stdout_console

if TYPE_CHECKING:
    from ..alignment import AlignmentPlan
    from ..batch import BatchResult, Item, ResultsFile
    from ..critic import Critic
    from ..ensemble import Ensemble
    from ..verdict import EnsembleVerdict

__all__ = ["WORK_DIR", "add_parser", "run"]

WORK_DIR = ".align"
"""The folder under ``--out`` that keeps both runs' results while an alignment runs."""

DRAFTS_FILE = "instructions.json"
"""The editor's drafts, kept in :data:`WORK_DIR` for a resumed run."""


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
        "--method",
        choices=("examples", "instructions", "both"),
        default="examples",
        help="few-shot examples, an instruction drafted by --editor from each critic's "
        "mistakes, or both (default examples)",
    )
    command.add_argument(
        "--editor",
        metavar="CRITIC",
        help="with --method instructions or both: the panel's critic whose model drafts the "
        "instructions (name a strong one)",
    )
    command.add_argument(
        "--cases", type=positive_int, default=8, help="mistakes shown to the editor (8)"
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

    from ..batch import ResultsFile
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
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(spec.simulator()) if spec.simulated_critics else None
        panel = spec.build(simulator_url=server.url if server else None)
        if not isinstance(panel, Ensemble):
            raise ConfigError(
                f"{args.panel} is a cascade; align one tier at a time (a panel file of that "
                "tier's critics)"
            )
        items = _read_items(Path(args.items), panel)
        from ..alignment import check_alignment

        editor = _editor(panel, args)
        check_alignment(
            panel,
            gold,
            list(items),
            method=args.method,
            editor=editor,
            holdout=args.holdout,
            seed=args.seed,
        )
        work.mkdir(parents=True, exist_ok=True)  # only once the input checks passed
        # A resumed run's files: a line torn by the kill cut off, and the results whose
        # call failed removed, so that those items are judged again.
        files = tuple(
            stack.enter_context(ResultsFile.open(work / name, resume=True, retry_failed=True))
            for name in ("before.jsonl", "after.jsonl")
        )
        kept = tuple(list(ResultsFile.read(file.path)) for file in files)
        plan = anyio.run(_align, args, panel, editor, items, gold, kept, files, options)
    console = stdout_console()
    console.print(plan)
    if plan.refusals and not args.force:
        note(err, "nothing written; --force writes the versions anyway")
        return EXIT_REFUSED
    try:
        written = plan.write(out, force=args.force, panel_file=args.panel)
    except AlignmentRefused:  # pragma: no cover - refusals were handled above
        return EXIT_REFUSED
    for path in written:
        say(console, f"wrote {path}")
    return EXIT_OK


async def _align(
    args: argparse.Namespace,
    panel: Ensemble,
    editor: Critic | None,
    items: dict[str, Item],
    gold: dict[str, str],
    kept: tuple[list[EnsembleVerdict], ...],
    files: tuple[ResultsFile, ...],
    options: dict[str, Any],
) -> AlignmentPlan:
    """The alignment, its runs resumed from ``kept`` and appended to ``files`` (the
    first run's and the held-out run's)."""
    from ..alignment import align

    err = stderr_console()
    drafts_path = files[1].path.with_name(DRAFTS_FILE)
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
            method=args.method,
            editor=editor,
            cases=args.cases,
            k=args.k,
            holdout=args.holdout,
            seed=args.seed,
            shared=args.shared,
            panel_file=args.panel,
            done=kept[1],
            on_result=files[1].append,
            drafts=_read_drafts(drafts_path) if args.method != "examples" else None,
            on_drafts=functools.partial(_write_drafts, drafts_path),
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
    out: ResultsFile,
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
        async with panel.stream(todo, **options) as results:
            async for result in results:
                kept[result.query_id] = result
                out.append(result)
    ordered = [kept[item.id] for item in items if item.id in kept]
    return BatchResult.from_results(ordered)


def _read_drafts(path: Path) -> dict[str, str] | None:
    """The instructions an interrupted run's editor drafted (``None``: none kept)."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"{path} is not the drafts an alignment kept; remove it to draft again")
    return {str(k): v for k, v in data.items()}


def _write_drafts(path: Path, drafts: dict[str, str]) -> None:
    """Keep the editor's drafts, so a resumed run neither asks nor bills it again."""
    path.write_text(json.dumps(drafts, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _editor(panel: Ensemble, args: argparse.Namespace) -> Critic | None:
    """The critic ``--editor`` names (``None`` without it)."""
    if args.editor is None:
        return None
    if args.method == "examples":
        raise ConfigError("--editor drafts instructions: add --method instructions or both")
    for critic in panel.critics:
        if critic.name == args.editor:
            return critic
    names = ", ".join(c.name for c in panel.critics)
    raise ConfigError(f"--editor {args.editor!r} is not a critic of the panel ({names})")


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
