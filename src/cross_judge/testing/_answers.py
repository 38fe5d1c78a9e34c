"""How a persona answers a request on a running server: the item or pair it is about,
its truth and difficulty, the ``Persona.fault_rate`` fault injected instead, the resample
draw, and the 200 body in the request's protocol.

It reads and counts through a :class:`~._state.VendorState` (item counts, fault attempts,
resample draws). It does no HTTP I/O and no waiting: the chat and batch endpoints
(:mod:`._chat_endpoints`, :mod:`._batch_endpoints`) call it and send the result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Mapping
from typing import Any, NamedTuple

from ._content import content_truth
from ._decisions import (
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
    seeded_difficulty,
)
from ._editor import EDIT_LABEL, edit_instruction
from ._features import (
    answer_shape,
    invalid_feature_request,
    output_cap,
    reasoning_of,
    reasoning_tokens,
    refused_feature,
)
from ._images import SeenImage, Wire, image_refusal
from ._logprobs import label_distribution, served_confidence, token_logprobs
from ._personas import Persona
from ._policy import sway
from ._protocol import (
    Api,
    Refusal,
    all_text,
    anthropic_message,
    chat_completion,
    last_user_text,
    message_text,
    persona_refusal,
    request_refusal,
    unknown_model,
)
from ._rubrics import (
    CriterionAnswer,
    RubricAsk,
    criteria_object,
    criterion_digest,
    criterion_key,
    criterion_persona,
    decide_criterion,
    latent_truth,
    render_criteria,
    rubric_ask,
)
from ._state import VendorState
from ._strengths import latent_pair_truth
from ._structured import closest_label, label_property, structured_answer

__all__ = [
    "Draw",
    "batch_answer",
    "feature_refusal",
    "persona_body",
    "persona_draw",
    "vision_refusal",
]

_MAX_TOP_LOGPROBS = 20  # OpenAI's limit on top_logprobs


class Draw(NamedTuple):
    """A persona's answer to one request: the decision, the vocabulary it was drawn from,
    the text style, the fault injected instead of it (``None``: none), the persona, the
    item's truth (``None``: a pair judged without one, or a ``one_call`` rubric request)
    and the digest its draws were seeded with.

    A ``per_criterion`` rubric request's draw is an ordinary one: the criterion's
    decision, the rubric's scale as ``labels``, the persona as it answers that criterion
    (:func:`~._rubrics.criterion_persona`). A ``one_call`` request's has ``criteria``,
    one answer per criterion asked; its ``decision`` is the first's (its delay is the
    request's)."""

    decision: Decision
    labels: tuple[str, ...]
    style: str
    fault: str | None
    persona: Persona
    truth: str | None
    seed_digest: str
    criteria: tuple[CriterionAnswer, ...] = ()


def feature_refusal(state: VendorState, body: dict[str, Any], api: Api) -> Refusal | None:
    """The error a request (a JSON object with a model) gets for a feature the server
    refuses (``VendorServer(refuses=...)``, counted in its stats) or asks for wrongly
    (:func:`~._features.invalid_feature_request`), else ``None``."""
    refused = refused_feature(body, api, state.refuses)
    if refused is not None:
        name, refusal = refused
        with state.lock:
            state.refusals[name] += 1
        return refusal
    return invalid_feature_request(body, api)


def persona_draw(
    state: VendorState,
    persona: Persona,
    model: str,
    body: Mapping[str, Any],
    *,
    faults: bool,
    images: tuple[SeenImage, ...] = (),
) -> Draw:
    """What ``persona`` answers a request ``body`` (already validated: ``messages`` is
    a list) with. ``faults=False`` (batch requests) neither injects ``fault_rate``
    faults nor advances the fault attempt counters. ``images``: the request's image
    parts (:func:`~._images.request_images`), read by a persona with ``vision="sees"``
    (its draws of such a request are seeded with their digests too).

    A whole-item verdict's truth is the one its content rules read in the last user
    message (:func:`~._content.content_truth`), else the gold label, else latent; its
    decision is then swayed by the persona's ``policy`` and ``anchoring`` when it has
    them (:func:`~._policy.sway`: the truth stays the item's). Pairs judged by content
    and rubric requests are not swayed. An item showing a judge's mistakes (``<case>``
    blocks) is a prompt-edit request: the reasoning is the simulated editor's instruction
    (:func:`~._editor.edit_instruction`)."""
    messages = body["messages"]
    temperature = body.get("temperature", 1.0)
    user_text = last_user_text(messages)
    pair = pair_texts(user_text)
    pair_truth: str | None = None
    strengths: tuple[float, float] | None = None
    if pair is not None:
        with state.lock:
            pair_truth = state.pair_truth_locked(pair)
        if pair_truth is None:
            strengths = state.pair_strengths(pair)
    # A pair judged by content: its better answer is known, or both candidates' strengths.
    judged_pair = pair_truth is not None or strengths is not None
    if pair is not None and judged_pair:
        item, digest = pair.query, pair_digest(pair)
    else:
        item = extract_item(user_text)
        digest = hashlib.sha256(item.encode()).hexdigest()
    ask = rubric_ask(user_text, state.criteria) if not judged_pair and state.criteria else None
    content: str | None = None
    if not judged_pair:
        if ask is None and _reads_content(persona):
            content = content_truth(persona, user_text, images)[0]
        if persona.vision == "sees" and images:
            # One question about many images is many items.
            shown = [item, *(image.sha256 for image in images)]
            digest = hashlib.sha256(json.dumps(shown).encode()).hexdigest()
    if ask is not None:
        # Faults and resample draws count per request: per criterion, or per set asked.
        digest = (
            criterion_digest(item, ask.ids[0])
            if ask.mode == "per_criterion"
            else hashlib.sha256(json.dumps([item, *ask.ids]).encode()).hexdigest()
        )
    rho = state.error_correlation
    truth: str | None = None
    difficulty = 0.5
    criteria_truth: dict[str, str] | None = None
    with state.lock:
        if state.item_counts is not None:
            state.item_counts[item] += 1
        if ask is not None:
            criteria_truth = state.criteria_gold_locked(item, user_text)
        elif not judged_pair:
            truth = content if content is not None else state.gold_locked(item, user_text)
            # Unused without correlation: skip the lookup and the hash.
            difficulty = state.difficulty_locked(item, user_text) if rho else 0.5
        fault = _fault_locked(state, persona, model, digest) if faults else None
        draw = 0
        if persona.resample and fault is None and samples(temperature):
            draw = state.draws.get((model, digest), 0)
            state.draws[(model, digest)] = draw + 1
    # Draw 0 is seeded as without resample, so its answers stay byte-identical.
    seed_digest = digest if draw == 0 else f"{digest}|draw{draw}"
    if ask is not None:
        if persona.policy is not None or persona.anchoring:
            # Not swayed, and its policy need not answer the rubric's scale.
            persona = dataclasses.replace(persona, policy=None, anchoring=0.0)
        return _rubric_draw(
            state, persona, model, item, ask, criteria_truth or {}, fault, draw, seed_digest
        )
    if pair is not None and judged_pair:
        labels: tuple[str, ...] = PAIR_LABELS
        if pair_truth is None:
            assert strengths is not None  # a judged pair has a known truth or strengths
            # Drawn per (persona, pair, order, resample draw); identical texts always tie.
            pair_truth = (
                "TIE"
                if pair.response_a == pair.response_b
                else latent_pair_truth(persona, model, seed_digest, *strengths, state.tie_parameter)
            )
        truth = pair_truth
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
        instruction = edit_instruction(item) if "<case>" in item else None
        if instruction is not None:  # an edit request: the editor's label and instruction
            decision = decision._replace(kind=EDIT_LABEL, reasoning=instruction)
        elif persona.policy is not None or persona.anchoring:
            swayed = sway(persona, model, seed_digest, item, decision.kind, body, user_text)
            if swayed is not None:
                decision = decision._replace(
                    kind=swayed.kind, confidence=swayed.confidence, reasoning=swayed.reasoning
                )
    return Draw(decision, labels, persona.style, fault, persona, truth, seed_digest)


def _reads_content(persona: Persona) -> bool:
    """Whether ``persona`` has a content rule to read a prompt with (the plain path reads
    nothing more than before)."""
    return bool(
        persona.forbidden_tools
        or persona.fail_unhandled_errors
        or persona.needs_context
        or persona.vision == "sees"
    )


def _fault_locked(state: VendorState, persona: Persona, model: str, digest: str) -> str | None:
    """The ``fault_rate`` fault of this attempt at ``(model, digest)``, counted; caller
    holds the lock."""
    if persona.fault_rate <= 0:
        return None
    attempt = state.attempts.get((model, digest), 0)
    state.attempts[(model, digest)] = attempt + 1
    frng = random.Random(f"fault|{persona.seed}|{model}|{digest}|{attempt}")
    if frng.random() >= persona.fault_rate:
        return None
    fault = frng.choice(("429", "500", "503", "malformed"))
    state.faults += 1
    state.fault_kinds[fault] += 1
    return fault


def _rubric_draw(
    state: VendorState,
    persona: Persona,
    model: str,
    item: str,
    ask: RubricAsk,
    truths: dict[str, str],
    fault: str | None,
    draw: int,
    request_digest: str,
) -> Draw:
    """The draw of a rubric request: per criterion asked, a decision seeded by the (item,
    criterion) digest (plus the resample draw), its truth from ``truths`` else latent, and
    with ``error_correlation`` its own difficulty and distractor."""
    labels = state.criteria_labels
    rho = state.error_correlation
    answers: list[CriterionAnswer] = []
    for cid in ask.ids:
        digest = criterion_digest(item, cid)
        truth = truths.get(cid) or latent_truth(digest, labels)
        key = criterion_key(item, cid)
        decision = decide_criterion(
            persona,
            model,
            cid,
            truth,
            digest if draw == 0 else f"{digest}|draw{draw}",
            labels,
            difficulty=seeded_difficulty(key, state.difficulty_seed) if rho else 0.5,
            error_correlation=rho,
            distractor_key=distractor_key(key, state.difficulty_seed) if rho else 0,
        )
        answers.append(CriterionAnswer(cid, decision, truth))
    first = answers[0]
    if ask.mode == "per_criterion":
        return Draw(
            first.decision,
            labels,
            persona.style,
            fault,
            criterion_persona(persona, first.criterion_id, labels),
            first.truth,
            request_digest,
        )
    return Draw(
        first.decision, labels, persona.style, fault, persona, None, request_digest, tuple(answers)
    )


def persona_body(
    state: VendorState, model: str, draw: Draw, body: Mapping[str, Any], api: Api
) -> dict[str, Any]:
    """The 200 body answering ``body`` with ``draw`` (a drawn fault aside), in the
    protocol ``api``.

    The answer: the persona's style, or strict JSON when the request enforces a schema
    or forces a tool (:func:`~._features.answer_shape`, :func:`~._structured.
    structured_answer`); reasoning first when asked (:func:`~._features.reasoning_of`,
    ``Persona.thinking_tokens``); cut at the output cap (:func:`~._features.output_cap`)
    when reasoning plus answer (4 characters a token) exceed it: finish reason
    ``length`` / stop reason ``max_tokens``, the reasoning cut to the cap when it
    exceeds it (then no answer: empty content, no text or tool block), else the answer
    cut to the tokens left (a forced tool's input then ``{}``), usage output tokens the
    cap; a reply without reasoning is never cut. Token probabilities for a chat request
    with ``logprobs: true`` (:func:`~._logprobs.token_logprobs`).

    A ``one_call`` rubric draw answers ``{"criteria": {...}}``
    (:func:`~._rubrics.criteria_object` shaped by the enforced schema or the forced tool's,
    else :func:`~._rubrics.render_criteria` in the persona's style); its token
    probabilities are 1 for every token (no single label to weigh).
    """
    decision = draw.decision
    confidence = round(decision.confidence, 2)
    shape = answer_shape(body, api)
    chosen, vocabulary = decision.kind, draw.labels
    truth = draw.truth
    answer: dict[str, Any] | None = None
    label_key = "kind"
    if draw.criteria:
        answer = criteria_object(draw.criteria, None if shape.form == "text" else shape.schema)
        text = (
            render_criteria(draw.style, draw.criteria, draw.labels)
            if shape.form == "text"
            else json.dumps(answer)
        )
    elif shape.form == "text":
        text = render(draw.style, decision.kind, confidence, decision.reasoning, draw.labels)
    else:
        schema = shape.schema or {}
        answer, label_key = structured_answer(schema, decision.kind, confidence, decision.reasoning)
        chosen = str(answer[label_key])
        enum = label_property(schema)[1]
        if enum is not None:
            vocabulary = enum
            truth = None if truth is None else closest_label(truth, enum)
        text = json.dumps(answer)
    thinking = reasoning_tokens(draw.persona.thinking_tokens, reasoning_of(body, api))
    cap = output_cap(body, api)
    # Only a reasoning reply is cut: plain answers keep their old behaviour (a small
    # max_tokens in a test of costs must not start truncating them).
    truncated = thinking > 0 and cap is not None and cap < thinking + len(text) // 4
    if cap is not None and truncated:
        thinking = min(thinking, cap)
        text = text[: (cap - thinking) * 4]
    thinking_text = _thinking_text(decision.reasoning, thinking) if thinking else None
    if api == "messages":
        prompt = message_text(body.get("system")) + all_text(body["messages"])
        tool_use = None
        if shape.form == "tool" and (text or not truncated):
            tool_use = {
                "type": "tool_use",
                "id": f"toolu_sim{next(state.ids):016d}",
                "name": shape.tool,
                "input": {} if truncated else answer,
            }
        stop_reason = "max_tokens" if truncated else "tool_use" if tool_use else "end_turn"
        message = anthropic_message(
            state.ids,
            model,
            None if tool_use is not None or (truncated and not text) else text,
            stop_reason,
            prompt=prompt,
            thinking=thinking_text,
            tool_use=tool_use,
        )
        if truncated and cap is not None:
            message["usage"]["output_tokens"] = cap
        elif tool_use is not None:
            message["usage"]["output_tokens"] = thinking + len(json.dumps(answer)) // 4
        return message
    reply: dict[str, Any] = {"role": "assistant", "content": text}
    if thinking_text is not None:
        reply["reasoning_content"] = thinking_text
    logprobs = None
    if body.get("logprobs") is True and draw.criteria:
        # One label per criterion: no single label token to give a distribution.
        logprobs = token_logprobs(text, None, (), _top_k(body))
    elif body.get("logprobs") is True:
        logprobs = _token_logprobs(draw, model, body, text, label_key, chosen, vocabulary, truth)
    completion = chat_completion(
        state.ids,
        model,
        reply,
        "length" if truncated else "stop",
        body["messages"],
        logprobs=logprobs,
    )
    if thinking:
        usage = completion["usage"]
        usage["completion_tokens"] += thinking
        usage["total_tokens"] += thinking
        usage["completion_tokens_details"] = {"reasoning_tokens": thinking}
    return completion


def _thinking_text(reasoning: str, tokens: int) -> str:
    """Reasoning text of ``tokens`` tokens at 4 characters a token."""
    step = f"Weighing the item against the criteria. {reasoning} "
    chars = 4 * tokens
    return (step * (chars // len(step) + 1))[:chars]


def _top_k(body: Mapping[str, Any]) -> int:
    """The request's ``top_logprobs``, within OpenAI's limit (0 when absent)."""
    top = body.get("top_logprobs")
    return min(max(top, 0), _MAX_TOP_LOGPROBS) if isinstance(top, int) else 0


def _token_logprobs(
    draw: Draw,
    model: str,
    body: Mapping[str, Any],
    text: str,
    label_key: str,
    chosen: str,
    vocabulary: tuple[str, ...],
    truth: str | None,
) -> dict[str, Any]:
    top_k = _top_k(body)
    right = draw.decision.kind == draw.truth
    probability = served_confidence(draw.persona, model, draw.seed_digest, right)
    distribution = label_distribution(
        chosen, probability, vocabulary, truth=truth, order_seed=f"{model}|{draw.seed_digest}"
    )
    value = json.dumps(chosen)
    pair = f"{json.dumps(label_key)}: {value}"
    at = text.rfind(pair)
    span = None
    if at != -1:
        start = at + len(pair) - len(value) + 1  # past the opening quote
        span = (start, start + len(value) - 2)
    return token_logprobs(text, span, distribution, top_k)


def vision_refusal(
    state: VendorState, persona: Persona, images: tuple[SeenImage, ...], wire: Wire
) -> Refusal | None:
    """The 400 of a text-only persona (``vision="refuses"``) for a request holding an
    image part (:func:`~._images.image_refusal`, counted in ``images_refused``), else
    ``None``."""
    if persona.vision != "refuses" or not images:
        return None
    with state.lock:
        state.images_refused += 1
    return image_refusal(images[0], wire)


def batch_answer(
    state: VendorState,
    body: Any,
    api: Api,
    version: str | None,
    *,
    images: tuple[SeenImage, ...] = (),
    wire: Wire | None = None,
) -> tuple[int, Any]:
    """The status and JSON body the live endpoint would answer ``body`` with, as a
    vendor runs a batch: no scripted reply, no fault, no latency. ``images`` are the
    request's image parts, read from its body as sent in the protocol ``wire`` (``None``:
    ``api``'s)."""
    refusal = request_refusal(body, api, version) or feature_refusal(state, body, api)
    if refusal is None:
        model = str(body["model"])
        with state.lock:
            persona = state.persona_locked(model)
        if persona is None:
            refusal = unknown_model(model, api)
        elif (refusal := vision_refusal(state, persona, images, wire or api)) is None and (
            refusal := persona_refusal(body, api)
        ) is None:
            draw = persona_draw(state, persona, model, body, faults=False, images=images)
            return 200, persona_body(state, model, draw, body, api)
    return refusal.status, json.loads(refusal.body(api))
