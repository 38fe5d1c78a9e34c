"""The item: the one value a judgement travels as, from the caller to the vendor.

:class:`Item` is what :meth:`Critic.judge <cross_judge.critic._critic.Critic.judge>`,
:meth:`Ensemble.judge <cross_judge.ensemble.Ensemble.judge>`, a cascade's tiers, the batch
runner and the results file carry: the text to judge, the values for the prompt's other
fields, the caller's metadata and an id. A string is still accepted wherever an item is
and becomes ``Item(query=...)`` (:meth:`Item.of`); a critic's request is built from the
item (:meth:`Critic.build_request <cross_judge.critic._critic.Critic.build_request>`, done by
:class:`~cross_judge.critic._request.RequestBuilder`) as messages with content parts,
which the wire protocol's adapter sends in its own form.

Base layer: the critic and everything above take it; it takes nothing from them. Its public
path is :class:`cross_judge.batch.Item` (and :class:`cross_judge.Item`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .content import Image, Step, Turn, final_text, images_of, steps_of, turns_of
from .errors import ItemError
from .verdict import default_query_id

__all__ = ["Item"]

_T = TypeVar("_T")


class Item(BaseModel):
    """One item to judge.

    ``Item(query="...")`` is enough: the other fields have defaults. Built with keywords
    the fields are validated as pydantic does (types); :meth:`from_value` checks more (an
    empty query, text no vendor can be sent) and is what a batch reads its items with.

    Attributes:
        id: unique within a batch; the ``query_id`` of its result. Default: the query
            itself up to 80 characters, else its start and a hash
            (:func:`cross_judge.verdict.default_query_id`).
        query: the text the critics judge. Optional when the item has ``messages`` or a
            ``trajectory``: it is then the final answer (or the last assistant turn).
        context: values for the critics' other template fields.
        meta: copied to the result's ``meta``.
        messages: a conversation (:class:`~cross_judge.content.Turn` objects, or
            ``{"role", "content"}`` mappings), rendered for a prompt's ``{conversation}``.
        trajectory: an agent's steps (tool calls, messages, a final answer), rendered for
            a prompt's ``{trajectory}``.
        reference: the reference answer, for a prompt's ``{reference}``.
        counter_reference: a known wrong answer, for a prompt's ``{counter_reference}``
            and its self-check (``cross-judge prompts check``).
        images: images shown to the judge after the prompt's text
            (:class:`~cross_judge.content.Image`, or paths, URLs and mappings).

    An item with structure (messages, a trajectory, images or a reference) and no id gets
    one from a digest of all of it, so that two conversations ending in the same words
    never share an id.
    """

    # defer_build: validators are built on first use, not at import (cold start).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    query: str
    context: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    messages: tuple[Turn, ...] = ()
    trajectory: tuple[Step, ...] = ()
    reference: str | None = None
    counter_reference: str | None = None
    images: tuple[Image, ...] = ()
    _renderings: dict[Any, Any] = PrivateAttr(default_factory=dict)

    def __hash__(self) -> int:
        """By id and query (equal items have both equal), so an item may key a mapping or
        sit in a set, though its context and meta are dicts."""
        return hash((self.id, self.query))

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """Plain turns, steps and images read (:func:`~cross_judge.content.turns_of`, ...);
        a structured item without a query gets its final answer as one; an item without
        an id gets its default id."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for name, read in (("messages", turns_of), ("trajectory", steps_of), ("images", images_of)):
            value = data.get(name)
            if _absent(value):
                data.pop(name, None)
            elif not _all_read(value, name):
                data[name] = read(value)
        if data.get("query") is None and (data.get("messages") or data.get("trajectory")):
            data["query"] = final_text(data.get("messages", ()), data.get("trajectory", ())) or ""
        if data.get("id") is None:
            query = data.get("query")
            if isinstance(query, str):
                data["id"] = _structured_id(data) or default_query_id(query)
        return data

    @property
    def structured(self) -> bool:
        """The item has messages, a trajectory, images or a reference."""
        return bool(
            self.messages
            or self.trajectory
            or self.images
            or self.reference is not None
            or self.counter_reference is not None
        )

    def all_images(self) -> tuple[Image, ...]:
        """Every image of the item: its own, then those of its turns, in order."""
        inner = tuple(image for turn in self.messages for image in turn.images)
        return self.images + inner if inner else self.images

    def rendering(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, computed once per item and ``key`` (a field and its limits): a
        panel's critics share one prompt's rendering of a long trajectory."""
        cache = self._renderings
        if key not in cache:
            cache[key] = build()
        found: _T = cache[key]
        return found

    @classmethod
    def of(
        cls,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Item:
        """The item a judging call was given: ``query`` itself when it is an
        :class:`Item`, else one made of the call's keywords (``query_id`` default
        :func:`~cross_judge.verdict.default_query_id`, ``context`` and ``meta`` default
        empty), taken as given, with no check beyond the caller's own (the critics'
        templates check the text when they render it), so ``judge("...", context=...)``
        behaves exactly as before items existed.

        Raises:
            TypeError: ``query`` is an :class:`Item` and ``query_id``, ``context`` or
                ``meta`` is given too: they are the item's own fields, so the call would
                have two of each; set them on the item (``item.model_copy(update=...)``).
        """
        if isinstance(query, Item):
            given = [
                name
                for name, value in (("query_id", query_id), ("context", context), ("meta", meta))
                if value is not None
            ]
            if given:
                raise TypeError(
                    f"judge() was given an Item and {', '.join(given)}=: an item carries its "
                    "own id, context and meta; set them on the item "
                    "(item.model_copy(update={...})), or pass the query as a string"
                )
            return query
        return cls.model_construct(
            id=query_id or default_query_id(query),
            query=query,
            context=dict(context) if context else {},
            meta=dict(meta) if meta else {},
        )

    @classmethod
    def from_value(
        cls, value: object, *, position: int | None = None, base_dir: Path | None = None
    ) -> Item:
        """An :class:`Item` from a string (the query), a mapping or an :class:`Item`.

        A mapping needs ``query`` (a non-empty string), or ``messages`` or a
        ``trajectory`` (the judged content: the query is then its final answer unless
        given); ``reference`` and ``counter_reference`` must be text; ``images`` are
        paths (relative to ``base_dir``, an items file's folder), URLs or mappings
        (:func:`~cross_judge.content.images_of`). ``id`` may be a string or an
        integer (stored as text); ``context`` and ``meta`` must be mappings. A pair's
        candidates may be given as ``a`` and ``b`` (strings, both), short for
        ``context={"response_a": a, "response_b": b}``. Any other key is kept in ``meta``
        (``{"query": ..., "gold": "KEEP"}`` keeps ``gold``), unless ``meta`` already has
        it.

        Raises:
            ItemError: the value is none of those, or a field is missing or of the wrong
                type; the message names the field (and ``position`` when given).
        """
        if isinstance(value, Item):
            return value
        if isinstance(value, str):
            return cls._build({"query": value}, position, base_dir)
        if isinstance(value, Mapping):
            return cls._build(value, position, base_dir)
        raise ItemError(
            f"expected a string, a mapping with 'query' or an Item, got {type(value).__name__}",
            position=position,
        )

    @classmethod
    def _build(cls, data: Mapping[Any, Any], position: int | None, base_dir: Path | None) -> Item:
        structure = _structure(data, position, base_dir)
        query = data.get("query")
        if query is None and (structure.get("messages") or structure.get("trajectory")):
            query = final_text(structure.get("messages", ()), structure.get("trajectory", ()))
            if query is None or not query.strip():
                query = ""
        elif not isinstance(query, str):
            got = "nothing" if query is None else type(query).__name__
            raise ItemError(
                f"'query' must be the text to judge, got {got} (or give 'messages' or a "
                "'trajectory' to judge)",
                position=position,
            )
        elif not query.strip():
            raise ItemError("'query' is empty", position=position)
        _check_sendable("query", query, position)
        raw_id = data.get("id")
        if raw_id is None:
            item_id = _structured_id({"query": query, **structure}) or default_query_id(query)
        elif isinstance(raw_id, str) and raw_id.strip():
            item_id = raw_id
        elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
            item_id = str(raw_id)
        else:
            raise ItemError(
                f"'id' must be a non-empty string or an integer, got {raw_id!r}", position=position
            )
        fields: dict[str, dict[str, Any]] = {}
        for name in ("context", "meta"):
            given = data.get(name)
            if given is not None and not isinstance(given, Mapping):
                raise ItemError(
                    f"{name!r} must be a mapping, got {type(given).__name__}", position=position
                )
            fields[name] = {str(k): v for k, v in (given or {}).items()}
        if "a" in data or "b" in data:
            fields["context"].update(_candidates(data, fields["context"], position))
        _check_sendable("context", fields["context"], position)
        for key, extra in data.items():
            if key not in _ITEM_KEYS:
                fields["meta"].setdefault(str(key), extra)
        return cls(
            id=item_id, query=query, context=fields["context"], meta=fields["meta"], **structure
        )

    # -- items of other tools' formats (the readers of cross_judge.content) --

    @classmethod
    def from_openai_chat(
        cls, messages: object, *, tools: object = None, form: str = "conversation", **fields: Any
    ) -> Item:
        """An item of OpenAI chat-completions ``messages``
        (:func:`~cross_judge.content.read_openai_chat`), judged as a conversation or, with
        ``form="trajectory"``, as agent steps. ``fields`` are the item's other fields
        (``id``, ``reference``, ``meta``, ...); a ``context`` is merged over the one the
        transcript gives (``task``, ``tools``).

        Raises:
            ItemError: the messages cannot be read, or a field is wrong
                (:meth:`from_value`).
        """
        from .content import read_openai_chat

        return cls.from_transcript(read_openai_chat(messages, tools=tools), form=form, **fields)

    @classmethod
    def from_anthropic_messages(
        cls,
        messages: object,
        *,
        system: object = None,
        tools: object = None,
        form: str = "conversation",
        **fields: Any,
    ) -> Item:
        """An item of Anthropic Messages ``messages`` and ``system``
        (:func:`~cross_judge.content.read_anthropic_messages`), as
        :meth:`from_openai_chat` makes one."""
        from .content import read_anthropic_messages

        transcript = read_anthropic_messages(messages, system=system, tools=tools)
        return cls.from_transcript(transcript, form=form, **fields)

    @classmethod
    def from_transcript(cls, transcript: Any, *, form: str = "conversation", **fields: Any) -> Item:
        """An item of a :class:`~cross_judge.content.Transcript` (what every reader gives,
        :func:`~cross_judge.content.read_otlp_json` too): its
        :meth:`~cross_judge.content.Transcript.item_fields` and ``fields``, read by
        :meth:`from_value` (``context`` merged over the transcript's)."""
        data = dict(transcript.item_fields(form))
        given = fields.pop("context", None)
        context = {**data.pop("context", {}), **dict(given or {})}
        if context:
            data["context"] = context
        data.update(fields)
        return cls.from_value(data)


_ITEM_KEYS = frozenset(
    {
        "id",
        "query",
        "context",
        "meta",
        "a",
        "b",
        "messages",
        "trajectory",
        "reference",
        "counter_reference",
        "images",
    }
)


def _all_read(value: object, name: str) -> bool:
    """``value`` is already a tuple of the field's models (nothing to read)."""
    if not isinstance(value, tuple):
        return False
    kind = {"messages": Turn, "images": Image}.get(name)
    if kind is None:  # steps: any of the three step models
        return all(isinstance(v, BaseModel) and hasattr(v, "kind") for v in value)
    return all(isinstance(v, kind) for v in value)


def _absent(value: object) -> bool:
    """A structured field left out: ``None`` or an empty list or tuple (an item's own
    ``model_dump()`` holds ``messages=()``, and must read back)."""
    return value is None or (isinstance(value, (list, tuple)) and not value)


def _structure(
    data: Mapping[Any, Any], position: int | None, base_dir: Path | None
) -> dict[str, Any]:
    """The structured fields of an item mapping, read and checked.

    Raises:
        ItemError: a field of the wrong shape; the message names it and the fix.
    """
    found: dict[str, Any] = {}
    if not _absent(data.get("messages")):
        found["messages"] = turns_of(data["messages"], position=position, base_dir=base_dir)
    if not _absent(data.get("trajectory")):
        found["trajectory"] = steps_of(data["trajectory"], position=position)
    if not _absent(data.get("images")):
        found["images"] = images_of(data["images"], position=position, base_dir=base_dir)
    for name in ("reference", "counter_reference"):
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            got = repr(value) if isinstance(value, str) else type(value).__name__
            raise ItemError(
                f"{name!r} must be the {name.replace('_', ' ')} answer as text, got {got}; "
                "leave it out when there is none",
                position=position,
            )
        _check_sendable(name, value, position)
        found[name] = value
    for name in ("messages", "trajectory"):
        if name in found:
            _check_sendable(name, [m.model_dump() for m in found[name]], position)
    return found


def _structured_id(data: Mapping[str, Any]) -> str | None:
    """The default id of a structured item: ``item-`` and 16 hex digits of the digest of
    its query, turns, steps, references and images' digests; ``None`` for a plain one."""
    parts: dict[str, Any] = {}
    for name in ("messages", "trajectory"):
        if data.get(name):
            parts[name] = [m.model_dump(mode="json", exclude={"images"}) for m in data[name]]
            if name == "messages":
                parts["turn_images"] = [[i.sha256 for i in t.images] for t in data[name]]
    for name in ("reference", "counter_reference"):
        if data.get(name) is not None:
            parts[name] = data[name]
    if data.get("images"):
        parts["images"] = [image.sha256 for image in data["images"]]
    if not parts:
        return None
    parts["query"] = data.get("query")
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return "item-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _candidates(
    data: Mapping[Any, Any], context: Mapping[str, Any], position: int | None
) -> dict[str, str]:
    """A pair's candidates given as ``a`` and ``b``, as context fields.

    Raises:
        ItemError: only one of them, one that is not a string, or the candidates given
            in ``context`` as well.
    """
    given = {name: data.get(name) for name in ("a", "b")}
    for name, value in given.items():
        if not isinstance(value, str):
            got = "nothing" if value is None else type(value).__name__
            raise ItemError(
                f"a pair needs both candidates as text in 'a' and 'b'; {name!r} is {got}",
                position=position,
            )
    if "response_a" in context or "response_b" in context:
        raise ItemError(
            "the candidates are given twice, as 'a'/'b' and in context "
            "(response_a/response_b): keep one",
            position=position,
        )
    return {"response_a": str(given["a"]), "response_b": str(given["b"])}


def _check_sendable(name: str, value: object, position: int | None) -> None:
    """Raise :class:`ItemError` if text in ``value`` holds a lone surrogate.

    JSON can hold one (``"\\udc80"``) and ``json.loads`` keeps it, but it is not Unicode
    text: no vendor request can carry it (UTF-8 cannot encode it). Ids and ``meta`` may
    hold one (they are stored losslessly, see :func:`dump_result`); what is sent may not.
    """
    found = _lone_surrogate(value)
    if found is not None:
        where, index, char = found
        raise ItemError(
            f"{name!r}{where} holds a lone surrogate ({char!r} at character {index}): not "
            "Unicode text (UTF-8 cannot encode it), so no vendor can be sent it; fix the "
            "item's text",
            position=position,
        )


def _lone_surrogate(value: object) -> tuple[str, int, str] | None:
    """``(path, index, character)`` of the first lone surrogate in the strings of
    ``value`` (nested mappings and sequences included), else ``None``."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        path, current = stack.pop()
        if isinstance(current, str):
            if current.isascii():
                continue
            try:
                current.encode("utf-8")
            except UnicodeEncodeError as exc:
                return path, exc.start, current[exc.start]
        elif isinstance(current, Mapping):
            stack.extend((f"{path}[{k!r}]", v) for k, v in reversed(list(current.items())))
        elif isinstance(current, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(current))))
    return None


Item.__module__ = "cross_judge.batch"  # its public path (and the one pickles record)
