"""OTLP JSON built by hand, as an OTLP/HTTP JSON exporter or the collector's file exporter
writes it (ids in hex, 64-bit integers and nanosecond times as text), for the OTLP reader's
tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

TRACE = "5b8efff798038103d269b633813fc60c"


def value(v: Any) -> dict[str, Any]:
    """A Python value as an OTLP ``AnyValue``."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, Mapping):
        return {"kvlistValue": {"values": attributes(v)}}
    return {"stringValue": str(v)}


def attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in values.items()]


def span(
    name: str,
    start: int,
    attrs: Mapping[str, Any],
    *,
    trace: str = TRACE,
    error: str | None = None,
    span_id: str | None = None,
) -> dict[str, Any]:
    """One span; ``error``: an error status with that message."""
    found: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id or f"{start:016x}",
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + start + 500),
        "attributes": attributes(attrs),
        "status": {"code": 2, "message": error} if error is not None else {},
    }
    return found


def export(spans: Sequence[Mapping[str, Any]], *, scopes: int = 1) -> dict[str, Any]:
    """An export request holding ``spans`` (split over ``scopes`` scopes)."""
    per = [list(spans[i::scopes]) for i in range(scopes)]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": "agent"})},
                "scopeSpans": [
                    {"scope": {"name": "agent", "version": "1"}, "spans": chunk} for chunk in per
                ],
            }
        ]
    }


def messages(*items: Mapping[str, Any]) -> str:
    return json.dumps(list(items))


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}
