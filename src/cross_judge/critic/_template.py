"""Safe prompt templates: ``{name}`` placeholders filled with literal text, nothing else.

``str.format`` is not safe for prompts built from untrusted items: ``{query.__class__}`` in
a template reaches attributes, ``{0}`` indexes arguments, and a value rendered by one
``format`` call can be re-interpreted by a second. Here a template is compiled once into
literal text and named fields; rendering only concatenates ``str(value)``. Values are
never re-read as templates, so an item containing ``{query}`` or ``{0}`` arrives verbatim.

Accepted: ``{name}`` where ``name`` is an identifier; ``{{`` and ``}}`` for literal braces
(as in ``str.format``). Rejected at compile time, with the fix in the message: positional
fields (``{}``, ``{0}``), attribute or index access (``{a.b}``, ``{a[0]}``), conversions
and format specs (``{a!r}``, ``{a:>10}``), and unmatched single braces.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import PromptError

__all__ = ["Template"]

_formatter = string.Formatter()


@dataclass(frozen=True)
class Template:
    """A compiled template. Build with :meth:`compile`."""

    source: str
    parts: tuple[tuple[str, str | None], ...]
    fields: frozenset[str]

    @classmethod
    def compile(cls, source: str, *, what: str = "prompt_template") -> Template:
        """Compile ``source``; ``what`` names it in error messages.

        Raises:
            PromptError: the template uses anything but ``{name}`` fields and doubled braces.
        """
        if not isinstance(source, str):
            raise PromptError(f"{what} must be a string, got {type(source).__name__}")
        try:
            parsed = list(_formatter.parse(source))
        except ValueError as exc:
            raise PromptError(
                f"{what} is malformed ({exc}); write literal braces as '{{{{' and '}}}}', "
                'for example a JSON example as {{"kind": "KEEP"}}'
            ) from exc
        parts: list[tuple[str, str | None]] = []
        for literal, name, spec, conversion in parsed:
            if name is None:
                parts.append((literal, None))
                continue
            field = "{" + name + ("!" + conversion if conversion else "")
            field += (":" + spec if spec else "") + "}"
            if name == "" or name.isdigit():
                raise PromptError(
                    f"{what} has a positional placeholder {field}; name it, e.g. {{query}}"
                )
            if not name.isidentifier():
                raise PromptError(
                    f"{what} placeholder {field} uses attribute or index access, which is not "
                    "allowed; pass the value itself in context and use a plain {name}"
                )
            if conversion or spec:
                raise PromptError(
                    f"{what} placeholder {field} has a conversion or format spec, which is not "
                    f"supported; format the value before passing it and write {{{name}}}"
                )
            parts.append((literal, name))
        fields = frozenset(name for _, name in parts if name is not None)
        return cls(source, tuple(parts), fields)

    def render_item(
        self, query: str, context: Mapping[str, object] | None, *, what: str = "prompt_template"
    ) -> str:
        """:meth:`render` with ``{query}`` set to ``query`` and other fields from ``context``.

        Raises:
            PromptError: a field has no value, or ``context`` holds a ``query`` different
                from the ``query`` argument (0.1 let it silently replace the item).
        """
        values: dict[str, object] = dict(context) if context else {}
        if "query" in values and values["query"] != query:
            raise PromptError(
                f"{what}: context['query'] would replace the query argument; pass the item "
                "as the query argument only"
            )
        values["query"] = query
        return self.render(values, what=what)

    def render(self, values: Mapping[str, object], *, what: str = "prompt_template") -> str:
        """Fill every field with ``str(values[name])``.

        Raises:
            PromptError: a field has no value; the message lists the keys that were given.
        """
        missing = [name for name in sorted(self.fields) if name not in values]
        if missing:
            needed = ", ".join("{" + m + "}" for m in missing)
            raise PromptError(
                f"{what} needs {needed}, which the call did not provide; pass "
                f"context={{{missing[0]!r}: ...}}. Provided keys: {sorted(values)}"
            )
        out: list[str] = []
        for literal, name in self.parts:
            out.append(literal)
            if name is not None:
                out.append(str(values[name]))
        return "".join(out)
