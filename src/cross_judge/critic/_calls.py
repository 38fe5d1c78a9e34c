"""A critic's call path: from a built request to a verdict, through the response cache,
the budget, the vendor's gate and retries, or a provider batch job.

:class:`Caller` is the collaborator of :class:`~cross_judge.critic._critic.Critic` that makes
its calls, given explicitly what it uses: the critic's frozen configuration, its request
builder and verdict assembler, the injected HTTP session, and the critic itself, only to
hand to a batch job and a tracing span. In order, one call looks up the answers journal of
a resumed run (:mod:`._journal`) and the response cache, resolves the API key, reserves its
worst case from the budget (waiting, if it must, for the calls in flight to settle:
:meth:`Budget.reserve_or_wait <cross_judge.budget.Budget.reserve_or_wait>`), and sends the
request under the retry policy and the vendor's limits, or hands it to the batch-mode job
in force (:mod:`._parking`); ``samples > 1`` makes that many such calls at once and votes
them. An answer whose usage is missing or implausible is priced at the call's worst case
(:func:`charge_unreported_usage`). It does not build the request (:mod:`._request`) nor read
the answer (:mod:`._assembly`), and it never raises for anything the vendor does.

Two calls are not made, and the critic abstains instead (``SKIPPED``, $0, nothing
reserved, sent or cached, no vote). A request with images from a critic whose model sees
none (``error_kind="no_vision"``: ``Critic(vision=False)``, or the vendor's
:func:`~cross_judge.vendors.sees_images`), checked first: such a critic never sent one, so
neither the journal nor the cache can hold its answer. A request over the vendor's size
limits (``error_kind="too_large"``:
:func:`~cross_judge.transport.size_problem`), checked after the journal and the cache and
before the key, the budget and the batch job: an answer kept there was paid for (under a
limit since lowered) and is used, and nothing over a limit is reserved, parked in a batch
or sent.

This is the benchmarked hot path: each step is a method call, nothing more.
"""

from __future__ import annotations

import functools
import logging
import time
from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from .. import _otel
from ..budget import Budget
from ..errors import ConfigError, ErrorKind, MissingAPIKeyError
from ..limits import VendorGate
from ..pricing import Price, estimate_prompt_tokens, usage_is_plausible, worst_case_cost
from ..transport import (
    CallFailure,
    ChatRequest,
    Completion,
    Gate,
    HTTPSession,
    ImagePart,
    Redactor,
    call_with_retries,
    protocol_adapter,
    redacted_exception,
    redactor_for,
    secrets_of,
    size_problem,
)
from ..vendors import VendorConfig, resolve_api_key, sees_images
from ..verdict import Usage, Verdict, call_totals
from ._assembly import VerdictAssembler, combine_samples, redacted_verdict
from ._config import CriticConfig, check_samples
from ._journal import active_journal
from ._parking import ParkingJob, active_job
from ._request import RequestBuilder, sample_request
from ._stepdown import step_down

if TYPE_CHECKING:
    from ._cache import ResponseCache
    from ._critic import Critic

__all__ = ["Caller", "charge_unreported_usage"]

logger = logging.getLogger("cross_judge")


class Caller:
    """Makes one critic's calls: ``settings`` its configuration, ``builder`` and
    ``assembler`` its collaborators, ``session`` an injected HTTP session (``None``: the
    shared pool), ``owner`` the critic, handed as is to a batch job and a tracing span."""

    __slots__ = ("assembler", "blind", "builder", "owner", "session", "settings")

    def __init__(
        self,
        settings: CriticConfig,
        builder: RequestBuilder,
        assembler: VerdictAssembler,
        *,
        session: HTTPSession | None,
        owner: Critic,
    ) -> None:
        self.settings = settings
        self.builder = builder
        self.assembler = assembler
        self.session = session
        self.owner = owner
        # Why the model sees no images (None: it may): the critic's vision, else its vendor's.
        self.blind = _blindness(settings)

    def no_price_message(self, config: VendorConfig) -> str:
        """The error message for a budget given to the critic, on ``config``'s vendor,
        while its model has no known price: it says how to register one."""
        model = self.settings.model
        return (
            f"{self.settings.where}: a budget needs the price of model {model!r} on vendor "
            f"{config.name!r}, and none is known; add it with cross_judge.register_price("
            f"{model!r}, vendor={config.name!r}, input=..., output=...) (USD per million "
            "tokens) or load a price file with cross_judge.load_prices(path)"
        )

    async def judge_request(
        self,
        request: ChatRequest,
        *,
        price: Price | None,
        budget: Budget | float | None,
        cache: ResponseCache | None,
    ) -> Verdict:
        """The verdict for ``request`` at ``price`` (the model's, ``None`` when unknown),
        within ``budget``, through the response cache ``cache`` (``None``: none). With
        ``samples > 1`` the samples' requests (:func:`sample_request`) are made at once,
        each as one call, and voted by :func:`combine_samples`.

        Raises:
            ConfigError: a budget without a known price; ``samples`` no longer valid.
        """
        settings = self.settings
        config = settings.endpoint
        spending = Budget.of(budget)  # once: a number is one cap for every sample
        if spending is not None and price is None:
            raise ConfigError(self.no_price_message(config))
        n = settings.samples
        if n == 1:
            return await self._judge_once(config, request, price, spending, cache)
        check_samples(settings)  # samples or temperature reassigned since construction
        results: list[Verdict | None] = [None] * n

        async def one(k: int) -> None:
            sample = sample_request(request, k)
            results[k] = await self._judge_once(config, sample, price, spending, cache)

        async with anyio.create_task_group() as group:
            for k in range(1, n):
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
        batch mode, the vendor's batch API through the job in force: :mod:`._parking`). With
        OpenTelemetry installed, in a ``chat {model}`` span (:mod:`cross_judge._otel`)."""
        job = active_job()
        if _otel.available:  # without OpenTelemetry, this branch is the whole cost
            with _otel.chat_span(self.owner, config, request) as span:
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
        if verdict.error_kind is not ErrorKind.TRUNCATED or not self.settings.retry_truncated:
            return verdict
        larger = replace(request, max_tokens=request.max_tokens * 2)
        logger.debug(
            "critic %s: the answer was cut off at max_tokens=%d; asking once more with %d",
            self.settings.name,
            request.max_tokens,
            larger.max_tokens,
        )
        second = await self._judge_call(config, larger, price, spending, store, job)
        totals = call_totals([verdict, second])
        if second.error_kind is ErrorKind.TRUNCATED:
            # Cut off again: the message names the doubled cap, not the critic's own.
            message = self.assembler.truncation_message(
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
        assembler = self.assembler
        name = self.settings.name
        if self.blind is not None:
            images = request.images()
            if images:
                return self._abstain(ErrorKind.NO_VISION, self._no_vision(images), started)
        journal = active_journal()
        key = request.cache_key(config) if store is not None or journal is not None else ""
        if journal is not None:
            kept = journal.take(key, name)
            if kept is not None:
                replayed = assembler.from_kept(kept, started, request)
                if replayed.is_valid:  # as for the cache below
                    return replayed
        if store is not None:
            stored = await store.get(key)
            if stored is not None:
                hit = assembler.from_completion(
                    stored, 0, started, price=None, cached=True, structured=request.structured
                )
                # Only valid answers are stored, but the key does not cover the labels: an
                # answer this critic's vocabulary rejects is a miss, and the vendor is asked.
                if hit.is_valid:
                    return hit
        too_large = size_problem(request, config)
        if too_large is not None:
            return self._abstain(ErrorKind.TOO_LARGE, too_large, started)
        try:
            api_key = resolve_api_key(config, self.settings.api_key)
        except MissingAPIKeyError as exc:
            return assembler.failed(
                ErrorKind.MISSING_KEY, str(exc), started, attempts=0, price=price
            )
        reserved = 0.0
        if spending is not None:
            assert price is not None
            batched = job is not None and job.options.takes(config)
            reserved = worst_case_cost(price, request, batch=batched)
            # In batch mode a call waiting for room counts as waiting, so a round holding
            # the reservations it waits on is submitted.
            waiting = None if job is None else job.waiting
            if not await spending.reserve_or_wait(reserved, while_waiting=waiting):
                return assembler.over_budget(spending, reserved, started)
        spent: float | None = None
        hide = redactor_for(*secrets_of(config.base_url, api_key))
        try:
            # Redacted here, before the verdict is cached, returned, logged or written:
            # a vendor may echo the key (or the base URL's password) in any text it sends.
            if job is None:
                answer = await self._call(config, request, api_key, price, started, hide)
            else:
                answer = await job.ask(
                    self.owner,
                    config,
                    request,
                    api_key,
                    lambda: self._call(config, request, api_key, price, started, hide),
                )
            verdict = redacted_verdict(answer, hide)
            spent = verdict.cost_usd or 0.0
            if verdict.is_valid and verdict.raw_response is not None:
                if journal is not None:  # first: a kill during the cache's write loses nothing
                    journal.record(key, assembler.stored_completion(verdict), verdict)
                if store is not None:
                    await store.put(key, assembler.stored_completion(verdict))
            return verdict
        finally:
            if spending is not None:
                if spent is None:  # cancelled in flight: the vendor may bill the prompt
                    assert price is not None
                    prompt = Usage(prompt_tokens=estimate_prompt_tokens(request))
                    spent = price.cost(prompt)
                spending.settle(reserved, spent)

    def _abstain(self, kind: ErrorKind, message: str, started: float) -> Verdict:
        """The ``SKIPPED`` verdict of a call not made: no attempt, $0, no vote."""
        return Verdict(
            kind="SKIPPED",
            reasoning=message,
            error=message,
            error_kind=kind,
            confidence_source="none",
            cost_usd=0.0,
            **self.assembler.common(started, 0),
        )

    def _no_vision(self, images: tuple[ImagePart, ...]) -> str:
        """The message of a critic that cannot see ``images``: why, and the fix."""
        settings = self.settings
        model, vendor = settings.model, settings.endpoint.name
        return (
            f"no vision: the item has {len(images)} image(s) ({images[0].label()}"
            f"{', ...' if len(images) > 1 else ''}) and model {model!r} on vendor "
            f"{vendor!r} sees none ({self.blind}); not sent, no vote. Judge images with a "
            "vision model (e.g. vendor='openai' or 'anthropic'), or set "
            "Critic(vision=True) if this model does see them"
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
        settings = self.settings
        assembler = self.assembler
        sending = False
        sent = request  # after any step down structured="auto" makes (see .stepdown)
        try:
            adapter = protocol_adapter(config.protocol)
            connection = await adapter.connect(
                config, api_key, self.session if adapter.takes_http_client else None
            )
            started = time.perf_counter()
            self_timed = connection.self_timed
            timeout = settings.timeout

            async def send() -> Completion:
                return await connection.send(sent, timeout)

            learns = settings.structured == "auto" or settings.confidence == "auto"

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
                                json_ok=self.builder.json_allowed(config),
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
                max_retries=settings.max_retries,
                timeout=timeout,
                deadline=settings.deadline,
                gate=gate,
                self_timed=self_timed,
            )
            if _otel.available:
                _otel.record_completion(completion)
            verdict = assembler.from_completion(
                completion, attempts, started, price=price, structured=sent.structured
            )
            return charge_unreported_usage(verdict, completion, sent, price)
        except CallFailure as failure:
            message = str(failure)
            if failure.attempts > 1:
                message += f" (after {failure.attempts} attempts)"
            message = hide.error(message)
            logger.debug("critic %s: %s", settings.name, message)
            verdict = assembler.failed(
                failure.kind, message, started, attempts=failure.attempts, price=price
            )
            if settings.structured is not None:
                verdict = verdict.model_copy(update={"structured": sent.structured})
            return verdict
        except Exception as exc:
            # A bug of ours, or a client library failing in a way it does not document
            # (at set-up or during the call): one item must not take a whole panel or
            # batch down with it. Cancellation is a BaseException and still propagates.
            message = hide.error(f"internal: {type(exc).__name__}: {exc}")
            logger.warning(
                "critic %s: unexpected failure: %s",
                settings.name,
                message,
                exc_info=redacted_exception(exc, hide=hide),
            )
            attempts = 1 if sending else 0  # a failed set-up sent nothing
            return assembler.failed(
                ErrorKind.INTERNAL, message, started, attempts=attempts, price=price
            )

    def may_step(self, before: ChatRequest, after: ChatRequest) -> bool:
        """Whether a refused request ``before`` may be sent as ``after``
        (:func:`._stepdown.step_down`): a weaker answer shape with ``structured="auto"``,
        no token probabilities with ``confidence="auto"``."""
        if after.structured != before.structured and self.settings.structured != "auto":
            return False
        return after.logprobs == before.logprobs or self.settings.confidence == "auto"


def _blindness(settings: CriticConfig) -> str | None:
    """Why the critic of ``settings`` sees no images, or ``None`` when it may."""
    if settings.vision is not None:
        return None if settings.vision else "Critic(vision=False)"
    endpoint = settings.endpoint
    if sees_images(endpoint, settings.model) is not False:
        return None
    if endpoint.vision is False:
        return f"vendor {endpoint.name!r} has vision=False"
    return f"the vendor lists it in text_only_models {list(endpoint.text_only_models)}"


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
