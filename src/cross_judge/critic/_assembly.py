"""Turning what a vendor sent into a critic's :class:`~cross_judge.verdict.Verdict`.

:class:`VerdictAssembler` is the collaborator of :class:`~cross_judge.critic._critic.Critic`
that makes its verdicts, from the critic's frozen configuration
(:class:`~cross_judge.critic._config.CriticConfig`) alone. It parses a completion (labels,
confidence, score, refusals, empty or cut-off answers, a ``one_call`` rubric's criteria),
applies the confidence calibration, prices the call, stamps the critic's provenance, and
makes the verdicts of calls that failed, were over budget, never ran, or were answered
through a vendor's batch API (:meth:`~VerdictAssembler.from_batch`). :func:`combine_samples`
votes a critic's self-consistency samples into one verdict and :func:`redacted_verdict`
removes secrets a vendor echoed. Nothing here sends a request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..budget import Budget
from ..errors import ErrorKind, MissingAPIKeyError
from ..pricing import Price
from ..rubric.models import Rubric
from ..transport import CallFailure, ChatRequest, Completion, Redactor, redactor_for, secrets_of
from ..vendors import resolve_api_key
from ..verdict import Answer, ConfidenceSource, Usage, Verdict, call_totals
from ._config import CriticConfig
from ._journal import KeptAnswer
from ._logprobs import LabelProbabilities, label_probabilities
from ._parsing import parse_answer
from ._rubric import criteria_verdict, parse_criteria

logger = logging.getLogger("cross_judge")

_WARNED_NO_LOGPROBS: set[tuple[str, str]] = set()

__all__ = ["VerdictAssembler", "combine_samples", "redacted_verdict"]


class VerdictAssembler:
    """Makes one critic's verdicts from its configuration."""

    __slots__ = ("settings",)

    def __init__(self, settings: CriticConfig) -> None:
        self.settings = settings

    def from_batch(
        self,
        outcome: Completion | CallFailure,
        *,
        price: Price | None,
        structured: str | None = None,
    ) -> Verdict:
        """The verdict of a request answered through a vendor's batch API: a completion
        parsed as a live answer is and priced at ``price``'s batch rate, a failure an
        ``ERROR`` of its kind; redacted; one attempt, ``elapsed_s`` 0.

        Raises:
            ConfigError: a completion reports usage, and the price has no batch rate.
        """
        config = self.settings.endpoint
        try:
            api_key: str | None = resolve_api_key(config, self.settings.api_key)
        except MissingAPIKeyError:
            api_key = None
        hide = redactor_for(*secrets_of(config.base_url, api_key))
        started = time.perf_counter()
        if isinstance(outcome, CallFailure):
            verdict = self.failed(outcome.kind, str(outcome), started, attempts=1, price=price)
            if structured is not None and self.settings.structured is not None:
                verdict = verdict.model_copy(update={"structured": structured})
        else:
            verdict = self.from_completion(
                outcome, 1, started, price=price, batch=True, structured=structured
            )
        return redacted_verdict(verdict, hide).model_copy(update={"elapsed_s": 0.0})

    def from_completion(
        self,
        completion: Completion,
        attempts: int,
        started: float,
        *,
        price: Price | None,
        cached: bool = False,
        batch: bool = False,
        structured: str | None = None,
    ) -> Verdict:
        """The verdict for a completed call (or a cache hit: no usage, cost 0; or a batch
        request: the batch rate). ``structured`` is the answer shape the call asked for,
        recorded when the critic sets ``structured=``.

        An answer cut off by the token limit before it held a verdict (empty, or text
        that does not parse) is ``ERROR`` with ``error_kind="truncated"``; one that parses
        although it was cut off stands. A tool call other than the forced one (Anthropic's
        ``tool_use`` naming another tool, or any tool when none was forced) is ``ERROR``
        with ``error_kind="invalid_response"`` naming both: its input is not a verdict.
        With ``confidence="logprob"``/``"auto"`` and token probabilities in the
        completion, ``confidence`` is the chosen label's probability renormalised over the
        labels (:mod:`._logprobs`) and a prompt with a ``score`` map gets the expected score.
        """
        settings = self.settings
        common = self.common(started, attempts)
        if structured is not None and settings.structured is not None:
            common["structured"] = structured
        if cached:
            common.update(cached=True, cost_usd=0.0)
            completion = replace(completion, usage=None)
        elif price is not None and completion.usage is not None:
            common["cost_usd"] = price.cost(completion.usage, batch=batch)
        if completion.refusal:
            return Verdict(
                kind="ERROR",
                reasoning=completion.refusal[:1000],
                error=f"refusal: {completion.refusal[:300]}",
                error_kind=ErrorKind.REFUSAL,
                confidence_source="none",
                usage=completion.usage,
                **common,
            )
        forced = settings.schema_name if structured == "tool" else None
        stray = _stray_tool(completion.tools, forced) if completion.tools else None
        if stray is not None:
            return Verdict(
                kind="ERROR",
                reasoning=stray,
                raw_response=completion.text,
                error=stray,
                error_kind=ErrorKind.INVALID_RESPONSE,
                confidence_source="none",
                usage=completion.usage,
                **common,
            )
        text = (completion.text or "").strip()
        if not text and completion.truncated:
            return self._truncated(completion, common, None)
        if not text:
            filtered = completion.finish_reason == "content_filter"
            return Verdict(
                kind="ERROR",
                reasoning="empty response from LLM",
                error="refusal: content filter" if filtered else "empty_response",
                error_kind=ErrorKind.REFUSAL if filtered else ErrorKind.EMPTY,
                confidence_source="none",
                usage=completion.usage,
                **common,
            )
        rubric = settings.rubric
        if rubric is not None and rubric.mode == "one_call":
            return self._one_call_verdict(completion, text, common, rubric)
        parsed = parse_answer(
            text,
            labels=settings.labels,
            label_keys=settings.label_keys,
            reasoning_keys=settings.reasoning_keys,
            examples=settings.examples,
            answer_regex=settings.answer_regex,
        )
        if not parsed.ok:
            if completion.truncated:
                return self._truncated(completion, common, text)
            error = parsed.error or "parse_fail"
            return Verdict(
                kind="PARSE_FAIL",
                reasoning=parsed.reasoning,
                raw_response=text,
                error=error,
                error_kind=ErrorKind.PARSE,
                confidence_source="none",
                usage=completion.usage,
                **common,
            )
        score = parsed.score
        scores = settings.scores
        if score is None and scores:
            score = scores.get(parsed.kind)
        confidence, stated, given = parsed.confidence, None, parsed.confidence_given
        source: ConfidenceSource = "stated" if given else "none"
        measured = self._label_probabilities(completion, text, parsed.kind)
        bounded = False
        if measured is not None:
            confidence, given, source = measured.confidence, True, "logprob"
            bounded = measured.bounded
            if parsed.confidence_given:
                stated = parsed.confidence
            if scores:
                expected = measured.expected_score(scores)
                score = expected if expected is not None else score
        elif settings.confidence == "logprob":
            self._warn_no_logprobs(completion)
            confidence, given, source = 0.0, False, "none"
        # Applied here, on every parse of an answer (a cache hit is re-parsed), never
        # stored: the cache keeps the raw text, so a changed calibration cannot go stale.
        calibration = settings.calibration
        if calibration is not None and given:
            if stated is None:
                stated = confidence
            confidence = calibration.apply(confidence)
        verdict = Verdict(
            kind=parsed.kind,
            written_label=parsed.written_label,
            confidence=confidence,
            stated_confidence=stated,
            confidence_stated=given,
            confidence_source=source,
            confidence_bounded=bounded,
            reasoning=parsed.reasoning,
            score=score,
            raw_response=text,
            usage=completion.usage,
            **common,
        )
        verdict.keep_logprobs(completion.logprobs if measured is not None else None)
        return verdict

    def _one_call_verdict(
        self, completion: Completion, text: str, common: dict[str, Any], rubric: Rubric
    ) -> Verdict:
        """The verdict of a ``one_call`` rubric answer: its criteria
        (:func:`~cross_judge.critic._rubric.parse_criteria`, each stated confidence mapped by
        the ``calibration``), ``PASS``/``FAIL`` by their total
        (:func:`~cross_judge.critic._rubric.criteria_verdict`); ``PARSE_FAIL`` (or ``ERROR``
        truncated, when cut off) when no criterion could be read."""
        settings = self.settings
        criteria = parse_criteria(
            text,
            rubric,
            label_keys=settings.label_keys,
            reasoning_keys=settings.reasoning_keys,
            examples=settings.examples,
        )
        if isinstance(criteria, str):
            if completion.truncated:
                return self._truncated(completion, common, text)
            return Verdict(
                kind="PARSE_FAIL",
                reasoning=text[:300],
                raw_response=text,
                error=criteria,
                error_kind=ErrorKind.PARSE,
                confidence_source="none",
                usage=completion.usage,
                **common,
            )
        calibration = settings.calibration
        if calibration is not None:  # as for any answer: applied on every parse
            criteria = {
                cid: a.model_copy(update={"confidence": calibration.apply(a.confidence)})
                if a.is_valid and a.confidence_stated
                else a
                for cid, a in criteria.items()
            }
        return criteria_verdict(
            rubric, criteria, raw_response=text, usage=completion.usage, **common
        )

    def _label_probabilities(
        self, completion: Completion, text: str, label: str
    ) -> LabelProbabilities | None:
        """The label distribution the completion's token probabilities give, when the
        critic reads its confidence from them and they locate the label; else ``None``."""
        settings = self.settings
        if settings.confidence == "stated" or not completion.logprobs or settings.labels is None:
            return None
        return label_probabilities(
            completion.text or "",
            completion.logprobs,
            chosen=label,
            labels=settings.labels,
            label_keys=settings.label_keys,
        )

    def _warn_no_logprobs(self, completion: Completion) -> None:
        """Log once per critic and model that ``confidence="logprob"`` got none to read:
        the reply had no token probabilities, had some that could not be used (the field
        and why: :attr:`Completion.logprobs_problem`), or had some that did not locate
        the label."""
        seen = (self.settings.name, self.settings.model)
        if seen in _WARNED_NO_LOGPROBS:
            return
        _WARNED_NO_LOGPROBS.add(seen)
        if completion.logprobs:
            why = "the token probabilities did not locate the label"
        elif completion.logprobs_problem:
            why = (
                f"the reply's token probabilities could not be used ({completion.logprobs_problem})"
            )
        else:
            why = "the reply had no token probabilities"
        logger.warning(
            "critic %s (model %r): confidence='logprob', but %s; such verdicts have "
            "confidence_source='none' (confidence='auto' would use the stated one)",
            seen[0],
            seen[1],
            why,
        )

    def truncation_message(
        self, max_tokens: int, usage: Usage | None, *, retried_from: int | None = None
    ) -> str:
        """Why an answer cut off at ``max_tokens`` (``usage`` its call's) is no verdict;
        ``retried_from`` is the cap of the first call when this was the retry at twice it
        (``retry_truncated``), which the message then says."""
        room = f"max_tokens={max_tokens}"
        budget = self.settings.thinking_budget
        if budget is not None:
            room += f" after thinking_budget={budget}"
        thought = usage.reasoning_tokens if usage is not None else 0
        spent = f", {thought} of them spent reasoning" if thought else ""
        retry = (
            f", on the retry at twice the first call's max_tokens={retried_from}"
            if retried_from is not None
            else ""
        )
        return (
            f"truncated: the answer was cut off at the token limit ({room}{spent}) before "
            f"it held a verdict{retry}; raise max_tokens"
        )

    def _truncated(
        self, completion: Completion, common: dict[str, Any], text: str | None
    ) -> Verdict:
        """The verdict of an answer cut off by the token limit before it held a verdict."""
        message = self.truncation_message(self.settings.max_tokens, completion.usage)
        return Verdict(
            kind="ERROR",
            reasoning=message,
            raw_response=text,
            error=message,
            error_kind=ErrorKind.TRUNCATED,
            confidence_source="none",
            usage=completion.usage,
            **common,
        )

    def unfinished(
        self,
        kind: str,
        message: str,
        error_kind: ErrorKind,
        *,
        price: Price | None,
        elapsed_s: float = 0.0,
        sent: bool = True,
    ) -> Verdict:
        """A verdict for a call that did not complete or was never made, with the critic's
        provenance: $0 when never ``sent`` and ``price`` is known, else no known cost."""
        common = self.common(time.perf_counter() - elapsed_s, attempts=0)
        if not sent and price is not None:
            common["cost_usd"] = 0.0
        return Verdict(
            kind=kind,
            reasoning=message,
            error=message,
            error_kind=error_kind,
            confidence_source="none",
            **common,
        )

    def failed(
        self,
        kind: ErrorKind,
        message: str,
        started: float,
        *,
        attempts: int,
        price: Price | None,
    ) -> Verdict:
        """An ``ERROR`` verdict. A failed call reports no usage, so it costs $0 when the
        price is known (a vendor may still bill a request that timed out)."""
        return Verdict(
            kind="ERROR",
            reasoning=message,
            error=message,
            error_kind=kind,
            confidence_source="none",
            cost_usd=None if price is None else 0.0,
            **self.common(started, attempts),
        )

    def over_budget(self, budget: Budget, needed: float, started: float) -> Verdict:
        """The ``SKIPPED`` verdict of a call that needed ``needed`` USD more than ``budget``
        had left: nothing was sent, it costs $0."""
        message = (
            f"budget: this call could cost up to ${needed:.6f} (prompt and max_tokens="
            f"{self.settings.max_tokens} at worst), more than the "
            f"${max(budget.remaining_usd, 0.0):.6f} left of budget_usd={budget.limit_usd:g}; "
            "not sent"
        )
        return Verdict(
            kind="SKIPPED",
            reasoning=message,
            error=message,
            error_kind=ErrorKind.BUDGET,
            confidence_source="none",
            cost_usd=0.0,  # nothing was sent
            **self.common(started, 0),
        )

    def stored_completion(self, verdict: Verdict) -> Completion:
        """What the response cache keeps of a valid verdict: the text (re-parsed on a hit),
        the usage, the model and, when its confidence came from them, the token
        probabilities (so a hit gives the same confidence)."""
        return Completion(
            text=verdict.raw_response,
            usage=verdict.usage,
            model=self.settings.model,
            logprobs=verdict.kept_logprobs(),
        )

    def from_kept(self, kept: KeptAnswer, started: float, request: ChatRequest) -> Verdict:
        """The verdict of an answer kept by the run's journal (:mod:`._journal`): re-parsed
        as a cache hit is, ``cached=True`` with no request made, and with the usage and
        cost the vendor billed for it when it was asked, which no other result holds."""
        verdict = self.from_completion(
            kept.completion, 0, started, price=None, structured=request.structured
        )
        return verdict.model_copy(
            update={
                "cached": True,
                "cost_usd": kept.cost_usd,
                "cost_estimates": kept.cost_estimates,
            }
        )

    def common(self, started: float, attempts: int) -> dict[str, Any]:
        """The fields every verdict of the critic carries: its provenance, the time since
        ``started`` and the ``attempts`` made."""
        settings = self.settings
        return {
            "critic_id": settings.name,
            "elapsed_s": round(time.perf_counter() - started, 3),
            "model": settings.model,
            "vendor": settings.endpoint.name,
            "prompt_id": settings.prompt_id,
            "prompt_version": settings.prompt_version,
            "prompt_sha256": settings.prompt_sha256,
            "attempts": attempts,
        }


def _stray_tool(called: Sequence[str], forced: str | None) -> str | None:
    """The error of an answer that called a tool other than ``forced`` (``None``: none
    was forced), naming both; ``None`` when every tool called is the forced one."""
    stray = next((name for name in called if name != forced), None)
    if stray is None:
        return None
    got = f"the tool {stray[:80]!r}" if stray else "a tool with no name"
    if forced is None:
        return f"invalid_response: the model called {got}, and no tool was offered"
    return (
        f"invalid_response: the model called {got}, not the forced tool {forced!r}; "
        "its input is not taken as the verdict"
    )


def combine_samples(samples: Sequence[Verdict]) -> Verdict:
    """One critic's verdict from its ``samples`` of one item, in sample order (a pure
    function: it makes no call).

    - The label (``kind``) is the most common among the valid samples. A tie goes to the
      label whose samples have the highest mean confidence, then to the label of the
      earliest sample.
    - ``confidence`` is the mean confidence of the samples giving that label, over those
      that stated one (``confidence_stated`` is False, and ``confidence`` 0.0, when none
      did); ``stated_confidence`` and ``score`` are the means of theirs when any has one.
      ``reasoning`` is the first such sample's.
    - ``self_agreement`` is the share of valid samples giving that label (1.0: the critic
      always said the same).
    - Fewer valid samples than given: the valid ones vote. None valid: the first sample's
      failure (its kind, error and error kind), ``self_agreement`` ``None``.

    Always: ``answers`` holds every sample as an :class:`~cross_judge.verdict.Answer` in
    sample order (``order`` ``None``: a pair's samples are tagged with the order shown
    by :func:`~cross_judge.pairwise.in_own_names`); ``raw_response`` is ``None`` (the raw
    answers are in ``answers``); usage, cost and attempts are summed (cost ``None`` if
    any sample's is unknown), ``elapsed_s`` is the longest sample, ``cached`` is true only
    when every sample was. A single sample is returned unchanged.

    Raises:
        ValueError: ``samples`` is empty.
    """
    if not samples:
        raise ValueError("combine_samples needs at least one verdict")
    if len(samples) == 1:
        return samples[0]
    common: dict[str, Any] = {
        **call_totals(samples),
        "answers": [Answer.of(v) for v in samples],
    }
    valid = [v for v in samples if v.error is None]
    if not valid:
        return samples[0].model_copy(update={**common, "self_agreement": None})
    by_label: dict[str, list[Verdict]] = {}
    for v in valid:  # insertion order: the label of the earliest sample first
        by_label.setdefault(v.kind, []).append(v)

    def rank(label: str) -> tuple[int, float]:
        group = by_label[label]
        return len(group), _mean([v.confidence for v in group if v.confidence_stated]) or 0.0

    label = max(by_label, key=rank)  # max keeps the first of equals
    agreeing = by_label[label]
    confidence = _mean([v.confidence for v in agreeing if v.confidence_stated])
    stated = [v.stated_confidence for v in agreeing if v.stated_confidence is not None]
    scores = [v.score for v in agreeing if v.score is not None]
    return agreeing[0].model_copy(
        update={
            **common,
            "confidence": 0.0 if confidence is None else confidence,
            "confidence_stated": confidence is not None,
            "stated_confidence": _mean(stated),
            "score": _mean(scores),
            "self_agreement": len(agreeing) / len(valid),
        }
    )


def _mean(values: Sequence[float]) -> float | None:
    """The mean of ``values``; ``None`` for none (never a made-up 0)."""
    return sum(values) / len(values) if values else None


def redacted_verdict(verdict: Verdict, hide: Redactor) -> Verdict:
    """``verdict`` with the secrets ``hide`` knows removed from every text a vendor could
    have put a secret in: the error, the reasoning, the raw answer and the label."""
    if not hide:
        return verdict
    changes: dict[str, str] = {}
    for name, clean in (
        ("error", hide.error),
        ("reasoning", hide),
        ("raw_response", hide),
        ("kind", hide.label),
    ):
        value = getattr(verdict, name)
        if value:
            cleaned = clean(value)
            if cleaned != value:
                changes[name] = cleaned
    if not changes:
        return verdict
    cleaned_verdict = verdict.model_copy(update=changes)
    if "raw_response" in changes:  # the tokens hold what was removed: not kept for the cache
        cleaned_verdict.keep_logprobs(None)
    return cleaned_verdict
