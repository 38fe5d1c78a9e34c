"""Every ```python block of the docs (docs/*.md and README.md) runs, offline.

Each page's blocks run in order in one namespace, as a reader pastes them into one
session: a block with top-level ``await`` runs on the page's own asyncio loop (as in a
notebook), any other block runs as plain code (so a block may call ``asyncio.run`` or
``judge_sync``). Every vendor the blocks name (deepseek, openai, openrouter, anthropic,
custom and the local servers) is re-pointed at one :class:`~cross_judge.testing.VendorServer`
on 127.0.0.1 whose default persona answers any model, with dummy keys in the environment;
blocks run in a temporary working directory. A block that cannot run offline (a Ray
cluster, an s3 bucket) is preceded in the markdown by ``<!-- docs: skip (reason) -->``, and
one that needs an optional package by ``<!-- docs: needs MODULE -->`` (run where MODULE is
installed, skipped saying so elsewhere);
each such block is reported as a skipped test carrying its page, line and reason. A block
of any language preceded by ``<!-- docs: file PATH -->`` (a prompt, a price file) is
written to PATH when the page's run reaches it, so the blocks after it can read it. A
```bash block preceded by ``<!-- docs: run -->`` holds ``cross-judge`` commands that work
offline (the shipped simulated panels): each runs through ``cross_judge.cli._main`` in the
page's directory and must exit 0.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib.util
import inspect
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from cross_judge import pricing
from cross_judge.cli import main as cross_judge_cli
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport._pool import aclose_sessions
from cross_judge.vendors import all_vendors, register_vendor

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
SKIP = re.compile(r"<!--\s*docs:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
FILE = re.compile(r"<!--\s*docs:\s*file\s+(?P<path>\S+)\s*-->")
RUN = re.compile(r"<!--\s*docs:\s*run\s*-->")
NEEDS = re.compile(r"<!--\s*docs:\s*needs\s+(?P<module>[\w.]+)\s*-->")
DUMMY_KEY = "sk-docs-not-a-real-key"
KEY_VARIABLES = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")
EXAMPLE_FILES = (
    "align.yaml",
    "support.jsonl",
    "support.gold.jsonl",
    "items.jsonl",
    "panel.yaml",
    "cascade.yaml",
    "choose.yaml",
    "choose.prices.yaml",
    "answers.jsonl",
    "answers.gold.jsonl",
    "rubric.yaml",
    "candidates.jsonl",
    "rank.yaml",
)
"""Files of examples/ that blocks read by their repository path (``examples/items.jsonl``)."""


class Block(NamedTuple):
    """One fenced block to run (python) or to write (``file``): its page, first code line
    (1-based) and source."""

    page: Path
    line: int
    source: str
    skip_reason: str | None
    file: str | None = None
    commands: bool = False

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def python_blocks(page: Path) -> list[Block]:
    """The page's ```python blocks and file blocks in order, each python block with the
    skip reason written before it."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        fence = lines[index].strip()
        if not fence.startswith("```"):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        before = next((text for text in reversed(lines[:index]) if text.strip()), "")
        source = "\n".join(lines[index + 1 : end]) + "\n"
        file = FILE.search(before)
        if file:
            blocks.append(Block(page, index + 2, source, None, file["path"]))
        elif fence == "```bash" and RUN.search(before):
            blocks.append(Block(page, index + 2, source, None, file=None, commands=True))
        elif fence == "```python":
            match = SKIP.search(before)
            reason = match["reason"].strip() if match else None
            needs = NEEDS.search(before)
            if needs and importlib.util.find_spec(needs["module"]) is None:
                reason = (
                    f"needs {needs['module']}, which is not installed here (nox -s docs has it)"
                )
            blocks.append(Block(page, index + 2, source, reason))
        index = end + 1
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in python_blocks(page)]
PYTHON_BLOCKS = [block for block in ALL_BLOCKS if block.file is None and not block.commands]
COMMAND_BLOCKS = [block for block in ALL_BLOCKS if block.commands]
RUN_PAGES = sorted(
    {b.page for b in [*PYTHON_BLOCKS, *COMMAND_BLOCKS] if b.skip_reason is None},
    key=PAGES.index,
)
SKIPPED = [block for block in PYTHON_BLOCKS if block.skip_reason is not None]


@pytest.fixture
def simulated_vendors(
    vendor_registry: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[VendorServer]:
    """Every registered vendor answered by one simulated vendor; keys set, cwd a temp dir;
    prices registered by the page forgotten after it."""
    registered_prices = dict(pricing._registered)
    with VendorServer(default_persona=Persona("docs", accuracy=0.9)) as server:
        for config in list(all_vendors().values()):
            url = server.anthropic_url if config.protocol == "anthropic" else server.url
            fields = {
                f.name: getattr(config, f.name)
                for f in dataclasses.fields(config)
                if f.name not in ("name", "base_url", "api_key_env")
            }
            register_vendor(config.name, url, config.api_key_env, replace_existing=True, **fields)
        for variable in KEY_VARIABLES:
            monkeypatch.setenv(variable, DUMMY_KEY)
        monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(tmp_path / "cache"))
        (tmp_path / "examples").mkdir()
        for name in EXAMPLE_FILES:
            shutil.copy(ROOT / "examples" / name, tmp_path / "examples" / name)
        monkeypatch.chdir(tmp_path)
        try:
            yield server
        finally:
            pricing._clear_registered()
            pricing._registered.update(registered_prices)


def run_commands(block: Block) -> None:
    """Run each ``cross-judge ...`` line of a bash block; every one must exit 0."""
    for line in block.source.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        assert words[0] == "cross-judge", f"{block.where}: only cross-judge commands run: {line}"
        code = cross_judge_cli(words[1:])
        assert code == 0, f"{block.where}: {line!r} exited {code}"


def run_page(blocks: list[Block], namespace: dict[str, Any]) -> None:
    """Run ``blocks`` in order in ``namespace``; awaiting blocks on one loop of the page."""
    loop = asyncio.new_event_loop()
    try:
        for block in blocks:
            if block.file is not None:
                target = Path(block.file)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.source, encoding="utf-8")
                continue
            if block.commands:
                run_commands(block)
                continue
            code = compile(block.source, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            try:
                if code.co_flags & inspect.CO_COROUTINE:
                    loop.run_until_complete(eval(code, namespace))  # the repo's own docs
                else:
                    exec(code, namespace)
            except BaseException as exc:
                raise AssertionError(f"{block.where}: {type(exc).__name__}: {exc}") from exc
    finally:
        loop.run_until_complete(aclose_sessions())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


@pytest.mark.integration
@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_of_the_page_runs(page: Path, simulated_vendors: VendorServer) -> None:
    blocks = [b for b in ALL_BLOCKS if b.page == page and b.skip_reason is None]  # files too
    namespace: dict[str, Any] = {"__name__": "__main__"}
    run_page(blocks, namespace)


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.where)
def test_a_block_that_cannot_run_offline_says_why(block: Block) -> None:
    pytest.skip(f"{block.where}: docs: skip ({block.skip_reason})")


def test_the_docs_have_python_blocks_to_run() -> None:
    # Guards the collector: a changed fence style must not turn this file into a no-op.
    assert len(PYTHON_BLOCKS) - len(SKIPPED) >= 25
    assert len(COMMAND_BLOCKS) >= 1
