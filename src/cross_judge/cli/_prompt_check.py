"""``cross-judge prompts check PROMPT --items FILE --panel PANEL.yaml``: a prompt's
self-check on items with known answers.

Every item of FILE is read (as ``review`` reads it) and rendered with PROMPT, so a field the
prompt uses and an item lacks (``{reference}`` on an item without one) is reported for each
such item before anything is judged. Then the panel's critics, each given PROMPT instead of
its own prompt, judge each item twice in place of its answer (``query``): once its
``counter_reference`` (a known wrong answer, which the panel must fail) and once its
``reference`` (which it must pass). The report says, per item and in all, whether the
panel did: a prompt that lets a known wrong answer through is caught before it judges a
real run.

Exit codes: 0 every known wrong answer failed and every reference passed; 1 some did not;
2 bad input (the prompt, the panel, an item, or no item with a ``counter_reference``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ItemError

if TYPE_CHECKING:
    from .._item import Item
    from ..critic import Critic, PromptSpec
    from ..ensemble import Ensemble
    from ..verdict import EnsembleVerdict

__all__ = ["add_check_parser", "run_check"]


def add_check_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``prompts check`` to the ``prompts`` actions."""
    check = actions.add_parser(
        "check",
        help="check that a panel with this prompt fails known wrong answers",
        description=(
            "Render PROMPT for every item of FILE (an item lacking a field the prompt uses "
            "is reported), then judge each item's counter_reference (a known wrong answer: "
            "the panel must FAIL it) and its reference (the panel must PASS it) in place of "
            "its answer, with the panel's critics given PROMPT. Exit 0 when the panel did "
            "both for every item, 1 when not, 2 on bad input."
        ),
    )
    check.add_argument("prompt", metavar="PROMPT", help="a prompt file or a packaged id@version")
    check.add_argument(
        "--items", required=True, metavar="FILE", help="a JSONL file of items with references"
    )
    check.add_argument(
        "--panel", required=True, metavar="PANEL.yaml", help="the panel whose critics judge"
    )
    check.add_argument(
        "--format", choices=("text", "json"), default="text", help="the report's form (text)"
    )


@dataclasses.dataclass(frozen=True)
class CheckRow:
    """One item's self-check: the consensus on its counter-reference and reference."""

    item_id: str
    wrong: str | None
    right: str | None
    wrong_agreement: float | None = None
    right_agreement: float | None = None

    @property
    def ok(self) -> bool:
        """The known wrong answer failed and the reference (when given) passed."""
        return self.wrong in (None, "FAIL") and self.right in (None, "PASS")


def run_check(args: argparse.Namespace) -> int:
    """Run ``cross-judge prompts check``; the exit code."""
    from ..critic import load_prompt
    from ..ensemble import Ensemble
    from ..panel_file import PLACEHOLDER_URL, load_panel
    from ._common import EXIT_FAILED, EXIT_OK

    spec = load_prompt(args.prompt)
    items_path = Path(args.items)
    items = _read_items(items_path)
    panel = load_panel(args.panel)
    if panel.is_cascade:
        raise ConfigError(
            f"{args.panel} is a cascade (tiers:); check a prompt with one ensemble's panel "
            "(critics:)"
        )
    simulated = panel.simulated_critics
    # Every check before the simulated vendor starts: until then the simulated critics
    # point at an address that is never called.
    built = panel.build(simulator_url=PLACEHOLDER_URL if simulated else None)
    assert isinstance(built, Ensemble)
    problems = _render_problems(_with_prompt(built, spec), items)
    if problems:
        raise ItemError(
            f"{items_path}: {len(problems)} item(s) cannot be judged with {spec.ref}:\n"
            + "\n".join(f"  {p}" for p in problems)
        )
    checked = [item for item in items if item.counter_reference is not None]
    if not checked:
        raise ConfigError(
            f"{items_path}: no item has a counter_reference; give items a known wrong answer "
            '("counter_reference": "...") for the panel to fail, and a "reference" to pass'
        )
    with panel.simulator() if simulated else contextlib.nullcontext() as server:
        if server is not None:
            built = panel.build(simulator_url=server.url)
            assert isinstance(built, Ensemble)
        rows = _judge(_with_prompt(built, spec), checked)
    _print(args.format, spec.ref, rows, simulated)
    return EXIT_OK if all(row.ok for row in rows) else EXIT_FAILED


def _read_items(path: Path) -> list[Item]:
    """The items of a JSONL file, image paths relative to its folder.

    Raises:
        ConfigError: no such file, or a line that is not JSON.
        ItemError: a line that is not an item.
    """
    from .._item import Item

    if not path.is_file():
        raise ConfigError(f"{path}: no such items file")
    items: list[Item] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"{path}:{number + 1}: not JSON ({exc})") from None
            items.append(Item.from_value(value, position=number, base_dir=path.parent))
    return items


def _render_problems(ensemble: Ensemble, items: Sequence[Item]) -> list[str]:
    """Why each item that the panel's critics cannot render cannot (a missing reference,
    ...), for every such item; nothing is sent."""
    found: list[str] = []
    for item in items:
        try:
            for critic in ensemble.critics:
                critic.check_renders(item)
        except ConfigError as exc:
            found.append(f"{item.id[:80]}: {exc}")
    return found


def _with_prompt(ensemble: Ensemble, spec: PromptSpec) -> Ensemble:
    """``ensemble`` with every critic judging with ``spec`` instead of its own prompt."""
    from ..critic import DEFAULT_PROMPT_TEMPLATE, DEFAULT_SYSTEM_PROMPT

    def swapped(critic: Critic) -> Critic:
        return dataclasses.replace(
            critic,
            prompt=spec,
            prompt_template=DEFAULT_PROMPT_TEMPLATE,
            system_prompt=DEFAULT_SYSTEM_PROMPT,
            labels=None,
        )

    return dataclasses.replace(ensemble, critics=[swapped(c) for c in ensemble.critics])


def _judge(ensemble: Ensemble, items: Sequence[Item]) -> list[CheckRow]:
    """Judge each item's counter-reference and reference in place of its answer."""
    asked: list[Item] = []
    for item in items:
        assert item.counter_reference is not None
        asked.append(
            item.model_copy(update={"id": f"{item.id}#counter", "query": item.counter_reference})
        )
        if item.reference is not None:
            asked.append(
                item.model_copy(update={"id": f"{item.id}#reference", "query": item.reference})
            )
    batch = ensemble.judge_many_sync(asked)
    results: dict[str, EnsembleVerdict] = {r.query_id: r for r in batch.verdicts}
    rows: list[CheckRow] = []
    for item in items:
        wrong = results[f"{item.id}#counter"]
        right = results.get(f"{item.id}#reference")
        rows.append(
            CheckRow(
                item_id=item.id,
                wrong=wrong.consensus,
                right=None if right is None else right.consensus,
                wrong_agreement=wrong.agreement_pct,
                right_agreement=None if right is None else right.agreement_pct,
            )
        )
    return rows


def _print(form: str, ref: str, rows: Sequence[CheckRow], simulated: Sequence[str]) -> None:
    failed = sum(row.wrong == "FAIL" for row in rows)
    with_reference = [row for row in rows if row.right is not None]
    passed = sum(row.right == "PASS" for row in with_reference)
    if form == "json":
        data: dict[str, Any] = {
            "prompt": ref,
            "known_wrong_failed": failed,
            "known_wrong": len(rows),
            "references_passed": passed,
            "references": len(with_reference),
            "simulated_critics": list(simulated),
            "items": [dataclasses.asdict(row) | {"ok": row.ok} for row in rows],
        }
        print(json.dumps(data, ensure_ascii=False))
        return
    for row in rows:
        right = "" if row.right is None else f"; reference -> {row.right}"
        mark = "ok" if row.ok else "NOT AS EXPECTED"
        print(f"{row.item_id[:80]}: known wrong answer -> {row.wrong}{right}  [{mark}]")
    line = f"{ref}: the panel failed {failed} of {len(rows)} known wrong answers"
    if with_reference:
        line += f" and passed {passed} of {len(with_reference)} references"
    print(line)
    if simulated:
        print(
            f"note: critics {', '.join(simulated)} are simulated; these numbers are the simulator's"
        )
