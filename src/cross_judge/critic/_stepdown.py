"""What ``structured="auto"`` and ``confidence="auto"`` learned about each endpoint: the
strongest answer shape it takes, and whether it refuses token probabilities.

A request in the strongest form an endpoint might take (a schema) is refused by some
servers: llama-cpp-python's with a 500 validation error (``Input should be 'text' or
'json_object'``), others with a 400 or 422 naming ``response_format``. Such a refusal
(:func:`refused`) steps the form down, schema -> json -> off, for that endpoint and model,
for the rest of the process: the call is sent again at once in the weaker form and the item
is never failed for it. Each step is logged once, at WARNING, and kept for the run manifest
(:func:`steps_taken`). A refusal naming ``logprobs`` drops the token probabilities the same
way. Thread-safe; nothing here sends a request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from ..transport import CallFailure, ChatRequest, StructuredForm, endpoint_identity

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = [
    "Step",
    "endpoint_key",
    "forget_steps",
    "learned_form",
    "logprobs_refused",
    "refused",
    "step_down",
    "steps_taken",
]

logger = logging.getLogger("cross_judge")

_ORDER: tuple[StructuredForm, ...] = ("tool", "schema", "json", "off")
# What a refusal of each form names; matched case-insensitively in the vendor's message.
_NAMES: dict[str, tuple[str, ...]] = {
    "schema": ("response_format", "json_schema", "schema", "output_config", "output_format"),
    "tool": ("tool_choice", "tools", "tool"),
    "json": ("response_format", "json_object", "json mode"),
    "logprobs": ("logprobs", "top_logprobs"),
}
_REFUSING_STATUSES = frozenset({400, 422, 500})


@dataclass(frozen=True)
class Step:
    """One step down: on ``vendor``'s ``endpoint`` (as the cache tells endpoints apart),
    ``model`` was asked ``asked`` and refused it (``reason``: the vendor's message, cut);
    ``now`` is what it is sent instead (``"no logprobs"`` for token probabilities)."""

    vendor: str
    endpoint: str
    model: str
    asked: str
    now: str
    reason: str


_lock = threading.Lock()
_forms: dict[tuple[str, str, str], StructuredForm] = {}
_no_logprobs: set[tuple[str, str, str]] = set()
_steps: list[Step] = []


def endpoint_key(config: VendorConfig, model: str) -> tuple[str, str, str]:
    """``(vendor, endpoint, model)``: what a step down is learned for (the endpoint as the
    response cache tells endpoints apart), as :class:`Step` records it."""
    return (config.name, endpoint_identity(config.protocol, config.base_url), model)


def learned_form(config: VendorConfig, model: str, start: StructuredForm) -> StructuredForm:
    """``start``, or the weaker form this endpoint and model were stepped down to."""
    found = _forms.get(endpoint_key(config, model))
    if found is None or _ORDER.index(found) <= _ORDER.index(start):
        return start
    return found


def logprobs_refused(config: VendorConfig, model: str) -> bool:
    """Whether this endpoint and model refused a request for token probabilities."""
    return endpoint_key(config, model) in _no_logprobs


def refused(failure: CallFailure, what: str) -> bool:
    """Whether ``failure`` is the vendor refusing ``what`` (a form, or ``"logprobs"``): a
    400, 422 or 500 whose message names it. A refusal that names nothing of it (a wrong
    model, a bad key) is not."""
    if failure.status not in _REFUSING_STATUSES:
        return False
    message = failure.message.lower()
    return any(name in message for name in _NAMES.get(what, ()))


def step_down(
    config: VendorConfig,
    request: ChatRequest,
    failure: CallFailure,
    *,
    json_ok: bool,
    allowed: Callable[[ChatRequest], bool] = lambda weaker: True,
) -> ChatRequest | None:
    """The request to send instead of ``request`` after ``failure``, or ``None`` when the
    failure is not a refusal of what it asked, or ``allowed`` refuses the weaker request
    (the failure then stands as the call's).

    Token probabilities are dropped first when the refusal names them; otherwise the form
    steps down: tool or schema -> json (when ``json_ok``: the vendor may take JSON mode
    and the prompt mentions JSON) -> off. A step taken is remembered for the endpoint and
    model and logged once.
    """
    where = endpoint_key(config, request.model)
    if request.logprobs is not None and refused(failure, "logprobs"):
        weaker = replace(request, logprobs=None)
        if not allowed(weaker):
            return None
        _remember(where, request.structured, "no logprobs", failure, logprobs=True)
        return weaker
    form = request.structured
    if form == "off" or not refused(failure, form):
        return None
    now: StructuredForm = "json" if form in ("schema", "tool") and json_ok else "off"
    weaker = replace(request, structured=now, json_mode=now == "json")
    if not allowed(weaker):
        return None
    _remember(where, form, now, failure, logprobs=False)
    return weaker


def _remember(
    where: tuple[str, str, str],
    asked: str,
    now: StructuredForm | Literal["no logprobs"],
    failure: CallFailure,
    *,
    logprobs: bool,
) -> None:
    asked = "logprobs" if logprobs else asked
    step = Step(where[0], where[1], where[2], asked, now, failure.message[:300])
    with _lock:
        if logprobs:
            if where in _no_logprobs:
                return
            _no_logprobs.add(where)
        elif now != "no logprobs":
            known = _forms.get(where)
            if known is not None and _ORDER.index(known) >= _ORDER.index(now):
                return
            _forms[where] = now
        _steps.append(step)
    logger.warning(
        "vendor %r, model %r refused %s (%s); sending %s from now on in this process",
        step.vendor,
        step.model,
        "token probabilities" if logprobs else f"structured={asked!r}",
        step.reason,
        "no logprobs" if logprobs else f"structured={now!r}",
    )


def steps_taken() -> list[Step]:
    """Every step down taken in this process, oldest first."""
    with _lock:
        return list(_steps)


def forget_steps() -> None:
    """Forget what was learned (tests; a server that was upgraded)."""
    with _lock:
        _forms.clear()
        _no_logprobs.clear()
        _steps.clear()
