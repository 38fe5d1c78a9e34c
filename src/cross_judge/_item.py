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

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import ItemError
from .verdict import default_query_id

__all__ = ["Item"]


class Item(BaseModel):
    """One item to judge.

    ``Item(query="...")`` is enough: the other fields have defaults. Built with keywords
    the fields are validated as pydantic does (types); :meth:`from_value` checks more (an
    empty query, text no vendor can be sent) and is what a batch reads its items with.

    Attributes:
        id: unique within a batch; the ``query_id`` of its result. Default: the query
            itself up to 80 characters, else its start and a hash
            (:func:`cross_judge.verdict.default_query_id`).
        query: the text the critics judge.
        context: values for the critics' other template fields.
        meta: copied to the result's ``meta``.
    """

    # defer_build: validators are built on first use, not at import (cold start).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    query: str
    context: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    def __hash__(self) -> int:
        """By id and query (equal items have both equal), so an item may key a mapping or
        sit in a set, though its context and meta are dicts."""
        return hash((self.id, self.query))

    @model_validator(mode="before")
    @classmethod
    def _default_id(cls, data: Any) -> Any:
        """An item given without an id gets its query's default id."""
        if isinstance(data, Mapping) and data.get("id") is None:
            query = data.get("query")
            if isinstance(query, str):
                return {**data, "id": default_query_id(query)}
        return data

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
    def from_value(cls, value: object, *, position: int | None = None) -> Item:
        """An :class:`Item` from a string (the query), a mapping or an :class:`Item`.

        A mapping needs ``query`` (a non-empty string); ``id`` may be a string or an
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
            return cls._build({"query": value}, position)
        if isinstance(value, Mapping):
            return cls._build(value, position)
        raise ItemError(
            f"expected a string, a mapping with 'query' or an Item, got {type(value).__name__}",
            position=position,
        )

    @classmethod
    def _build(cls, data: Mapping[Any, Any], position: int | None) -> Item:
        query = data.get("query")
        if not isinstance(query, str):
            got = "nothing" if query is None else type(query).__name__
            raise ItemError(f"'query' must be the text to judge, got {got}", position=position)
        if not query.strip():
            raise ItemError("'query' is empty", position=position)
        _check_sendable("query", query, position)
        raw_id = data.get("id")
        if raw_id is None:
            item_id = default_query_id(query)
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
            if key not in ("id", "query", "context", "meta", "a", "b"):
                fields["meta"].setdefault(str(key), extra)
        return cls(id=item_id, query=query, context=fields["context"], meta=fields["meta"])


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
