"""docs/your-own-data.md as a newcomer follows it: its files written, its Python run, its
offline commands run in order in one folder, and every output it shows found in what the
command before it printed (``...`` stands for what the page leaves out), so the page cannot
drift from what cross-judge does. Its real-vendor commands are run against the simulated
vendor by tests/docs; here only its real panel file is loaded."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

from cross_judge.panel_file import PanelSpec, load_panel

from ..shown_output import fenced_blocks, missing_from
from .conftest import run

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[2] / "docs" / "your-own-data.md"
REAL = "## 4. On real vendors"
MARKER = re.compile(r"<!--\s*docs:\s*(?P<what>file\s+\S+|run)\s*-->")


class Block(NamedTuple):
    """A fenced block of the page: its language, the ``docs:`` marker before it, its text."""

    language: str
    marker: str | None
    source: str


def offline_blocks() -> list[Block]:
    """The page's fenced blocks before its real-vendor section, in order."""
    text = PAGE.read_text(encoding="utf-8")
    assert REAL in text
    return [
        Block(language, marker["what"] if (marker := MARKER.search(before)) else None, source)
        for language, before, source in fenced_blocks(text[: text.index(REAL)])
    ]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, a fixed terminal width, a private cache, no keys."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def follow(blocks: list[Block], capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    """Write, run and run the commands of ``blocks`` in order; each output block the page
    shows, beside what the commands before it printed."""
    shown: list[tuple[str, str]] = []
    printed = ""
    for block in blocks:
        if block.marker is not None and block.marker.startswith("file "):
            Path(block.marker.removeprefix("file ")).write_text(block.source, encoding="utf-8")
        elif block.marker == "run":
            printed = ""
            for line in block.source.splitlines():
                words = line.split()
                assert words[0] == "cross-judge", line
                code, out, err = run(capsys, *words[1:])
                assert code == 0, f"{line!r} exited {code}: {err}"
                printed += out + err
        elif block.language == "python":
            exec(compile(block.source, str(PAGE), "exec"), {"__name__": "__main__"})
        elif block.language == "text" and printed:
            shown.append((block.source, printed))
    return shown


def test_every_output_the_page_shows_is_what_its_offline_commands_print(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = follow(offline_blocks(), capsys)
    assert len(shown) == 3  # review, stats, report
    assert [missing_from(page, printed) for page, printed in shown] == [[], [], []]


def test_the_pages_csv_conversion_writes_the_items_file_it_shows(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = offline_blocks()
    items = next(b.source for b in page if b.marker == "file items.jsonl")
    up_to_python = page[: next(i for i, b in enumerate(page) if b.language == "python") + 1]
    follow([b for b in up_to_python if b.marker != "file items.jsonl"], capsys)
    assert (folder / "items.jsonl").read_text(encoding="utf-8") == items


def test_the_pages_offline_panel_is_its_real_panel_on_the_simulated_vendor(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    follow([b for b in offline_blocks() if b.marker != "run"], capsys)
    real, offline = load_panel("panel.yaml"), load_panel("panel.offline.yaml")
    assert {c.vendor for c in real.critics} == {"openai", "anthropic"}
    assert {c.vendor for c in offline.critics} == {"simulated"}

    def critics(spec: PanelSpec) -> list[tuple[str, str | None, str | None]]:
        return [(c.name, c.model, c.prompt) for c in spec.critics]

    assert critics(offline) == critics(real)
    assert (offline.voting, offline.voting_kwargs) == (real.voting, real.voting_kwargs)
