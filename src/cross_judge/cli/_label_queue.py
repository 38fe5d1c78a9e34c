"""``cross-judge label-queue``: choose the items people should label from a finished run,
and write the offline page to label them on.

Draws the queue with :func:`cross_judge.stats.label_queue.label_queue`, writes the page
(:func:`cross_judge.report._label_page.render_label_page`) and, beside it, the queue itself
(``QUEUE.jsonl``: each item's inclusion probability, which an estimate needs to undo the
selection). Says what it chose and how to use the exported labels. No model is called.

The results file is read twice, line by line: once into a
:class:`~cross_judge.stats.label_queue.Candidate` per item (the few fields a draw reads,
about 200 bytes) and the labels the page offers, once more for the queued items' whole
results (their text, answers and reasoning, which the page shows). Memory grows with the
queue, not with the file (30,000 results of three critics: ``bench/bench_label_queue.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import EXIT_OK, has_torn_tail, say, shown_ids, stdout_console

if TYPE_CHECKING:
    from ..stats.label_queue import Candidate
    from ..verdict import EnsembleVerdict

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``label-queue`` and its options to ``sub``."""
    from ..stats.label_queue import QUEUE_STRATEGIES

    command = sub.add_parser(
        "label-queue",
        help="choose items for people to label; write an offline labelling page",
        description=(
            "Draw N items of OUT.jsonl for people to label (by default those the jury was "
            "least sure of, every item keeping a chance), write a self-contained HTML page "
            "to label them on (offline; keys 1-9 for the labels, the jury's answers hidden "
            "unless asked for with h, progress kept in the browser, Export downloads "
            "labels.jsonl for --gold, each label saying whether the jury was shown) and, "
            "beside it, the queue as JSONL with each item's inclusion probability. Calls no "
            "model."
        ),
    )
    command.add_argument("results", metavar="OUT.jsonl", help="results of cross-judge review")
    command.add_argument("-n", type=int, required=True, metavar="N", help="how many items to queue")
    command.add_argument(
        "--strategy",
        default="uncertain",
        metavar="NAME",
        help=f"how to choose: {', '.join(QUEUE_STRATEGIES)} (default uncertain)",
    )
    command.add_argument(
        "--seed", type=int, default=None, metavar="S", help="for a repeatable draw"
    )
    command.add_argument(
        "--floor",
        type=float,
        default=0.3,
        metavar="F",
        help="uncertain/disputed: the weight of an item the jury was sure of, next to 1 "
        "(at least 0.1; at most 10 for disputed)",
    )
    command.add_argument(
        "--exclude",
        metavar="GOLD.jsonl",
        help='items already labelled ({"id", "label"} lines): never queued again',
    )
    command.add_argument(
        "--show-jury",
        action="store_true",
        help=(
            "show the jury's answers on every item from the start (hidden by default: "
            "people who see them lean towards them); each exported label records it, and "
            "estimates refuse such labels unless told to count them"
        ),
    )
    command.add_argument(
        "-o",
        "--out",
        metavar="QUEUE.html",
        required=True,
        help="where to write the page (replaced); the queue goes beside it as QUEUE.jsonl",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge label-queue``; the exit code."""
    from ..report import render_label_page
    from ..results import recorded_simulated_critics
    from ..stats import load_gold
    from ..stats.label_queue import QUEUE_STRATEGIES, label_queue

    results = Path(args.results)
    if not results.is_file():
        raise ConfigError(
            f"{results}: no such results file; pass the OUT.jsonl of cross-judge review"
        )
    if args.strategy not in QUEUE_STRATEGIES:
        raise ConfigError(
            f"--strategy {args.strategy!r} is not one of {', '.join(QUEUE_STRATEGIES)}"
        )
    if args.exclude is not None and not Path(args.exclude).is_file():
        raise ConfigError(
            f'--exclude {args.exclude}: no such file; pass a JSONL file of {{"id", "label"}}'
        )
    page = Path(args.out)
    if page.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"--out {page}: name the page QUEUE.html")
    if page.resolve() == results.resolve():
        raise ConfigError(f"--out {page} is the results file; write the page to another file")
    if page.with_suffix(".jsonl").resolve() == results.resolve():
        raise ConfigError(
            f"--out {page} would write the queue over {results} (QUEUE.jsonl goes beside the "
            "page); name the page otherwise"
        )
    if not page.parent.exists():
        raise ConfigError(f"{page.parent} does not exist; create it or choose another path")
    candidates, offered = _candidates(str(results))
    exclude = list(load_gold(args.exclude)) if args.exclude is not None else []
    pool = len(candidates) - len(set(exclude) & {c.query_id for c in candidates})
    if not 0 < args.n <= pool:
        left = f" ({len(candidates) - pool} excluded)" if exclude else ""
        raise ConfigError(
            f"-n {args.n}: choose from 1 to {pool}, the items of {results} left to label{left}"
        )
    queue = label_queue(
        candidates,
        args.n,
        strategy=args.strategy,
        seed=args.seed,
        floor=args.floor,
        exclude=exclude,
    )
    del candidates
    render_label_page(
        queue,
        _queued(str(results), set(queue.items)),
        page,
        show_jury=args.show_jury,
        labels=offered,
        simulated=recorded_simulated_critics(results),
    )
    queue_file = page.with_suffix(".jsonl")
    queue.to_jsonl(queue_file)
    console = stdout_console()
    seed = "" if args.seed is None else f", seed {args.seed}"
    say(
        console,
        f"label queue: {len(queue)} of {queue.population} items, chosen by {queue.strategy}"
        f"{seed}: {shown_ids(queue.items)}",
    )
    say(console, f"page: {page} (opens offline; keys 1-9 label, ? lists every key)")
    if args.show_jury:
        say(
            console,
            "the jury's answers show on every item (--show-jury): each label records "
            '"jury_shown": true, and estimates refuse such labels unless allow_jury_shown=True',
        )
    else:
        say(console, "the jury's answers stay hidden unless the labeller presses h on an item")
    say(console, f"queue: {queue_file} (each item's inclusion probability, for the estimates)")
    say(
        console,
        "label in the page, click Export labels, then: "
        f"cross-judge stats {results} --gold labels.jsonl",
    )
    return EXIT_OK


def _candidates(path: str) -> tuple[list[Candidate], list[str]]:
    """Every result of ``path`` as the :class:`Candidate` a draw reads, and the labels the
    page offers (:func:`~cross_judge.report._label_page.offered_labels` of every result),
    one result parsed at a time.

    Raises:
        ConfigError: a torn last line, a line that is not a result, no result at all.
    """
    from ..report import offered_labels
    from ..results import read_results
    from ..stats.label_queue import Candidate

    if has_torn_tail(path):
        raise ConfigError(
            f"{path}: the last line is torn (a run was stopped while writing it); "
            "run the same review again with --resume, which repairs it"
        )
    candidates: list[Candidate] = []
    labels: set[str] = set()
    shared: dict[str, str] = {}  # one copy of each consensus label, not one per item
    for result in read_results(path):
        labels.update(offered_labels([result]))
        candidate = Candidate.of(result)
        consensus = shared.setdefault(candidate.consensus, candidate.consensus)
        candidates.append(candidate._replace(consensus=consensus))
    if not candidates:
        raise ConfigError(f"{path} holds no results")
    return candidates, sorted(labels)


def _queued(path: str, ids: set[str]) -> list[EnsembleVerdict]:
    """The whole results of ``path`` whose id is in ``ids``, in file order (the first of
    a repeated id: the draw refused repeated ids)."""
    from ..results import read_results

    kept: dict[str, EnsembleVerdict] = {}
    for result in read_results(path):
        if result.query_id in ids:
            kept.setdefault(result.query_id, result)
    return list(kept.values())
