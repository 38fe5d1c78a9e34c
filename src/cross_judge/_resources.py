"""Where packaged data lives: ``cross_judge/prompt_files`` in a wheel, ``prompts/`` in a repo."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["prompt_files"]


def prompt_files() -> Traversable:
    """The folder of packaged YAML prompts.

    A built wheel carries the repository's top-level ``prompts/`` as the package-data
    folder ``cross_judge/prompt_files`` (not ``prompts``, which would shadow the
    ``cross_judge.prompts`` module). Running from a source checkout, it is ``prompts/``.
    """
    packaged = resources.files("cross_judge") / "prompt_files"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "prompts"
