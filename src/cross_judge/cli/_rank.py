"""``cross-judge rank``: rank many candidates with a pairwise panel and print the leaderboard.

``CANDIDATES.jsonl`` holds one candidate a line, in one of two forms (not mixed):

* ``{"id": "m1", "text": "..."}``: every candidate answers the same question, given by
  ``--query TEXT`` or by one line ``{"query": "..."}`` in the file (not both);
* ``{"id": "m1", "answers": {"question 1": "...", "question 2": "..."}}``: the arena case,
  each candidate's answer per question; the questions are every key, in the order first
  seen, and each pair is judged on every question both answered.

Either form may add ``"family": "openai"``: a critic of that family (``family:`` in the
panel file) sits out the pairs involving that candidate. The ranking
(:func:`cross_judge.ranking.rank`, with the panel's ``order``; an ensemble of
``order: fixed`` ranks with ``"both"``) is written to ``--out`` as JSON (the
:class:`~cross_judge.ranking.Ranking`, every judged pair included), so ``--resume`` asks
again only the pairs not in it, and ``Ranking.model_validate_json`` reads it back. The
leaderboard (the best :data:`LEADERBOARD_ROWS`), each critic's Spearman correlation and the
calls (of this run and of every run) go to stdout; the plan (pair items and calls, before
the first call) and progress to stderr; with ``--html`` also the leaderboard page
(:mod:`cross_judge.report._leaderboard`). ``--pairs all`` above ``--max-calls`` (default
:data:`~cross_judge.ranking.DEFAULT_MAX_CALLS`) is refused before any call, naming the
count. Critics the panel file simulates are recorded in the ranking
(``simulated_critics``, kept across ``--resume``), so every view says so.

What it does not do: keep pairs judged by a run that was interrupted before it wrote
``--out`` (use ``--cache``: a rerun then answers those from the cache, calling no one).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._arguments import positive_int
from ._common import EXIT_OK, counted, note, say, stderr_console, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

    from ..ranking import Ranking, RankPlan

__all__ = ["LEADERBOARD_ROWS", "Candidates", "add_parser", "read_candidates", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``rank`` and its options to ``sub``."""
    command = sub.add_parser(
        "rank",
        help="rank many candidates from pairwise verdicts (Bradley-Terry ratings, intervals)",
        description=(
            "Judge pairs of the candidates in CANDIDATES.jsonl with a pairwise panel and fit "
            "Bradley-Terry ratings (ties kept, Davidson) with intervals. Lines: "
            '{"id", "text"} (one question: --query or a {"query"} line) or {"id", '
            '"answers": {question: answer}} (many questions); optional "family". Writes '
            "the ranking to --out as JSON (resumable) and prints the leaderboard."
        ),
    )
    command.add_argument("candidates", metavar="CANDIDATES.jsonl", help="the candidates")
    command.add_argument(
        "--panel", required=True, metavar="PANEL.yaml", help="a panel of pairwise critics"
    )
    command.add_argument(
        "--out", required=True, metavar="RANKING.json", help="where to write the ranking"
    )
    command.add_argument("--query", metavar="TEXT", help="the question every candidate answers")
    command.add_argument(
        "--pairs",
        choices=("all", "adaptive", "random"),
        default="all",
        help="judge every pair, adaptively where the order is unsure, or --budget uniformly "
        "random pair items (default all)",
    )
    command.add_argument(
        "--budget",
        type=positive_int,
        metavar="N",
        help="with --pairs adaptive or random: the most pair items to judge (each costs "
        "critics x orders calls)",
    )
    command.add_argument(
        "--max-calls",
        type=positive_int,
        metavar="N",
        help="with --pairs all: refuse to start when it means more than N calls (default "
        "100,000: cross_judge.ranking.DEFAULT_MAX_CALLS); the count is printed either way",
    )
    command.add_argument("--seed", type=int, default=0, metavar="S", help="default 0")
    command.add_argument(
        "--level", type=float, default=0.95, metavar="L", help="intervals' level (default 0.95)"
    )
    command.add_argument(
        "--ci",
        choices=("fisher", "bootstrap"),
        default="fisher",
        help="intervals from the fit's Fisher information or a bootstrap (default fisher)",
    )
    command.add_argument(
        "--fit",
        choices=("auto", "votes", "consensus"),
        default="auto",
        help="fit every critic's vote in each order shown, with its lean to the first shown "
        "as a parameter, or one consensus per pair; auto: votes up to 300 candidates "
        "(default auto)",
    )
    command.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="pairs in flight at once (default: the panel's concurrency, else 32)",
    )
    command.add_argument(
        "--resume",
        action="store_true",
        help="continue the ranking in --out: pairs already judged there are not asked again",
    )
    command.add_argument(
        "--cache",
        nargs="?",
        const=True,
        metavar="PATH",
        help="reuse stored answers and store new valid ones (a rerun calls no one for them)",
    )
    command.add_argument("--html", metavar="RANKING.html", help="also write the leaderboard page")
    command.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (by default it is drawn when stderr is a terminal)",
    )


class Candidates:
    """What a candidates file holds: ``candidates`` (id -> text, or id -> {query:
    answer}), the ``query`` or ``queries``, and each candidate's ``families``."""

    def __init__(
        self,
        candidates: dict[str, Any],
        query: str | None,
        queries: list[str] | None,
        families: dict[str, str],
    ) -> None:
        self.candidates = candidates
        self.query = query
        self.queries = queries
        self.families = families


def read_candidates(path: str | os.PathLike[str], query: str | None = None) -> Candidates:
    """Read a candidates file (see the module docstring); ``query``: ``--query``.

    Raises:
        ConfigError: naming the line and the fix: a line that is not a JSON object, no or
            a repeated ``id``, neither or both of ``text`` and ``answers``, the two forms
            mixed, a query given twice, no query for ``text`` lines, a query with
            ``answers`` lines, a non-text ``family``, fewer than 2 candidates.
    """
    source = Path(path)
    if not source.is_file():
        raise ConfigError(
            f"{source}: no such candidates file; pass a JSONL file of "
            '{"id": ..., "text": ...} or {"id": ..., "answers": {question: answer}} lines'
        )
    candidates: dict[str, Any] = {}
    families: dict[str, str] = {}
    queries: dict[str, None] = {}
    form: str | None = None
    file_query: str | None = None
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{source}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: not JSON ({exc.msg}); one object a line") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: expected a JSON object, got {type(row).__name__}")
            if set(row) == {"query"}:
                if not isinstance(row["query"], str) or file_query is not None:
                    raise ConfigError(f'{where}: give one {{"query": TEXT}} line, with text')
                file_query = row["query"]
                continue
            cid = row.get("id")
            if not isinstance(cid, str | int) or isinstance(cid, bool) or str(cid) == "":
                raise ConfigError(f'{where}: every candidate needs an "id" (text)')
            cid = str(cid)
            if cid in candidates:
                raise ConfigError(f"{where}: candidate id {cid!r} is given twice")
            has_text, has_answers = "text" in row, "answers" in row
            if has_text == has_answers:
                raise ConfigError(
                    f'{where}: give a candidate "text" (one question) or "answers" '
                    "({question: answer}), exactly one of them"
                )
            kind = "text" if has_text else "answers"
            if form is not None and kind != form:
                raise ConfigError(
                    f'{where}: "{kind}" here but "{form}" above; a file holds one form'
                )
            form = kind
            if has_text:
                if not isinstance(row["text"], str):
                    raise ConfigError(f'{where}: "text" must be text')
                candidates[cid] = row["text"]
            else:
                answers = row["answers"]
                if not isinstance(answers, dict) or not all(
                    isinstance(v, str) for v in answers.values()
                ):
                    raise ConfigError(f'{where}: "answers" must map each question to its text')
                candidates[cid] = answers
                queries.update(dict.fromkeys(answers))
            family = row.get("family")
            if family is not None:
                if not isinstance(family, str) or not family.strip():
                    raise ConfigError(f'{where}: "family" must be text, e.g. "openai"')
                families[cid] = family
    if len(candidates) < 2:
        raise ConfigError(
            f"{source}: a ranking needs at least 2 candidates, found {len(candidates)}"
        )
    if form == "answers":
        if query is not None or file_query is not None:
            raise ConfigError(
                f"{source}: candidates give answers per question, so there is no single "
                'query; remove --query (and any {"query"} line)'
            )
        return Candidates(candidates, None, list(queries), families)
    if query is not None and file_query is not None and query != file_query:
        raise ConfigError(
            f'{source} names its question ({{"query"}} line) and --query gives another; keep one'
        )
    chosen = query if query is not None else file_query
    if chosen is None:
        raise ConfigError(
            f"{source}: candidates give one text each, so name the question they answer: "
            '--query TEXT, or a line {"query": TEXT} in the file'
        )
    return Candidates(candidates, chosen, None, families)


def _read_previous(path: Path) -> Ranking:
    from pydantic import ValidationError

    from ..ranking import Ranking

    try:
        return Ranking.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise ConfigError(
            f"--resume: {path} is not a ranking written by cross-judge rank "
            f"({exc.error_count()} problems); pass the --out of an earlier rank, or remove "
            "--resume and choose another --out"
        ) from None


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it, so an interrupted
    write never leaves a torn ranking."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


LEADERBOARD_ROWS = 50
"""Candidates the printed leaderboard lists at most (the best); every one is in the
ranking file and on the page. A terminal table of 10,000 rows takes rich minutes."""


def print_leaderboard(ranking: Ranking, out: Path | None = None) -> None:
    """The leaderboard (rank, id, rating, interval, wins/losses/ties) of the best
    :data:`LEADERBOARD_ROWS` candidates, each critic's Spearman correlation with the panel
    and a totals line, on stdout. ``out``: the ranking file, named when rows are left
    out."""
    from rich.table import Table
    from rich.text import Text

    from ..report import printable, simulated_note

    console = stdout_console()
    table = Table(
        title=f"ranking ({ranking.level:.0%} intervals, {ranking.ci_method})",
        title_justify="left",
        box=None,
    )
    for name, justify in (
        ("rank", "right"),
        ("id", "left"),
        ("rating", "right"),
        ("interval", "right"),
        ("won", "right"),
        ("lost", "right"),
        ("tied", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's Literal
    records = ranking.to_records()
    for row in records[:LEADERBOARD_ROWS]:
        table.add_row(
            str(row["rank"]),
            Text(printable(row["id"])),
            f"{row['rating']:.0f}",
            f"{row['low']:.0f} to {row['high']:.0f}",
            str(row["wins"]),
            str(row["losses"]),
            str(row["ties"]),
        )
    console.print(table)
    if len(records) > LEADERBOARD_ROWS:
        where = f" (every one is in {out})" if out is not None else ""
        say(console, f"... and {len(records) - LEADERBOARD_ROWS:,} more candidates{where}")
    if ranking.per_critic_spearman:
        say(console, "")
        say(console, "each critic alone, Spearman with the panel's ratings:")
        for critic, rho in ranking.per_critic_spearman.items():
            shown = "n/a" if rho is None else f"{rho:.3f}"
            lean = ranking.first_shown.get(critic)
            leans = "" if lean is None else f"; lean to the first shown {lean:+.2f} log-odds"
            say(
                console,
                f"  {printable(critic)}: {shown} over {len(ranking.per_critic[critic])}{leans}",
            )
    in_all = (
        "" if ranking.calls_total == ranking.calls else f", {ranking.calls_total} in all its runs"
    )
    say(
        console,
        f"\n{counted(ranking.comparisons, 'decided pair')} ({ranking.ties} ties, "
        f"{ranking.undecided} undecided), {counted(ranking.calls, 'call')} made by this run"
        f"{in_all}",
    )
    if ranking.fit == "votes":
        say(console, f"fitted vote by vote: {counted(ranking.votes, 'vote')}")
    else:
        say(console, "fitted on one consensus per pair")
    if ranking.simulated_critics:
        say(console, f"note: {simulated_note(ranking.simulated_critics)}")
    if ranking.prior > 0:
        say(
            console,
            f"note: fitted with prior weight {ranking.prior:g}: the maximum-likelihood fit "
            "does not exist (a candidate only won or only lost, or the pairs are not connected)",
        )


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge rank``; the exit code."""
    import anyio

    from ..critic import resolve_cache
    from ..panel_file import load_panel
    from ..ranking import DEFAULT_MAX_CALLS

    if not (0.0 < args.level < 1.0):
        raise ConfigError(f"--level must be in (0, 1), e.g. 0.95; got {args.level:g}")
    if args.budget is not None and args.pairs == "all":
        raise ConfigError("--budget needs --pairs adaptive or random (pairs all judges every pair)")
    if args.budget is None and args.pairs == "random":
        raise ConfigError("--pairs random needs --budget N: the pair items to draw")
    if args.max_calls is not None and args.pairs != "all":
        raise ConfigError(
            "--max-calls limits --pairs all; with --pairs adaptive, --budget bounds the calls"
        )
    pool = read_candidates(args.candidates, args.query)
    out = Path(args.out)
    if not out.parent.exists():
        raise ConfigError(f"{out.parent} does not exist; create it or choose another --out")
    html = Path(args.html) if args.html else None
    if html is not None and not html.parent.exists():
        raise ConfigError(f"{html.parent} does not exist; create it or choose another --html")
    err = stderr_console()
    previous = None
    if args.resume:
        if out.is_file():
            previous = _read_previous(out)
            note(err, f"resuming {out}: {counted(len(previous.results), 'judged pair')} kept")
        else:
            note(err, f"--resume: {out} does not exist yet, so the ranking starts afresh")
    elif out.exists():
        raise ConfigError(
            f"--out {out} exists; add --resume to continue that ranking, or choose another path"
        )
    spec = load_panel(args.panel)
    cache = resolve_cache(args.cache) if args.cache else None
    if cache is not None:
        cache.check()
    options: dict[str, Any] = {
        "query": pool.query,
        "queries": pool.queries,
        "pairs": args.pairs,
        "budget": args.budget,
        "seed": args.seed,
        "level": args.level,
        "ci": args.ci,
        "fit": args.fit,
        "families": pool.families or None,
        "resume": previous,
        "max_calls": None,  # refused by _announce, in the command line's words
        "on_plan": functools.partial(_announce, err, args.max_calls or DEFAULT_MAX_CALLS),
        "concurrency": args.concurrency or spec.concurrency or 32,
        "progress": not args.no_progress and sys.stderr.isatty(),
    }
    simulated = spec.simulated_critics
    if simulated:
        note(err, f"critics {', '.join(simulated)} are simulated: their answers are seeded draws")
    questions = 1 if pool.queries is None else len(pool.queries)
    note(
        err,
        f"ranking {counted(len(pool.candidates), 'candidate')} on "
        f"{counted(questions, 'question')} with --pairs {args.pairs}",
    )
    with spec.simulator() if simulated else contextlib.nullcontext() as server:
        panel = spec.build(simulator_url=server.url if server else None, cache=cache)
        ranking = anyio.run(_rank, panel, pool.candidates, options)
    if simulated:  # kept from the runs it resumed, and this one's
        recorded = list(dict.fromkeys([*ranking.simulated_critics, *simulated]))
        ranking = ranking.model_copy(update={"simulated_critics": recorded})
    _write_atomically(out, ranking.model_dump_json() + "\n")
    print_leaderboard(ranking, out)
    say(stdout_console(), f"ranking: {out}")
    if html is not None:
        ranking.to_html(html)
        say(stdout_console(), f"leaderboard page: {html} (opens offline)")
    return EXIT_OK


def _announce(err: Console, max_calls: int, plan: RankPlan) -> None:
    """Say what the ranking is about to ask (pair items and calls) before the first call;
    refuse ``--pairs all`` above ``--max-calls``."""
    per = f"{plan.calls_per_item} a pair item: {plan.per_item}"
    if plan.pairs == "adaptive":
        note(
            err,
            f"--pairs adaptive: at most {plan.items:,} pair items, up to {plan.calls:,} calls "
            f"({per}); it stops sooner when the order settles",
        )
        return
    if plan.pairs == "random":
        note(
            err,
            f"--pairs random: {plan.items:,} uniformly random pair items, up to "
            f"{plan.calls:,} calls ({per})",
        )
        return
    kept = f", {plan.resumed:,} of them judged already" if plan.resumed else ""
    if plan.calls > max_calls:
        raise ConfigError(
            f"--pairs all over {plan.candidates:,} candidates is {plan.items:,} pair "
            f"items{kept}: up to {plan.calls:,} calls ({per}), more than --max-calls "
            f"{max_calls:,}. Rank adaptively within a budget (--pairs adaptive --budget N), "
            f"or pass --max-calls {plan.calls} to make them"
        )
    note(err, f"--pairs all: {plan.items:,} pair items{kept}, up to {plan.calls:,} calls ({per})")


async def _rank(panel: Any, candidates: Mapping[str, Any], options: dict[str, Any]) -> Ranking:
    try:
        result: Ranking = await panel.rank(candidates, **options)
    finally:
        import anyio

        with anyio.CancelScope(shield=True):
            await panel.aclose()
    return result
