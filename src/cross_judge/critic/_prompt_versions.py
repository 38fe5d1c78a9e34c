"""New versions of a prompt, written as files: :func:`next_version`, :func:`prompt_yaml` and
:func:`write_prompt`.

A version is written as the loader reads it (``<id>@<version>.yaml``, the id and version
inside matching the name), every field the spec sets in the loader's order, multi-line text
in literal blocks, so two versions diff line by line. The same spec always gives the same
bytes. A file is never overwritten: writing over one that exists is an error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ._prompts import PromptSpec, parse_prompt

__all__ = ["dump_prompt_fields", "next_version", "prompt_file_name", "prompt_yaml", "write_prompt"]


def next_version(version: str) -> str:
    """The version after ``version``: its first number plus one (``"2"`` -> ``"3"``,
    ``"1.4"`` -> ``"2"``)."""
    return str(int(version.split(".")[0]) + 1)


def prompt_file_name(spec: PromptSpec) -> str:
    """The file name the loader expects for ``spec``: ``<id>@<version>.yaml``."""
    return f"{spec.id}@{spec.version}.yaml"


class _Dumper(yaml.SafeDumper):
    """Multi-line text as literal blocks, so a prompt file reads as it would be written
    (text a literal block cannot hold, such as trailing spaces, PyYAML quotes)."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_prompt_fields(fields: dict[str, Any]) -> str:
    """Prompt ``fields`` as YAML the way a prompt file is written: in the order given,
    multi-line text in literal blocks, any Unicode kept, lines folded at 100."""
    return yaml.dump(fields, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def prompt_yaml(spec: PromptSpec) -> str:
    """``spec`` as the text of a prompt file: every field it sets (``source`` is where it
    was read, not part of it), in declaration order. Reading the text back gives an equal
    spec (checked by :func:`write_prompt`)."""
    fields: dict[str, Any] = spec.model_dump(
        mode="json", exclude={"source"}, exclude_defaults=True, exclude_none=True
    )
    return dump_prompt_fields({"id": spec.id, "version": spec.version, **fields})


def write_prompt(spec: PromptSpec, directory: str | os.PathLike[str]) -> Path:
    """Write ``spec`` to ``directory/<id>@<version>.yaml`` (the folder made if missing)
    and return the path.

    Raises:
        ConfigError: the file exists already (nothing is overwritten: choose another
            folder or remove it), or the text would not read back as ``spec``.
    """
    text = prompt_yaml(spec)
    path = Path(directory) / prompt_file_name(spec)
    again = parse_prompt(text, source=str(path))
    if again.model_dump(exclude={"source"}) != spec.model_dump(exclude={"source"}):
        raise ConfigError(f"{path}: the prompt would not read back as written")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "x", encoding="utf-8", newline="\n") as out:
            out.write(text)
    except FileExistsError:
        raise ConfigError(
            f"{path} exists already; a prompt version is never overwritten: write to "
            "another folder, or remove the file if it is yours to replace"
        ) from None
    return path
