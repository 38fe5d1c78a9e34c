"""The docs' lists of what exists stay complete: the home page's table names every page of
the site's nav, the prompts page's table every packaged prompt and version, and the
newcomer's page comes before the command line's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def nav_pages(nav: Any) -> Iterator[str]:
    """Every page of a mkdocs ``nav`` value, in order."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for entry in nav:
            yield from nav_pages(entry)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def site_nav() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return list(nav_pages(config["nav"]))


def table_rows(page: str) -> list[str]:
    """The lines of the page's tables (``| ... |``), header and rule included."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.startswith("|")]


def test_the_home_page_table_links_every_page_of_the_nav() -> None:
    linked = {
        target for row in table_rows("index.md") for target in re.findall(r"\]\(([^)#]+\.md)", row)
    }
    guides = [page for page in site_nav() if page != "index.md" and not page.startswith("api/")]
    assert [page for page in guides if page not in linked] == []
    assert "api/index.md" in linked


def test_the_prompts_page_table_names_every_packaged_prompt_and_version() -> None:
    packaged: dict[str, set[str]] = {}
    for path in sorted((ROOT / "prompts").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        packaged.setdefault(spec["id"], set()).add(str(spec["version"]))
    listed = {
        match["id"]: set(re.findall(r"`@(\w+)`", row))
        for row in table_rows("prompts.md")
        if (match := re.match(r"\| `(?P<id>[\w-]+)` \|", row))
    }
    assert listed == packaged


def test_the_your_own_data_page_comes_just_before_the_command_line_page() -> None:
    pages = site_nav()
    assert pages.index("your-own-data.md") + 1 == pages.index("batch-review-and-cli.md")
