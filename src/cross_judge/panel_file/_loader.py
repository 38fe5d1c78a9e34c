"""Reading a panel file: YAML with the line of every field, checked by the schema, each
problem reported at its line.

:func:`load_panel` (a path) and :func:`parse_panel` (text) read the YAML (refusing repeated
and non-text keys), record the line of every key and list item, validate the mapping as a
:class:`~cross_judge.panel_file._schema.PanelSpec`, and report whatever pydantic or the
schema's checks refuse in the file's words (``expected a number, got text``, a
did-you-mean for an unknown field, no literal keys), each problem at its line, all at once
in a :class:`~cross_judge.errors.PanelError`.

What it does not do: decide what is valid (the schema does), or build anything.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .._yaml import FileTooLargeError, YAMLSyntaxError, load as load_yaml, read_file
from ..errors import PanelError
from ..vendors import all_vendors
from ._problems import (
    MISSING_HINTS,
    FieldProblem,
    FieldProblems,
    PanelProblem,
    field_name,
    is_number,
    line_of,
    yaml_type,
)
from ._schema import (
    CriticSpec,
    EscalateSpec,
    PanelSpec,
    PersonaSpec,
    SimulatorSpec,
    TierSpec,
    shape_problems,
)

__all__ = ["load_panel", "parse_panel"]

# Field names that would hold a literal secret. Matched only against unknown fields, so
# max_tokens and api_key_env are never taken for one.
_SECRET_FIELD = re.compile(
    r"(api_?key|apikey|(^|_)key$|^key|token|secret|passw|credential|bearer|auth)"
)


_EXPECTED = {
    "float_type": "a number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "string_type": "text",
    "bool_type": "true or false",
    "dict_type": "a mapping",
    "list_type": "a list",
    "model_type": "a mapping of fields",
    "model_attributes_type": "a mapping of fields",
}


def load_panel(path: str | os.PathLike[str]) -> PanelSpec:
    """Read and check a panel file. Relative prompt paths resolve against its folder.

    Raises:
        PanelError: the file is missing, unreadable, over 2 MiB
            (:data:`cross_judge._yaml.MAX_FILE_BYTES`), not valid YAML (which includes a
            tagged value that cannot be read, nesting deeper than 64 levels and more than
            100,000 values, aliases counted at full size), or any field is wrong; every
            problem is listed with its line.
    """
    source = os.fspath(path)
    try:
        raw = read_file(source)
    except FileNotFoundError:
        raise PanelError(source, [PanelProblem("", None, "no such panel file")]) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise PanelError(source, [PanelProblem("", None, f"cannot read it ({reason})")]) from None
    except FileTooLargeError as exc:
        problem = PanelProblem("", None, exc.describe("panel", exc.size))
        raise PanelError(source, [problem]) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PanelError(
            source, [PanelProblem("", None, f"not UTF-8 text (byte {exc.start})")]
        ) from None
    return parse_panel(text, source=source, base_dir=Path(source).resolve().parent)


def parse_panel(
    text: str, *, source: str = "<string>", base_dir: str | os.PathLike[str] | None = None
) -> PanelSpec:
    """A :class:`PanelSpec` from YAML text. ``source`` names it in messages; relative
    prompt paths resolve against ``base_dir`` (default: the working directory).

    Raises:
        PanelError: as :func:`load_panel`.
    """
    data, lines = _read_yaml(text, source)
    folder = Path(base_dir) if base_dir is not None else Path.cwd()
    try:
        spec = PanelSpec.model_validate(
            data, context={"base_dir": folder, "source": source, "lines": lines}
        )
    except ValidationError as exc:
        problems = _problems(exc, lines, data)
        # Checked on the file's keys too: a field that cannot be read stops the check of
        # the panel as a whole, and these are worth knowing at once.
        shape = shape_problems(set(data), data.get("tiers") is not None, data.get("critics"))
        problems += [
            PanelProblem(field_name(p.field), line_of(lines, p.field), str(p)) for p in shape
        ]
        unique = {(p.field, p.line, p.message): p for p in problems}
        raise PanelError(source, sorted(unique.values(), key=lambda p: p.line or 0)) from None
    return spec


def _read_yaml(text: str, source: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    def fail(message: str, line: int | None = None, field: str = "") -> PanelError:
        return PanelError(source, [PanelProblem(field, line, message)])

    try:
        node, data = load_yaml(text)
    except YAMLSyntaxError as exc:
        column = f" (column {exc.column})" if exc.column is not None else ""
        raise fail(f"invalid YAML{column}: {exc.problem}", exc.line) from None
    expected = "expected a mapping with at least critics: [...] (or tiers: [...])"
    if data is None:
        raise fail(f"the panel is empty; {expected}")
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise fail(f"{expected}, got {yaml_type(data)}", 1)
    lines: dict[tuple[str | int, ...], int] = {}
    problems: list[PanelProblem] = []
    _walk(node, (), lines, problems)
    if problems:
        raise PanelError(source, problems)
    return data, lines


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: dict[tuple[str | int, ...], int],
    problems: list[PanelProblem],
) -> None:
    """Record the line of every key and list item; report repeated and non-text keys."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or key_node.tag != "tag:yaml.org,2002:str":
                problems.append(PanelProblem(field_name(path), line, "field names must be text"))
                continue
            child = (*path, key)
            if child in lines:
                problems.append(
                    PanelProblem(
                        field_name(child),
                        line,
                        f"is given twice (also on line {lines[child]}); keep one",
                    )
                )
                continue
            lines[child] = line
            _walk(value_node, child, lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _walk(item, child, lines, problems)


def _problems(
    exc: ValidationError, lines: Mapping[tuple[str | int, ...], int], data: Any
) -> list[PanelProblem]:
    problems: list[PanelProblem] = []
    for error in exc.errors():
        loc: tuple[str | int, ...] = tuple(p for p in error["loc"] if p != "[key]")
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, FieldProblems):
            for each in cause.problems:
                path = (*loc, *each.field)
                problems.append(PanelProblem(field_name(path), line_of(lines, path), str(each)))
            continue
        if isinstance(cause, FieldProblem):
            loc = (*loc, *cause.field)
        message = _message(error, loc, cause, data)
        problems.append(PanelProblem(field_name(loc), line_of(lines, loc), message))
    return sorted(problems, key=lambda p: p.line or 0)


def _message(error: Any, loc: tuple[str | int, ...], cause: object, data: Any) -> str:
    kind: str = error["type"]
    field = loc[-1] if loc else ""
    if isinstance(cause, Exception):
        return str(cause)
    if kind == "missing":
        hint = MISSING_HINTS.get(str(field))
        return "is required" + (f": {hint}" if hint else "")
    if kind == "extra_forbidden":
        return _unknown_field(str(field), loc, data)
    if kind in _EXPECTED:
        got = yaml_type(error.get("input"))
        message = f"expected {_EXPECTED[kind]}, got {got}"
        if kind == "string_type" and got in ("a number", "true or false"):
            message += "; put it in quotes"
        return message
    if kind == "too_short" and field == "critics":
        return "is empty; list at least one critic"
    if kind == "too_short" and field == "tiers":
        return "is empty; list at least one tier (an ensemble: critics: [...]), cheapest first"
    message = str(error["msg"])
    message = re.sub(r"^Input should", "should", message)
    message = message[:1].lower() + message[1:]
    value = error.get("input")
    if is_number(value):
        message += f", got {value!r}"
    return message


def _unknown_field(field: str, loc: tuple[str | int, ...], data: Any) -> str:
    parent = loc[:-1]
    model: type[BaseModel] = CriticSpec
    if parent == ():
        model = PanelSpec
    elif parent[-1] == "persona":
        model = PersonaSpec
    elif len(parent) == 2 and parent[0] == "tiers":
        model = TierSpec
    elif parent == ("escalate",):
        model = EscalateSpec
    elif parent == ("simulator",):
        model = SimulatorSpec
    known = [info.alias or name for name, info in model.model_fields.items()]
    normalized = field.lower().replace("-", "_")
    close = difflib.get_close_matches(normalized, known, n=1, cutoff=0.85)
    if _SECRET_FIELD.search(normalized) and not close:
        suggestion = _default_env_var(parent, data) or "DEEPSEEK_API_KEY"
        where = "" if "critics" in parent else " under each critic"
        return (
            "a literal key in a panel file is refused (the value is not shown): panel files "
            "get copied, shared and committed. Put the key in an environment variable and "
            f"name it{where} instead, e.g. api_key_env: {suggestion}"
        )
    close = close or difflib.get_close_matches(normalized, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"is not a known field{hint}; known fields: {', '.join(known)}"


def _default_env_var(parent: tuple[str | int, ...], data: Any) -> str | None:
    """The key variable of the vendor of the critic at ``parent``, if it has one."""
    if len(parent) < 2 or parent[-2] != "critics" or not isinstance(data, dict):
        return None
    critics: Any = data
    for part in parent[:-1]:
        if isinstance(critics, dict) and isinstance(part, str):
            critics = critics.get(part)
        elif isinstance(critics, list) and isinstance(part, int) and part < len(critics):
            critics = critics[part]
        else:
            return None
    index = parent[-1]
    if not isinstance(critics, list) or not isinstance(index, int) or index >= len(critics):
        return None
    critic = critics[index]
    vendor = critic.get("vendor", "deepseek") if isinstance(critic, dict) else None
    config = all_vendors().get(vendor.strip().lower()) if isinstance(vendor, str) else None
    return config.api_key_env if config is not None else None
