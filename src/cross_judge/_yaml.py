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
size (both far beyond any real panel or prompt file), integers of at most 1000 digits.

:func:`load` is what the panel, prompt and price readers call: one document, its node
tree (for line numbers) and its data, or a :class:`YAMLSyntaxError` saying what and where.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

__all__ = ["MAX_DEPTH", "MAX_VALUES", "SafeLoader", "YAMLSyntaxError", "load"]

MAX_DEPTH = 64
"""Deepest nesting of collections accepted, counted through aliases."""
MAX_VALUES = 100_000
"""Most values (scalars and collections) a document may expand to, counted through aliases."""
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
        # id(node) -> (values, depth) of each finished node, expanded through aliases.
        self._extent: dict[int, tuple[int, int]] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
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
        if values > MAX_VALUES:
            raise ComposerError(
                None,
                None,
                f"expands to more than {MAX_VALUES} values through its aliases",
                node.start_mark,
            )
        self._extent[id(node)] = (values, depth)
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
