"""The YAML loader of panel and prompt files: PyYAML's safe loader, made total and bounded.

PyYAML's ``SafeLoader`` lets some text escape as exceptions other than ``yaml.YAMLError``,
or take unbounded time and memory further on:

* a tagged scalar it cannot convert (``!!int x``, ``!!bool maybe``, ``!!timestamp
  2001-13-01``) or an integer of more than 4300 digits raises ``ValueError``,
  ``KeyError`` or ``AttributeError``;
* deep nesting (``[[[[...``) exhausts the stack (``RecursionError``);
* aliases can make a document expand exponentially (``a: &a [x, x]``, ``b: &b [*a, *a]``,
  ...: "billion laughs") or contain itself (``a: &a [*a]``), and whatever walks or prints
  the data follows them.

:class:`SafeLoader` reports each of these as a :class:`yaml.MarkedYAMLError` with the line
and column, so callers need to catch only ``yaml.YAMLError``. Limits: nesting at most
:data:`MAX_DEPTH` levels and at most :data:`MAX_VALUES` values counting every alias at full
size (both far beyond any real panel or prompt file), integers of at most 1000 digits. A
document over :data:`MAX_VALUES` without aliases is counted whole and its count said; one
whose aliases take it over is stopped at the value that does, and that count said.

:func:`load` is what the panel, prompt and price readers call: one document, its node
tree (for line numbers) and its data, or a :class:`YAMLSyntaxError` saying what and where.
:func:`read_file` is how the panel and prompt readers read a file: at most
:data:`MAX_FILE_BYTES`, else a :class:`FileTooLargeError`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_VALUES",
    "FileTooLargeError",
    "SafeLoader",
    "YAMLSyntaxError",
    "load",
    "read_file",
    "repointed_path",
]

MAX_DEPTH = 64
"""Deepest nesting of collections accepted, counted through aliases."""
MAX_VALUES = 100_000
"""Most values (scalars and collections) a document may hold, counting every alias at the
full size of what it names."""
MAX_FILE_BYTES = 2 * 1024 * 1024
"""Largest prompt or panel file read (2 MiB): a thousand times a packaged prompt (about
2 KB), and about 500,000 tokens of prompt text, more than a judge model's context window
holds. Reading stops there, so a larger file costs no more memory than that."""
_MAX_INT_BITS = 3321  # 10**1000 has 3322 bits: larger ints are refused before str() is needed
_YAML_TAG = "tag:yaml.org,2002:"


class SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises only ``yaml.YAMLError`` and bounds the document.

    Use it as ``yaml.SafeLoader``: ``get_single_node()``, then ``construct_document(node)``,
    then ``dispose()``.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0  # alias events composed so far
        # id(node) -> (values, depth) of each finished node, expanded through aliases.
        self._extent: dict[int, tuple[int, int]] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            event = self.peek_event()  # type: ignore[no-untyped-call]
            target = self.anchors.get(getattr(event, "anchor", None))
            if target is not None and id(target) not in self._extent:
                raise ComposerError(
                    None, None, "found an alias inside the value it names", event.start_mark
                )
            return super().compose_node(parent, index)  # also reports an undefined alias
        if self._depth >= MAX_DEPTH:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise ComposerError(
                None, None, f"nested more than {MAX_DEPTH} levels deep", event.start_mark
            )
        self._depth += 1
        aliases_before = self._aliases
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None:  # pragma: no cover - PyYAML composes a node for every event
            return node
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        extents = [self._extent[id(child)] for child in children]
        values = 1 + sum(extent[0] for extent in extents)
        depth = 1 + max((extent[1] for extent in extents), default=0)
        if depth > MAX_DEPTH:
            raise ComposerError(
                None, None, f"nested more than {MAX_DEPTH} levels deep", node.start_mark
            )
        if values > MAX_VALUES and self._aliases > aliases_before:
            # Stopped here: through aliases the count can grow exponentially with the text.
            raise ComposerError(
                None,
                None,
                f"this value expands to {values:,} values through its aliases, each "
                f"counted at full size: more than the {MAX_VALUES:,} a file may hold",
                node.start_mark,
            )
        self._extent[id(node)] = (values, depth)
        return node

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        values = self._extent[id(node)][0] if node is not None else 0
        if values > MAX_VALUES:
            # No alias: the count grows with the text only, so the whole was counted.
            raise ComposerError(
                None,
                None,
                f"the document holds {values:,} values (scalars, lists and mappings), more "
                f"than the {MAX_VALUES:,} a file may hold; no prompt or panel has that many",
                None,  # the whole document: no one place to point at
            )
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        tag = str(node.tag).replace(_YAML_TAG, "!!")
        try:
            value = super().construct_object(node, deep)
        except (ArithmeticError, AttributeError, LookupError, TypeError, ValueError):
            # PyYAML's constructors of tagged scalars; the value itself is not repeated.
            raise ConstructorError(
                None, None, f"cannot read this value as {tag}", node.start_mark
            ) from None
        if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
            raise ConstructorError(None, None, "integer of more than 1000 digits", node.start_mark)
        return value


class FileTooLargeError(ValueError):
    """A file over :data:`MAX_FILE_BYTES`; ``size`` is its size in bytes when the
    file system says (else ``None``: a pipe or a device)."""

    def __init__(self, size: int | None) -> None:
        super().__init__(self.describe("YAML", size))
        self.size = size

    @staticmethod
    def describe(what: str, size: int | None) -> str:
        """The problem for a ``what`` file (``"prompt"``, ``"panel"``) of ``size`` bytes."""
        shown = f"{size:,} bytes" if size is not None else "larger than that"
        return (
            f"the {what} file is {shown}, over the {MAX_FILE_BYTES:,} bytes (2 MiB) a {what} "
            f"file may be (a real one is a few kilobytes); check that this is the file meant"
        )


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path``, reading no more than :data:`MAX_FILE_BYTES` + 1.

    Raises:
        OSError: as :func:`open` and reading raise it (``FileNotFoundError``, ...).
        FileTooLargeError: the file is larger than :data:`MAX_FILE_BYTES`.
    """
    with open(path, "rb") as handle:
        raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            try:
                size: int | None = os.fstat(handle.fileno()).st_size
            except OSError:  # pragma: no cover - fstat of an open file does not fail
                size = None
            raise FileTooLargeError(size if size is not None and size > MAX_FILE_BYTES else None)
    return raw


class YAMLSyntaxError(ValueError):
    """Text that is not (bounded, readable) YAML: ``problem``, and the 1-based ``line`` and
    ``column`` where it is when known (else ``None``)."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column


def load(text: str) -> tuple[yaml.Node | None, Any]:
    """The single document in ``text``: its node tree (``None`` when empty) and its data.

    Raises:
        YAMLSyntaxError: anything :class:`SafeLoader` refuses, including a control
            character (located by line and column too, which PyYAML's reader does not do).
    """
    loader: SafeLoader | None = None
    try:
        loader = SafeLoader(text)  # inside the try: it rejects control characters at once
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        if mark is None:
            raise YAMLSyntaxError(problem) from None
        raise YAMLSyntaxError(problem, mark.line + 1, mark.column + 1) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        problem = (
            f"character U+{exc.character:04X} is not allowed in YAML (control characters "
            "must be escaped)"
        )
        raise YAMLSyntaxError(problem, line, column) from None
    except yaml.YAMLError as exc:
        raise YAMLSyntaxError(str(exc)) from None
    finally:
        if loader is not None:
            loader.dispose()


def repointed_path(ref: str, old: Path, new: Path) -> str:
    """A path ``ref`` written in a panel file in folder ``old`` (a prompt, a simulator's
    file) as the same file seen from a panel file in ``new``: a path relative to ``old``
    that names a file is made relative to ``new`` (absolute when no relative path joins
    them); anything else (a packaged prompt such as ``pass-fail@3``) is kept."""
    path = Path(ref)
    if path.is_absolute() or not (old / path).is_file():
        return ref
    target = (old / path).resolve()
    try:
        return os.path.relpath(target, new.resolve())
    except ValueError:  # another drive on Windows
        return str(target)
