"""``cross-judge review``: judge every item of a JSONL file with a panel, appending each
result to the results file as it finishes (resumable), then print the summary of the whole
file.

The items file is read by :mod:`._items`, the refusals before billing are in
:mod:`._review_checks`, the streaming run and Ctrl-C in :mod:`._review_run`; this module reads
the options, holds the results file and reports.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._arguments import dollars, positive_int, seconds, shard_spec, vendor_names
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    counted,
    note,
    read_results_digest,
    say,
    shown_ids,
    stderr_console,
    stdout_console,
)
from ._items import ItemReader, check_items_format, count_lines, count_shard_items
from ._review_budget import read_shortfall, shortfall_note
from ._review_checks import (
    check_budget_given,
    check_prices,
    check_same_panel,
    check_same_shard,
    file_budget,
)
from ._review_run import RunState, judge_into, sigint_held

if TYPE_CHECKING:
    from rich.console import Console

    from ..batch import BatchOptions, ResultsFile
    from ..budget import Budget
    from ..cascade import Cascade
    from ..critic import Critic
    from ..ensemble import Ensemble
    from ..report import BatchDigest

__all__ = ["add_parser", "batch_mode_note", "ledger_path", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``review`` and its options to ``sub``."""
    review = sub.add_parser(
        "review",
        help="judge every item of a JSONL file with a panel; resumable",
        description=(
            "Judge each item of ITEMS.jsonl (one JSON object per line: id, query, context, "
            "meta; other keys are kept in meta) with the critics of PANEL.yaml, appending "
            "each result to OUT.jsonl as soon as it is ready. Bad lines are reported with "
            "their line number and skipped. Interrupted runs continue with --resume. One "
            "review at a time writes OUT: a second one exits, naming the first."
        ),
    )
    review.add_argument("items", metavar="ITEMS.jsonl", help="the items to judge")
    review.add_argument("--panel", required=True, metavar="PANEL.yaml", help="the panel file")
    review.add_argument("--out", required=True, metavar="OUT.jsonl", help="results file")
    review.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="items in flight at once (default: the panel's concurrency, else 32)",
    )
    review.add_argument(
        "--resume",
        action="store_true",
        help=(
            "continue a run: skip the items whose ids are already in OUT, and make no call "
            "whose answer arrived before the run stopped (kept in OUT.journal.jsonl, which "
            "a run that completes removes)"
        ),
    )
    review.add_argument(
        "--retry-failed",
        action="store_true",
        help=(
            "continue a run and judge again the items whose result in OUT has a failed call "
            "(their lines are removed from OUT first); implies --resume"
        ),
    )
    review.add_argument(
        "--allow-panel-change",
        action="store_true",
        help=(
            "with --resume: continue OUT although the panel (voting, critics or prompts) "
            "differs from the one its earlier runs used; refused otherwise"
        ),
    )
    review.add_argument(
        "--budget-usd",
        type=dollars,
        metavar="X",
        help=(
            "spend at most X dollars on OUT as a whole: a resumed run counts what OUT's "
            "results already cost. A call whose worst case does not fit waits for the calls "
            "in flight; one that cannot fit is not made (its verdict is SKIPPED, error_kind "
            "budget). A call whose vendor reports no usage is charged its worst case. Needs "
            "known model prices; X must be above 0. A run that ends with items over budget "
            "says what the rest needs and the command that judges them"
        ),
    )
    review.add_argument(
        "--prices",
        metavar="FILE",
        help=(
            "a YAML price file (the shape of cross_judge/prices.yaml) for models the shipped "
            "table lacks, e.g. a custom endpoint's; its prices win"
        ),
    )
    review.add_argument(
        "--cache",
        nargs="?",
        const=True,
        metavar="PATH",
        help=(
            "reuse stored answers and store new valid ones (default file: see "
            "'cross-judge cache stats'); a re-run judges cached items without calling anyone"
        ),
    )
    review.add_argument(
        "--all-tiers",
        action="store_true",
        help=(
            "for a cascade panel (tiers:): ask every tier on every item, not only the items "
            "the escalation rule sends on. Costs every tier; stores the results "
            "'cross-judge calibrate' needs"
        ),
    )
    review.add_argument(
        "--shard",
        type=shard_spec,
        metavar="i/N",
        help=(
            "judge only shard i of N (1 <= i <= N): the items whose id hashes to it "
            "(cross_judge.batch.shard_of), the same on every machine and in any input order, "
            "so N machines, one shard each, judge every item once; items of other shards "
            "are passed over. --resume needs the same shard"
        ),
    )
    review.add_argument(
        "--mode",
        choices=("live", "batch"),
        default="live",
        help=(
            "live (default): call each vendor at once. batch: send the calls of critics on "
            "vendors with a batch API (see --batch-vendors) through it, at about half the "
            "price, results within the vendor's window (24 h); the others run live. The "
            "submitted batches are recorded in OUT.batches.jsonl, so --resume after a kill "
            "picks them up instead of paying twice"
        ),
    )
    review.add_argument(
        "--batch-vendors",
        type=vendor_names,
        metavar="NAMES",
        help=(
            "with --mode batch: the comma-separated vendors whose batch API to use "
            "(default: openai,anthropic); e.g. custom for an OpenAI-compatible gateway that "
            "serves /v1/files and /v1/batches"
        ),
    )
    review.add_argument(
        "--deadline",
        type=seconds,
        metavar="SECONDS",
        help=(
            "with --mode batch: stop waiting for batches after SECONDS; what is not back "
            "is cancelled and asked live"
        ),
    )
    review.add_argument(
        "--poll",
        type=seconds,
        metavar="SECONDS",
        help="with --mode batch: seconds before the first poll of a batch (default 30; "
        "later polls back off up to 10 minutes)",
    )
    review.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (by default it is drawn when stderr is a terminal)",
    )
    review.add_argument(
        "--no-item-text",
        action="store_true",
        help=(
            "leave each item's query and context out of OUT (private data); by default "
            "each result stores them, up to 4,000 characters per text and 16,000 per item, "
            "so that stats --disputed and the report show what was judged"
        ),
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge review``; the exit code."""
    import anyio

    from ..batch import DEFAULT_CONCURRENCY, ResultsFile, ResultsLock
    from ..critic import resolve_cache
    from ..panel_file import PLACEHOLDER_URL, load_panel
    from ..pricing import load_prices
    from ..report import RunManifest

    items_path, out_path = Path(args.items), Path(args.out)
    check_budget_given(args.budget_usd)
    if not items_path.exists():
        raise ConfigError(f"{items_path}: no such items file")
    if not items_path.is_file():
        raise ConfigError(f"{items_path}: not a file; pass a JSONL file of items")
    check_items_format(items_path)
    spec = load_panel(args.panel)
    if args.all_tiers and not spec.is_cascade:
        raise ConfigError(
            f"--all-tiers asks every tier of a cascade on every item, and {args.panel} is one "
            "ensemble (critics:, no tiers:) whose critics judge every item anyway; remove "
            "--all-tiers, or use a panel file with tiers:"
        )
    if out_path.exists() and out_path.samefile(items_path):
        raise ConfigError(f"--out {out_path} is the items file; write results to another file")
    if not out_path.parent.exists():
        raise ConfigError(f"{out_path.parent} does not exist; create it or choose another path")
    concurrency = args.concurrency or spec.concurrency or DEFAULT_CONCURRENCY
    batch = _batch_options(args, out_path)
    if args.prices is not None:
        load_prices(args.prices)
    cache = resolve_cache(args.cache) if args.cache else None
    if cache is not None:
        cache.check()  # an unusable cache file stops the run before anything is billed
    resume = args.resume or args.retry_failed
    err = stderr_console()
    simulated = spec.simulated_critics
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        # First of all: a second review of this OUT stops here, before it reads, repairs
        # or bills anything.
        lock = stack.enter_context(
            ResultsLock.acquire(out_path, command=["cross-judge", *args.argv])
        )
        if lock.warning is not None:
            note(err, f"warning: {lock.warning}")
        # Every check comes before the simulated vendor starts (below): until then the
        # simulated critics point at an address that is never called.
        panel = spec.build(simulator_url=PLACEHOLDER_URL if simulated else None, cache=cache)
        if args.budget_usd is not None:
            check_prices(panel)
        options: dict[str, Any] = {
            "concurrency": concurrency,
            "budget_usd": args.budget_usd,
            "prices": args.prices,
            "cache": str(cache.path) if cache is not None else None,
            "resume": resume,
            "retry_failed": args.retry_failed,
            "allow_panel_change": args.allow_panel_change,
            "simulated_critics": list(simulated),
            "simulator": spec.simulator_record(),  # what it knew: gold, pairs, personas
            "mode": args.mode,
            "item_text": not args.no_item_text,
        }
        if batch is not None:
            options["batch_vendors"] = sorted(batch.vendors)
            options["batch_ledger"] = str(batch.ledger)
            options["deadline_s"] = batch.deadline_s

        def prepare_manifest(ensemble: Ensemble | Cascade) -> RunManifest:
            return RunManifest.prepare(
                out_path,
                ensemble=ensemble,
                argv=args.argv,
                items=items_path,
                panel=Path(args.panel),
                options=options,
                all_tiers=args.all_tiers,
                shard=args.shard,
            )

        manifest = prepare_manifest(panel)
        if resume and out_path.exists() and out_path.stat().st_size > 0:
            check_same_shard(args, out_path, manifest)
            check_same_panel(args, out_path, manifest, err)
        results = stack.enter_context(
            ResultsFile.open(
                out_path, resume=args.resume, retry_failed=args.retry_failed, journal=True
            )
        )
        # OUT exists now (created, or rewritten by --retry-failed): lock it by its identity
        # too, so a run given another name of it (a hard link) is refused before any call.
        lock.hold_results()
        if results.repaired:
            note(
                err,
                f"{out_path}: cut off a torn last line (a run was killed while writing it); "
                "that item is judged again",
            )
        if results.dropped_ids:
            note(
                err,
                f"{out_path}: removed {counted(len(results.dropped_ids), 'result')} with a "
                f"failed call, to judge again: {shown_ids(results.dropped_ids)}",
            )
        if results.done_ids:
            note(
                err,
                f"resuming: {out_path} holds {counted(len(results.done_ids), 'result')}; "
                "items with those ids are skipped",
            )
        _note_journal(results, out_path, err)
        budget = file_budget(args, out_path, results, err)
        if budget is not None:
            options["budget_spent_before_usd"] = round(results.spent_usd, 6)
        if simulated:  # every check has passed: start it, and point the critics at it
            server = stack.enter_context(spec.simulator())
            note(err, _simulated_note(simulated, server.url))
            panel = spec.build(simulator_url=server.url, cache=cache)
            manifest = prepare_manifest(panel)  # with the simulator's address
        reader = ItemReader(items_path, panel.critics, set(results.done_ids), err, args.shard)
        progress = not args.no_progress and sys.stderr.isatty()
        total: int | None = None
        if progress and args.shard is not None:
            total = count_shard_items(items_path, args.shard, reader.done)
        elif progress:
            total = max(0, count_lines(items_path) - len(results.done_ids))
        if batch is not None:
            note(err, batch_mode_note(panel.critics, batch))
        manifest.begin()
        state = RunState()
        status = "failed"  # unless the run gets further
        try:
            anyio.run(
                lambda: judge_into(
                    panel,
                    reader,
                    results,
                    run={
                        "concurrency": concurrency,
                        "budget_usd": budget,
                        "mode": "live" if batch is None else "batch",
                        "batch": batch,
                        "item_text": not args.no_item_text,
                    },
                    progress=progress,
                    total=total,
                    console=err,
                    state=state,
                    all_tiers=args.all_tiers,
                )
            )
            status = "interrupted" if state.interrupted else "done"
        except KeyboardInterrupt:
            state.interrupted, status = True, "interrupted"
        finally:
            # Cut short by Ctrl-C, the manifest would keep saying "running". A second
            # Ctrl-C of an interrupted run is dropped: it is stopping already.
            with sigint_held(then_raise=not state.interrupted):
                manifest.finish(status, state.totals(reader))
                if status == "done":  # nothing left to resume: the journal goes
                    results.complete()
    elapsed = time.perf_counter() - started
    if state.interrupted:
        note(
            err,
            f"interrupted; {out_path} is intact and holds every finished result. "
            f"Resume with:\n  {_resume_command(args)}",
        )
        return EXIT_INTERRUPTED
    return _review_report(
        args, out_path, reader, state, simulated, elapsed, err, budget, results.spent_usd
    )


def _note_journal(results: ResultsFile, out_path: Path, err: Console) -> None:
    """Say what the answers journal kept from an interrupted run, and what it passed over."""
    journal = results.journal
    if journal is None:
        return
    if journal.passed_over:
        one = journal.passed_over == 1
        note(
            err,
            f"{journal.path}: passed over {counted(journal.passed_over, 'line')} that "
            f"{'is' if one else 'are'} not a whole answer (a kill tore it); "
            f"{'that call is' if one else 'those calls are'} made again",
        )
    if journal.kept_answers:
        note(
            err,
            f"resuming: {journal.path} keeps {counted(journal.kept_answers, 'answer')} that "
            f"arrived for items not yet in {out_path}; those calls are not made again",
        )


def _resume_command(
    args: argparse.Namespace, *, budget: str | None = None, then: str = "--resume"
) -> str:
    """The command that continues this review: the same options, ``--budget-usd budget``
    when given (else the run's own), ending with ``then`` (``--resume``, or
    ``--retry-failed`` to judge the failed items again)."""
    words = ["cross-judge", "review", args.items, "--panel", args.panel, "--out", args.out]
    if args.concurrency is not None:
        words += ["--concurrency", str(args.concurrency)]
    if args.no_progress:
        words.append("--no-progress")
    if args.cache is True:
        words.append("--cache")
    elif args.cache:
        words += ["--cache", args.cache]
    if budget is not None:
        words += ["--budget-usd", budget]
    elif args.budget_usd is not None:
        words += ["--budget-usd", f"{args.budget_usd:g}"]
    if args.prices is not None:
        words += ["--prices", args.prices]
    if args.all_tiers:
        words.append("--all-tiers")
    if args.shard is not None:
        words += ["--shard", "{}/{}".format(*args.shard)]
    if args.mode != "live":
        words += ["--mode", args.mode]
    if args.batch_vendors is not None:
        words += ["--batch-vendors", ",".join(sorted(args.batch_vendors))]
    if args.deadline is not None:
        words += ["--deadline", f"{args.deadline:g}"]
    if args.poll is not None:
        words += ["--poll", f"{args.poll:g}"]
    if args.no_item_text:
        words.append("--no-item-text")
    return shlex.join([*words, then])


def _batch_options(args: argparse.Namespace, out_path: Path) -> BatchOptions | None:
    """Batch mode's options from the command line; ``None`` in live mode.

    Raises:
        ConfigError: a batch-only option without ``--mode batch``.
    """
    from ..batch import BATCH_VENDORS, BatchOptions

    given = [
        flag
        for flag, value in (
            ("--batch-vendors", args.batch_vendors),
            ("--deadline", args.deadline),
            ("--poll", args.poll),
        )
        if value is not None
    ]
    if args.mode != "batch":
        if given:
            raise ConfigError(f"{', '.join(given)} apply to --mode batch only; add --mode batch")
        return None
    poll = 30.0 if args.poll is None else max(args.poll, 0.001)
    return BatchOptions(
        vendors=args.batch_vendors or BATCH_VENDORS,
        ledger=ledger_path(out_path),
        poll_s=poll,
        max_poll_s=max(600.0, poll),
        deadline_s=args.deadline,
    )


def batch_mode_note(critics: Sequence[Critic], batch: BatchOptions) -> str:
    """What ``--mode batch`` will do with each critic, said before the run: which go
    through their vendor's batch API (at its batch price; their batches recorded in the
    ledger) and which run live, and why. With no critic batched, it says that every call
    runs live at live prices, that no ledger is written, and how to batch a custom
    endpoint that serves a batch API (``--batch-vendors``)."""
    batched: dict[str, list[str]] = {}
    live: list[str] = []
    unlisted: set[str] = set()  # live vendors that --batch-vendors could name
    for critic in critics:
        config = critic.endpoint()
        why = batch.why_live(config)
        if why is None:
            batched.setdefault(config.name, []).append(critic.name)
            continue
        live.append(f"{critic.name} ({why})")
        if config.name.lower() != "deepseek":
            unlisted.add(config.name.lower())
    hint = ""
    if unlisted:
        wanted = ",".join(sorted({*batch.vendors, *unlisted}))
        hint = (
            ". An endpoint that serves a batch API (OpenAI's: /v1/files and /v1/batches; "
            "Anthropic's: /v1/messages/batches) is batched by naming its vendor: "
            f"--batch-vendors {wanted}; a priced model then needs a batch rate "
            "('batch: 0.5' in a --prices file)"
        )
    if not batched:
        return (
            "batch mode: no critic is on a vendor whose batch API is used, so every critic "
            "runs live, at live prices, and no batch ledger is written: " + "; ".join(live) + hint
        )
    through = ", ".join(f"{', '.join(names)} on {vendor}" for vendor, names in batched.items())
    line = (
        f"batch mode: {through} through the vendor's batch API (at its batch price); "
        f"submitted batches are recorded in {batch.ledger}"
    )
    if live:
        line += ". Live, at live prices: " + "; ".join(live) + hint
    return line


def ledger_path(results: Path) -> Path:
    """``OUT.jsonl`` -> ``OUT.jsonl.batches.jsonl``: batch mode's ledger beside the results."""
    return results.with_name(results.name + ".batches.jsonl")


def _note_dead_critics(batch: BatchDigest, panel: str, err: Console) -> None:
    """Say why, for each critic whose every call failed: its error kinds and the vendor's
    own message (the summary's table has every critic's; this is the one to act on)."""
    from ..report import failure_message

    for stats in batch.critic_stats().values():
        asked = stats.items - stats.skipped
        failed = stats.errors + stats.parse_failures
        if not asked or failed < asked:
            continue
        why = "; ".join(
            f"{kind} ({count}): {failure_message(kind, stats.error_messages.get(kind, ''))}"
            for kind, count in stats.error_kinds.items()
        )
        check = (
            "model and prompt" if set(stats.error_kinds) == {"parse"} else "model, base_url and key"
        )
        note(
            err,
            f"critic {stats.critic!r}: every call failed ({failed} of {asked}): {why}. "
            f"Check its {check} in {panel}",
        )


def _simulated_note(names: Sequence[str], url: str) -> str:
    return (
        f"critics {', '.join(names)} are SIMULATED by cross_judge.testing.VendorServer at "
        f"{url}: their answers come from a seeded random generator, not a language model"
    )


def _review_report(
    args: argparse.Namespace,
    out_path: Path,
    reader: ItemReader,
    state: RunState,
    simulated: Sequence[str],
    elapsed: float,
    err: Console,
    budget: Budget | None,
    spent_before: float,
) -> int:
    from ..report import render_summary

    # One pass over the whole results file (earlier runs' results too), holding counts only.
    batch = read_results_digest(str(out_path), reasoning=False) if out_path.stat().st_size else None
    out = stdout_console()
    if batch is not None:
        out.print(render_summary(batch))
    line = f"this run: judged {counted(state.written, 'item')} in {elapsed:.2f} s"
    line += f"; {counted(state.calls, 'call')}"
    if state.kept_answers:
        line += f", {counted(state.kept_answers, 'answer')} kept from an interrupted run"
    if state.cache_hits:
        line += f", {counted(state.cache_hits, 'answer')} from the cache"
    if state.cost_known:
        line += f", ${state.cost_usd:.4f}"
    if state.cost_estimates:
        line += (
            f" ({counted(state.cost_estimates, 'call')} priced at worst case: the vendor "
            "reported no usable usage)"
        )
    if reader.already_done:
        line += f"; {counted(reader.already_done, 'item')} already in {out_path}"
    if args.shard is not None:
        line += "; shard {}/{}: ".format(*args.shard)
        line += f"{counted(reader.other_shards, 'item')} of other shards passed over"
    if reader.bad_lines:
        line += f"; {counted(reader.bad_lines, 'line')} skipped for bad input"
    say(out, line)
    if budget is not None:
        say(
            out,
            f"budget (all of {out_path}): ${spent_before:.4f} before this run + "
            f"${budget.spent_usd - spent_before:.4f} in this run = ${budget.spent_usd:.4f} of "
            f"${budget.limit_usd:g}; {counted(state.budget_skips, 'call')} not made "
            "(over budget)"
            + (
                f"; {counted(state.cost_estimates, 'call')} charged at worst case (the "
                "vendor reported no usable usage)"
                if state.cost_estimates
                else ""
            ),
        )
    say(out, f"results: {out_path}")
    if simulated:
        say(
            out,
            f"note: critics {', '.join(simulated)} were simulated (seeded random answers "
            "from cross_judge.testing), not language models",
        )
    failed = batch.n_failed if batch is not None else 0
    if batch is not None:
        _note_dead_critics(batch, args.panel, err)
    if reader.bad_lines:
        note(err, f"{counted(reader.bad_lines, 'line')} of {args.items} skipped for bad input")
    shortfall = read_shortfall(out_path) if failed and budget is not None else None
    if shortfall is not None and shortfall.over_budget and budget is not None:
        note(
            err,
            shortfall_note(
                shortfall,
                budget,
                out_path,
                lambda limit: _resume_command(
                    args, budget="X" if limit is None else f"{limit:g}", then="--retry-failed"
                ),
            ),
        )
    elif failed:
        note(
            err,
            f"{counted(failed, 'item')} with a failed call: "
            f"{shown_ids(batch.failed_ids if batch else [], failed)}. To judge "
            "them again, run the same command with --retry-failed",
        )
    return EXIT_FAILED if failed or reader.bad_lines else EXIT_OK
