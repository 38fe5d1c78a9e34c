"""What the browser tests share: the Chromium binary they drive (Debian's, never a
downloaded one), its flags, and the record of what a page did that an offline page must
not (console errors and warnings, page errors, network requests)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PROBLEMS = ("error", "warning", "pageerror", "request")
"""The kinds of :func:`watch` events an offline page must have none of."""


def chromium() -> str | None:
    """``CROSS_JUDGE_CHROMIUM`` when it names a file, else ``chromium`` or
    ``chromium-browser`` on PATH; ``None`` when there is none."""
    named = os.environ.get("CROSS_JUDGE_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def watch(page: Any) -> list[tuple[str, str]]:
    """Record on ``page`` every console message, page error and request for anything but
    a local file, data, blob or about URL, as ``(kind, text)`` pairs."""
    events: list[tuple[str, str]] = []
    page.on("console", lambda m: events.append((m.type, m.text)))
    page.on("pageerror", lambda e: events.append(("pageerror", str(e))))
    page.on(
        "request",
        lambda r: (
            events.append(("request", r.url))
            if not r.url.startswith(("file:", "data:", "blob:", "about:"))
            else None
        ),
    )
    return events
