"""A critic's call path: from a built request to a verdict, through the response cache,
the budget, the vendor's gate and retries, or a provider batch job.

:class:`CallPath` is one of the parts :class:`~cross_judge.critic.critic.Critic` is made
of: its methods are the critic's (``await critic.judge(query)``). In order, one call looks
up the answers journal of a resumed run (:mod:`.journal`) and the response cache, resolves
the API key, reserves its worst case from the budget
(waiting, if it must, for the calls in flight to settle: :meth:`Budget.reserve_or_wait
<cross_judge.budget.Budget.reserve_or_wait>`), and sends the request under the retry policy
and the vendor's limits, or hands it to the batch-mode job in force (:mod:`.parking`);
``samples > 1`` makes that many such calls at once and votes them. An answer whose usage is
missing or implausible is priced at the call's worst case (:func:`charge_unreported_usage`).
It does not build the request (:mod:`.request`) nor read the answer (:mod:`.assembly`), and
it never raises for anything the vendor does.

This is the benchmarked hot path: each step is a method call, nothing more.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import anyio

from .. import _otel, _sync
from ..budget import Budget
from ..errors import ConfigError, ErrorKind, MissingAPIKeyError
from ..limits import VendorGate
from ..pricing import Price, estimate_prompt_tokens, usage_is_plausible, worst_case_cost
from ..rubric.models import Rubric
from ..stats import ConfidenceCalibration
from ..transport import (
    CallFailure,
    ChatRequest,
    Completion,
    Gate,
    HTTPSession,
    Redactor,
    call_with_retries,
    protocol_adapter,
    redacted_exception,
    redactor_for,
    secrets_of,
)
from ..vendors import VendorConfig, resolve_api_key
from ..verdict import Usage, Verdict, call_totals
from .assembly import combine_samples, redacted_verdict
from .journal import KeptAnswer, active_journal
from .parking import ParkingJob, active_job
from .request import sample_request
from .stepdown import step_down
from .warmup import warm_up

if TYPE_CHECKING:
    from .._item import Item
    from .cache import ResponseCache
    from .critic import Critic

__all__ = ["CallPath", "charge_unreported_usage"]

logger = logging.getLogger("cross_judge")


class CallPath:
    """The calling methods of :class:`~cross_judge.critic.critic.Critic`."""

    if TYPE_CHECKING:  # what these methods use of the critic (defined in .critic and beside)
        name: str
        api_key: str | None
        timeout: float
        max_retries: int
        deadline: float | None
        samples: int
        calibration: ConfidenceCalibration | Mapping[str, Any] | None
        _injected: HTTPSession | None
        _cache: ResponseCache | None

        def endpoint(self) -> VendorConfig: ...
        def price(self) -> Price | None: ...
        def no_price_message(self, config: VendorConfig) -> str: ...
        def _calibration_in_use(self) -> ConfidenceCalibration | None: ...
        def _check_samples(self) -> None: ...
        def build_request(
            self, item: str | Item, context: Mapping[str, Any] | None = None
        ) -> ChatRequest: ...
        def _verdict_from(
            self,
            completion: Completion,
            attempts: int,
            started: float,
            *,
            price: Price | None,
            cached: bool = False,
            batch: bool = False,
            structured: str | None = None,
        ) -> Verdict: ...
        def json_allowed(self, config: VendorConfig) -> bool: ...
        @property
        def rubric(self) -> Rubric | None: ...
        async def judge_rubric(
            self,
            query: str | Item,
            context: Mapping[str, Any] | None = None,
            *,
            criteria: Sequence[str] | None = None,
            budget: Budget | float | None = None,
            cache: ResponseCache | None = None,
        ) -> Verdict: ...

        structured: str | None
        confidence: str
        retry_truncated: bool

        def _failed(
            self,
            kind: ErrorKind,
            message: str,
            started: float,
            *,
            attempts: int,
            price: Price | None,
        ) -> Verdict: ...
        def _over_budget(self, budget: Budget, needed: float, started: float) -> Verdict: ...
        def _stored_completion(self, verdict: Verdict) -> Completion: ...
        def truncation_message(
            self, max_tokens: int, usage: Usage | None, *, retried_from: int | None = None
        ) -> str: ...

    async def judge(
        self,
        query: str | Item,
        context: Mapping[str, Any] | None = None,
        *,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """Judge ``query`` and return a :class:`Verdict`; vendor failures never raise.

        Args:
            query: the item to judge: its text, inserted literally into the template, or
                an :class:`~cross_judge.batch.Item` (its ``query`` and ``context``; its id
                and meta are a panel's business, not a critic's).
            context: values for the template's other fields (with a string query only: an
                item carries its own).
            budget: a spending cap in USD (or a :class:`~cross_judge.budget.Budget` shared
                with other calls). The call's worst case is reserved before it is sent,
                after waiting for calls in flight to settle if only they hold the room it
                needs; if it cannot fit, nothing is sent and the verdict is ``SKIPPED``
                with ``error_kind="budget"``. A call whose vendor reports no usable usage
                is charged its worst case (the verdict's ``cost_estimates`` is 1).
            cache: a response cache for this call, instead of the critic's own ``cache``.

        Every attempt first waits its turn under the vendor's limits (``max_concurrency``,
        ``rpm`` and the pause after a 429, see :func:`~cross_judge.vendors.set_vendor_limits`),
        shared with every critic on the vendor; that wait counts against ``deadline``, not
        against the per-attempt ``timeout``.

        With ``samples=n > 1`` the item is asked ``n`` times at once, and the verdict is
        their vote (:func:`combine_samples`); each sample reserves its own worst case from
        ``budget``, so a budget that fits fewer than ``n`` calls votes the samples it
        could pay for.

        Returns:
            A valid verdict, or ``kind="ERROR"`` (call failed: timeout, 429/5xx after
            retries, 4xx, auth, missing key, invalid body, empty or refused answer),
            ``kind="PARSE_FAIL"`` (text without a usable verdict) or ``kind="SKIPPED"``
            (over budget), each with ``error`` and ``error_kind`` set and ``attempts``
            counting the requests made. ``usage`` and ``cost_usd`` are the call's
            (``cost_usd`` is ``None`` when the model's price is unknown; 0 for a cache hit).

        Raises:
            PromptError: the template needs a context key that was not given; raised
                before any request, so nothing is billed.
            ConfigError: a budget is given but the model has no known price (register one
                with :func:`cross_judge.register_price`); raised before any request.
            TypeError: an :class:`~cross_judge.batch.Item` and a ``context`` both given.
        """
        if self.rubric is not None:
            return await self.judge_rubric(query, context, budget=budget, cache=cache)
        return await self.judge_request(
            self.build_request(query, context), budget=budget, cache=cache
        )

    async def judge_request(
        self,
        request: ChatRequest,
        *,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """:meth:`judge` for a request already built with :meth:`build_request` (an
        :class:`~cross_judge.ensemble.Ensemble` builds every critic's request before it
        calls any, so a template mistake costs nothing). With ``samples > 1``, the
        samples' requests (:func:`sample_request`) are made concurrently, each as one call,
        and voted by :func:`combine_samples`."""
        await warm_up()  # the first call's one-off set-up, off the event loop
        config = self.endpoint()
        if self.calibration is not None:
            self._calibration_in_use()  # one assigned after construction: fail before sending
        price = self.price()
        spending = Budget.of(budget)  # once: a number is one cap for every sample
        if spending is not None and price is None:
            raise ConfigError(self.no_price_message(config))
        store = cache if cache is not None else self._cache
        if self.samples == 1:
            return await self._judge_once(config, request, price, spending, store)
        self._check_samples()  # samples or temperature reassigned since construction
        results: list[Verdict | None] = [None] * self.samples

        async def one(k: int) -> None:
            sample = sample_request(request, k)
            results[k] = await self._judge_once(config, sample, price, spending, store)

        async with anyio.create_task_group() as group:
            for k in range(1, self.samples):
                group.start_soon(one, k)
            await one(0)  # this task makes one of the calls itself
        return combine_samples([v for v in results if v is not None])

    async def _judge_once(
        self,
        config: VendorConfig,
        request: ChatRequest,
        price: Price | None,
        spending: Budget | None,
        store: ResponseCache | None,
    ) -> Verdict:
        """One call for ``request``: the cache, the key, the budget, the vendor (or, in
        batch mode, the vendor's batch API through the job in force: :mod:`.parking`). With
        OpenTelemetry installed, in a ``chat {model}`` span (:mod:`cross_judge._otel`)."""
        job = active_job()
        if _otel.available:  # without OpenTelemetry, this branch is the whole cost
            with _otel.chat_span(cast("Critic", self), config, request) as span:
                with nullcontext() if job is None else job.running():
                    verdict = await self._judge_one(config, request, price, spending, store, job)
                return span.ended(verdict)
        if job is None:
            return await self._judge_one(config, request, price, spending, store, None)
        with job.running():
            return await self._judge_one(config, request, price, spending, store, job)

    async def _judge_one(
        self,
        config: VendorConfig,
        request: ChatRequest,
        price: Price | None,
        spending: Budget | None,
        store: ResponseCache | None,
        job: ParkingJob | None,
    ) -> Verdict:
        """One call, and (``retry_truncated``) one more with twice the token cap when the
        answer was cut off before it held a verdict: the verdict of the second, with the
        usage, cost, attempts and time of both (cut off again, its error names the doubled
        cap and says it was the retry)."""
        verdict = await self._judge_call(config, request, price, spending, store, job)
        if verdict.error_kind is not ErrorKind.TRUNCATED or not self.retry_truncated:
            return verdict
        larger = replace(request, max_tokens=request.max_tokens * 2)
        logger.debug(
            "critic %s: the answer was cut off at max_tokens=%d; asking once more with %d",
            self.name,
            request.max_tokens,
            larger.max_tokens,
        )
        second = await self._judge_call(config, larger, price, spending, store, job)
        totals = call_totals([verdict, second])
        if second.error_kind is ErrorKind.TRUNCATED:
            # Cut off again: the message names the doubled cap, not the critic's own.
            message = self.truncation_message(
                larger.max_tokens, second.usage, retried_from=request.max_tokens
            )
            totals.update(error=message, reasoning=message)
        totals["elapsed_s"] = round(verdict.elapsed_s + second.elapsed_s, 3)  # one after the other
        totals["raw_response"] = second.raw_response
        totals["cached"] = second.cached
        return second.model_copy(update=totals)

    async def _judge_call(
        self,
        config: VendorConfig,
        request: ChatRequest,
        price: Price | None,
        spending: Budget | None,
        store: ResponseCache | None,
        job: ParkingJob | None,
    ) -> Verdict:
        started = time.perf_counter()
        journal = active_journal()
        key = request.cache_key(config) if store is not None or journal is not None else ""
        if journal is not None:
            kept = journal.take(key, self.name)
            if kept is not None:
                replayed = self._kept_verdict(kept, started, request)
                if replayed.is_valid:  # as for the cache below
                    return replayed
        if store is not None:
            stored = await store.get(key)
            if stored is not None:
                hit = self._verdict_from(
                    stored, 0, started, price=None, cached=True, structured=request.structured
                )
                # Only valid answers are stored, but the key does not cover the labels: an
                # answer this critic's vocabulary rejects is a miss, and the vendor is asked.
                if hit.is_valid:
                    return hit
        try:
            api_key = resolve_api_key(config, self.api_key)
        except MissingAPIKeyError as exc:
            return self._failed(ErrorKind.MISSING_KEY, str(exc), started, attempts=0, price=price)
        reserved = 0.0
        if spending is not None:
            assert price is not None
            batched = job is not None and job.options.takes(config)
            reserved = worst_case_cost(price, request, batch=batched)
            # In batch mode a call waiting for room counts as waiting, so a round holding
            # the reservations it waits on is submitted.
            waiting = None if job is None else job.waiting
            if not await spending.reserve_or_wait(reserved, while_waiting=waiting):
                return self._over_budget(spending, reserved, started)
        spent: float | None = None
        hide = redactor_for(*secrets_of(config.base_url, api_key))
        try:
            # Redacted here, before the verdict is cached, returned, logged or written:
            # a vendor may echo the key (or the base URL's password) in any text it sends.
            if job is None:
                answer = await self._call(config, request, api_key, price, started, hide)
            else:
                answer = await job.ask(
                    cast("Critic", self),  # this is a Critic's method
                    config,
                    request,
                    api_key,
                    lambda: self._call(config, request, api_key, price, started, hide),
                )
            verdict = redacted_verdict(answer, hide)
            spent = verdict.cost_usd or 0.0
            if verdict.is_valid and verdict.raw_response is not None:
                if journal is not None:  # first: a kill during the cache's write loses nothing
                    journal.record(key, self._stored_completion(verdict), verdict)
                if store is not None:
                    await store.put(key, self._stored_completion(verdict))
            return verdict
        finally:
            if spending is not None:
                if spent is None:  # cancelled in flight: the vendor may bill the prompt
                    assert price is not None
                    prompt = Usage(prompt_tokens=estimate_prompt_tokens(request))
                    spent = price.cost(prompt)
                spending.settle(reserved, spent)

    def _kept_verdict(self, kept: KeptAnswer, started: float, request: ChatRequest) -> Verdict:
        """The verdict of an answer kept by the run's journal (:mod:`.journal`): re-parsed
        as a cache hit is, ``cached=True`` with no request made, and with the usage and
        cost the vendor billed for it when it was asked, which no other result holds."""
        verdict = self._verdict_from(
            kept.completion, 0, started, price=None, structured=request.structured
        )
        return verdict.model_copy(
            update={
                "cached": True,
                "cost_usd": kept.cost_usd,
                "cost_estimates": kept.cost_estimates,
            }
        )

    async def _call(
        self,
        config: VendorConfig,
        request: ChatRequest,
        api_key: str | None,
        price: Price | None,
        started: float,
        hide: Redactor,
    ) -> Verdict:
        """Send ``request`` under the retry policy and the vendor's gate; never raises for
        a vendor failure, nor for a client library failing to set the call up (an
        ``INTERNAL`` verdict for this critic alone). ``hide`` redacts what this logs (the
        caller redacts the verdict).

        The first use of a transport in a process or event loop sets it up in worker
        threads: the Anthropic SDK's import (1-3 s), the HTTP library's import and its
        client (0.1-1 s). That is set-up, not the call, so it runs before the first
        attempt, outside the per-attempt timeout and the deadline, and ``elapsed_s``
        starts after it.
        """
        sending = False
        sent = request  # after any step down structured="auto" makes (see .stepdown)
        try:
            adapter = protocol_adapter(config.protocol)
            connection = await adapter.connect(
                config, api_key, self._injected if adapter.takes_http_client else None
            )
            started = time.perf_counter()
            self_timed = connection.self_timed

            async def send() -> Completion:
                return await connection.send(sent, self.timeout)

            learns = self.structured == "auto" or self.confidence == "auto"

            async def attempt() -> Completion:
                nonlocal sent
                while True:  # at most four rounds: logprobs, then tool/schema -> json -> off
                    try:
                        return await send()
                    except CallFailure as failure:
                        weaker = None
                        if learns:
                            # Redacted: the refusal is logged and kept for the manifest.
                            seen = CallFailure(
                                failure.kind,
                                hide.error(failure.message),
                                status=failure.status,
                                retry_after=failure.retry_after,
                            )
                            weaker = step_down(
                                config,
                                sent,
                                seen,
                                json_ok=self.json_allowed(config),
                                allowed=functools.partial(self.may_step, sent),
                            )
                        if weaker is None:
                            raise
                        sent = weaker

            sending = True
            # Limits are the vendor's, so an injected http_client passes the gate too.
            gate: Gate = VendorGate(config, request.model)
            if _otel.available:
                gate = _otel.watched_gate(gate)  # times the wait for the call's span
            completion, attempts = await call_with_retries(
                attempt,
                max_retries=self.max_retries,
                timeout=self.timeout,
                deadline=self.deadline,
                gate=gate,
                self_timed=self_timed,
            )
            if _otel.available:
                _otel.record_completion(completion)
            verdict = self._verdict_from(
                completion, attempts, started, price=price, structured=sent.structured
            )
            return charge_unreported_usage(verdict, completion, sent, price)
        except CallFailure as failure:
            message = str(failure)
            if failure.attempts > 1:
                message += f" (after {failure.attempts} attempts)"
            message = hide.error(message)
            logger.debug("critic %s: %s", self.name, message)
            verdict = self._failed(
                failure.kind, message, started, attempts=failure.attempts, price=price
            )
            if self.structured is not None:
                verdict = verdict.model_copy(update={"structured": sent.structured})
            return verdict
        except Exception as exc:
            # A bug of ours, or a client library failing in a way it does not document
            # (at set-up or during the call): one item must not take a whole panel or
            # batch down with it. Cancellation is a BaseException and still propagates.
            message = hide.error(f"internal: {type(exc).__name__}: {exc}")
            logger.warning(
                "critic %s: unexpected failure: %s",
                self.name,
                message,
                exc_info=redacted_exception(exc, hide=hide),
            )
            attempts = 1 if sending else 0  # a failed set-up sent nothing
            return self._failed(
                ErrorKind.INTERNAL, message, started, attempts=attempts, price=price
            )

    def may_step(self, before: ChatRequest, after: ChatRequest) -> bool:
        """Whether this critic lets a refused request ``before`` be sent as ``after``
        (:func:`.stepdown.step_down`): a weaker answer shape with ``structured="auto"``,
        no token probabilities with ``confidence="auto"``. A critic that asked for a form
        or for ``"logprob"`` explicitly gets the refusal as its verdict instead."""
        if after.structured != before.structured and self.structured != "auto":
            return False
        return after.logprobs == before.logprobs or self.confidence == "auto"

    def judge_sync(self, query: str | Item, context: Mapping[str, Any] | None = None) -> Verdict:
        """:meth:`judge` for synchronous code; also works inside a running event loop."""
        return _sync.run_sync(self.judge, query, context)


def charge_unreported_usage(
    verdict: Verdict,
    completion: Completion,
    request: ChatRequest,
    price: Price | None,
    *,
    batch: bool = False,
) -> Verdict:
    """``verdict``, for a call the vendor answered with ``completion``, priced at the call's
    worst case when the vendor's usage is missing or implausible
    (:func:`~cross_judge.pricing.usage_is_plausible`): ``cost_usd`` becomes
    :func:`~cross_judge.pricing.worst_case_cost` of ``request`` (at the batch rate with
    ``batch``), what a budget reserved for it, and ``cost_estimates`` 1. The usage stays as
    the vendor reported it. Unchanged when the usage is plausible or the price unknown
    (``cost_usd`` is then ``None``: never a made-up $0).
    """
    if price is None:
        return verdict
    answered = bool((completion.text or "").strip() or completion.refusal or completion.reasoning)
    if usage_is_plausible(completion.usage, answered=answered):
        return verdict
    estimate = worst_case_cost(price, request, batch=batch)
    logger.debug(
        "critic %s: no usable usage in the answer (%s); charged its worst case, $%.6f",
        verdict.critic_id,
        "none" if completion.usage is None else "implausible token counts",
        estimate,
    )
    return verdict.model_copy(update={"cost_usd": estimate, "cost_estimates": 1})
