"""Whether output that a docs page shows is what a command or an example printed.

A page shows output shortened: ``...`` stands for what it leaves out (lines, or the end of a
line such as a time), table rules and line wrapping may differ with the terminal's width.
So both texts are compared with table rules dropped and every run of whitespace one space,
and each part of the page's text between ``...`` must be found in the output, in order.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^```(?P<language>\S*)$")


def normalized(text: str) -> str:
    """``text`` with table rules dropped and every run of whitespace one space."""
    return " ".join(text.replace("─", " ").split())


def missing_from(shown: str, printed: str) -> list[str]:
    """The parts of ``shown`` (split at ``...``) not found in ``printed``, in order; empty
    when the page shows only what was printed."""
    missing: list[str] = []
    position = 0
    output = normalized(printed)
    for part in (normalized(p) for p in shown.split("...")):
        at = output.find(part, position)
        if at < 0:
            missing.append(part)
        else:
            position = at + len(part)
    return missing


def fenced_blocks(text: str) -> list[tuple[str, str, str]]:
    """Each fenced block of a markdown ``text`` in order: its language, the last non-blank
    line before it, and its content."""
    found: list[tuple[str, str, str]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = lines.index("```", index + 1)
        before = next((line for line in reversed(lines[:index]) if line.strip()), "")
        found.append((fence["language"], before, "\n".join(lines[index + 1 : end]) + "\n"))
        index = end + 1
    return found
