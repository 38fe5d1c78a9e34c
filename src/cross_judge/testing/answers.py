"""How a persona answers a request on a running server: the item or pair it is about,
its truth and difficulty, the ``Persona.fault_rate`` fault injected instead, the resample
draw, and the 200 body in the request's protocol.

It reads and counts through a :class:`~.state.VendorState` (item counts, fault attempts,
resample draws). It does no HTTP I/O and no waiting: the chat and batch endpoints
(:mod:`.chat_endpoints`, :mod:`.batch_endpoints`) call it and send the result.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from typing import Any, NamedTuple

from .decisions import (
    PAIR_LABELS,
    Decision,
    decide,
    decide_pair,
    distractor_key,
    extract_item,
    pair_digest,
    pair_texts,
    render,
    samples,
)
from .personas import Persona
from .protocol import (
    Api,
    all_text,
    anthropic_message,
    chat_completion,
    last_user_text,
    message_text,
    persona_refusal,
    request_refusal,
    unknown_model,
)
from .state import VendorState

__all__ = ["Draw", "batch_answer", "persona_body", "persona_draw"]


class Draw(NamedTuple):
    """A persona's answer to one request: the decision, the vocabulary it was drawn from,
    the text style, and the fault injected instead of it (``None``: none)."""

    decision: Decision
    labels: tuple[str, ...]
    style: str
    fault: str | None


def persona_draw(
    state: VendorState, persona: Persona, model: str, body: Mapping[str, Any], *, faults: bool
) -> Draw:
    """What ``persona`` answers a request ``body`` (already validated: ``messages`` is
    a list) with. ``faults=False`` (batch requests) neither injects ``fault_rate``
    faults nor advances the fault attempt counters."""
    messages = body["messages"]
    temperature = body.get("temperature", 1.0)
    user_text = last_user_text(messages)
    pair = pair_texts(user_text)
    pair_truth: str | None = None
    if pair is not None:
        with state.lock:
            pair_truth = state.pair_truth_locked(pair)
    if pair is not None and pair_truth is not None:
        item, digest = pair.query, pair_digest(pair)
    else:
        item = extract_item(user_text)
        digest = hashlib.sha256(item.encode()).hexdigest()
    rho = state.error_correlation
    truth: str | None = None
    difficulty = 0.5
    with state.lock:
        if state.item_counts is not None:
            state.item_counts[item] += 1
        if pair_truth is None:
            truth = state.gold_locked(item, user_text)
            # Unused without correlation: skip the lookup and the hash.
            difficulty = state.difficulty_locked(item, user_text) if rho else 0.5
        fault: str | None = None
        if faults and persona.fault_rate > 0:
            attempt = state.attempts.get((model, digest), 0)
            state.attempts[(model, digest)] = attempt + 1
            frng = random.Random(f"fault|{persona.seed}|{model}|{digest}|{attempt}")
            if frng.random() < persona.fault_rate:
                fault = frng.choice(("429", "500", "503", "malformed"))
                state.faults += 1
                state.fault_kinds[fault] += 1
        draw = 0
        if persona.resample and fault is None and samples(temperature):
            draw = state.draws.get((model, digest), 0)
            state.draws[(model, digest)] = draw + 1
    # Draw 0 is seeded as without resample, so its answers stay byte-identical.
    seed_digest = digest if draw == 0 else f"{digest}|draw{draw}"
    if pair_truth is not None:
        labels: tuple[str, ...] = PAIR_LABELS
        decision = decide_pair(persona, model, pair_truth, seed_digest)
    else:
        labels = persona.labels
        if truth is None:
            truth = labels[int(digest[:16], 16) % len(labels)]
        decision = decide(
            persona,
            model,
            truth,
            seed_digest,
            difficulty=difficulty,
            error_correlation=rho,
            distractor_key=distractor_key(item, state.difficulty_seed) if rho else 0,
        )
    return Draw(decision, labels, persona.style, fault)


def persona_body(
    state: VendorState, model: str, draw: Draw, body: Mapping[str, Any], api: Api
) -> dict[str, Any]:
    """The 200 body answering ``body`` with ``draw`` (a drawn fault aside), in the
    protocol ``api``."""
    decision = draw.decision
    messages = body["messages"]
    confidence = round(decision.confidence, 2)
    text = render(draw.style, decision.kind, confidence, decision.reasoning, draw.labels)
    if api == "messages":
        prompt = message_text(body.get("system")) + all_text(messages)
        return anthropic_message(state.ids, model, text, "end_turn", prompt=prompt)
    message = {"role": "assistant", "content": text}
    return chat_completion(state.ids, model, message, "stop", messages)


def batch_answer(state: VendorState, body: Any, api: Api, version: str | None) -> tuple[int, Any]:
    """The status and JSON body the live endpoint would answer ``body`` with, as a
    vendor runs a batch: no scripted reply, no fault, no latency."""
    refusal = request_refusal(body, api, version)
    if refusal is None:
        model = str(body["model"])
        with state.lock:
            persona = state.persona_locked(model)
        if persona is None:
            refusal = unknown_model(model, api)
        elif (refusal := persona_refusal(body, api)) is None:
            draw = persona_draw(state, persona, model, body, faults=False)
            return 200, persona_body(state, model, draw, body, api)
    return refusal.status, json.loads(refusal.body(api))
