"""What is wrong with a panel file, and where: the problems a check finds, as users read them.

A :class:`PanelProblem` is one problem as reported: the field as a path
(``tiers[1].critics[0].vendor``), its YAML line, and what to change.
:class:`~cross_judge.errors.PanelError` carries them. :class:`FieldProblem` and
:class:`FieldProblems` are how the checks of :mod:`cross_judge.panel_file._schema` signal a
problem at a field below the one pydantic reports; they never reach a caller (the loader,
:mod:`cross_judge.panel_file._loader`, reports each as a ``PanelProblem``). The helpers
name a field path, find its line and name a YAML value's type.

What it does not do: find problems (the schema and the loader do), or read YAML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import ConfigDict

from ..transport import redact

__all__ = [
    "MISSING_HINTS",
    "SPEC_CONFIG",
    "FieldProblem",
    "FieldProblems",
    "PanelProblem",
    "field_name",
    "is_number",
    "line_of",
    "yaml_type",
]

SPEC_CONFIG = ConfigDict(
    extra="forbid", strict=True, frozen=True, hide_input_in_errors=True, allow_inf_nan=False
)
"""What every model of a panel file is: unknown keys, wrong types (no coercion), changes
after loading and infinities are problems; a value a user typed is never echoed in
pydantic's own message (it may be a key)."""


def is_number(value: object) -> bool:
    """Whether a YAML value is a number (an int or a float, not a boolean)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


MISSING_HINTS = {
    "name": "a unique name for the critic, e.g. strict-deepseek",
    "model": "the vendor's model id, e.g. deepseek-flash",
    "critics": "the list of critics, each with at least name and model",
}
"""What to write for a required field that is missing, by field name."""


@dataclass(frozen=True)
class PanelProblem:
    """One problem in a panel file: the field as a path (``critics[1].vendor``, ``""`` for
    the file as a whole), its 1-based YAML line when known, and what to change."""

    field: str
    line: int | None
    message: str

    def format(self, source: str) -> str:
        """``<source>:<line>: <field>: <message>``, as a
        :class:`~cross_judge.errors.PanelError` shows it: with anything shaped like an API
        key or a bearer token hidden."""
        where = f"{source}:{self.line}" if self.line is not None else source
        return redact(
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )

    def redacted(self) -> PanelProblem:
        """This problem with anything shaped like an API key or a bearer token hidden from
        its message (what :class:`~cross_judge.errors.PanelError` keeps)."""
        return replace(self, message=redact(self.message))


class FieldProblem(ValueError):
    """Raised by a validator for a field below the one pydantic reports it at: ``field``
    is the path from there."""

    def __init__(self, field: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field = field


class FieldProblems(ValueError):
    """Raised by a validator that found several problems, each at its own field."""

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = list(problems)


def field_name(path: Sequence[str | int]) -> str:
    """A field path as users read it: ``("tiers", 1, "critics", 0)`` is
    ``tiers[1].critics[0]``; ``""`` for the empty path (the file)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def line_of(lines: Mapping[tuple[str | int, ...], int], path: tuple[str | int, ...]) -> int | None:
    """The line of ``path``, else of its nearest ancestor in the file (``None``: none is)."""
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return None


def yaml_type(value: object) -> str:
    """What a value read from YAML is, in a message's words (``"a number"``, ``"text"``)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return type(value).__name__
