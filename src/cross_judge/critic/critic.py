"""The :class:`Critic`: one LLM, on one vendor, with one prompt, judging one item at a time.

``await critic.judge(query)`` renders the prompt, calls the vendor (pooled connection,
retries, per-attempt timeout, overall deadline), parses the answer and returns a
:class:`~cross_judge.verdict.Verdict`. It never raises for anything the vendor does: every
failure is a verdict with ``kind="ERROR"`` or ``"PARSE_FAIL"`` and a classified
``error_kind``. It raises only for programming mistakes (unknown vendor, bad template,
missing context key), and those surface at construction or before any request is sent.

It does not vote or fan out (see :mod:`cross_judge.ensemble`), and keeps no state between
calls other than the shared connection pool.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import anyio

from .. import _otel, _sync
from ..batch.provider_jobs import active_job
from ..budget import Budget
from ..errors import ConfigError, ErrorKind, ItemTooLongError, MissingAPIKeyError, PromptError
from ..limits.gate import VendorGate
from ..pricing import (
    Price,
    estimate_prompt_tokens,
    price_for,
    registry_generation,
    worst_case_cost,
)
from ..stats.confidence_calibration import ConfidenceCalibration
from ..transport import (
    CallFailure,
    ChatRequest,
    Completion,
    aclose_sessions,
    openai_compat,
    shared_session,
)
from ..transport._http import (
    HTTPSession,
    HttpxSession,
    SyncDuckSession,
)
from ..transport.redaction import Redactor, redacted_exception, redactor_for, secrets_of
from ..transport.retry import Gate, call_with_retries
from ..vendors import VendorConfig, get_vendor, resolve_api_key, with_base_url
from ..verdict import Answer, Usage, Verdict, call_totals
from .parsing import (
    LABEL_KEYS,
    REASONING_KEYS,
    ExampleAnswer,
    extract_json,
    normalize_label,
    parse_answer,
)
from .template import Template

if TYPE_CHECKING:
    from ..batch.provider_jobs import _Job
    from .cache import ResponseCache
    from .prompts import PromptSpec

__all__ = [
    "DEFAULT_MAX_ITEM_CHARS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_SYSTEM_PROMPT",
    "Critic",
    "_extract_json",
    "combine_samples",
    "sample_request",
]

logger = logging.getLogger("cross_judge")

DEFAULT_PROMPT_TEMPLATE = (
    "Judge the following query:\n{query}\n\n"
    "Output JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1), reasoning."
)
"""cross-judge 0.1's default user template, unchanged."""

DEFAULT_SYSTEM_PROMPT = "You are a careful judge. Output strict JSON only."
"""cross-judge 0.1's default system prompt, unchanged."""

_extract_json = extract_json  # cross-judge 0.1 test suites import core._extract_json

JsonMode = bool | Literal["auto"]

DEFAULT_MAX_ITEM_CHARS = 1_000_000
"""Critic's default ``max_item_chars``: above any context window at ~4 characters a token."""


@dataclass(eq=False)
class Critic:
    """One LLM critic: a model on a vendor with a prompt.

    The first eleven parameters are cross-judge 0.1's, in its order and with its defaults.

    Args:
        name: unique id of the critic; becomes ``Verdict.critic_id``.
        model: the vendor's model id (``"deepseek-flash"``, ``"gpt-4o-mini"``, ...).
        prompt_template: user message with ``{query}`` and any other ``{name}`` fields,
            filled from ``context`` at judge time. Only plain named fields; write literal
            braces doubled. Checked at construction.
        vendor: a registered vendor name, case-insensitive (``deepseek``, ``openai``,
            ``openrouter``, ``anthropic``, ``custom``, ``ollama``, ``llamacpp``, ``vllm``,
            ``lmstudio`` or one added with :func:`~cross_judge.vendors.register_vendor`).
            ``anthropic`` speaks the native Messages API through the ``anthropic`` SDK; it
            sends no sampling parameters (the current API version refuses them on every
            model), so ``temperature``, ``seed`` and ``json_mode`` do not apply to it.
        system_prompt: system message; ``""`` sends none.
        temperature: sampling temperature (0 for reproducible judging).
        max_tokens: output cap per answer.
        api_key: the key; else the vendor's env var, read at call time. Never shown in a
            repr, a dump, a log line or an error.
        base_url: endpoint override (required for ``custom``).
        http_client: an ``httpx.AsyncClient`` to use instead of the shared pool (e.g. one
            mocked by respx), or a cross-judge 0.1 style sync object with
            ``post(url, json=..., headers=...)``. It is the caller's to close.
        timeout: seconds allowed for each attempt.
        weight: this critic's vote weight for weighted strategies (>= 0).
        labels: the allowed verdict vocabulary; other labels become ``PARSE_FAIL``.
        max_retries: retries after the first attempt on 408/409/429/5xx, timeouts and
            connection errors.
        deadline: seconds allowed for the whole call including retries and waits
            (``None``: only ``timeout`` per attempt bounds it).
        json_mode: ask for ``response_format={"type": "json_object"}``. ``"auto"`` does
            when the vendor accepts it and the prompt mentions JSON.
        prompt: a loaded :class:`~cross_judge.prompts.PromptSpec` or a reference such as
            ``"taxonomy-review@1"``; it supplies ``system_prompt``, ``prompt_template`` and
            (unless given) ``labels``, and its id and version are stamped on every verdict.
            Its ``score`` map fills ``Verdict.score`` when the model gives none.
        seed: sent as ``seed`` to vendors that take one (OpenAI-compatible), for
            reproducible sampling; part of the response-cache key.
        cache: reuse stored answers: ``True`` (the default cache file, see
            :func:`cross_judge.cache.default_cache_path`), a path, or a
            :class:`~cross_judge.cache.ResponseCache`. Only valid verdicts are stored; a
            hit is re-parsed and comes back with ``cached=True`` and ``cost_usd=0``.
        max_item_chars: the longest item this critic sends, in characters: the query plus
            the context values its template uses. A longer one raises
            :class:`~cross_judge.errors.ItemTooLongError` before anything is sent (a
            10 MB item pasted by mistake would otherwise be billed, or refused by the
            vendor after the upload). The default, 1,000,000, is above any context window
            at about four characters a token; ``None`` removes the check.
        calibration: a :class:`~cross_judge._confidence_calibration.ConfidenceCalibration`
            fitted for this critic (``calibrate_confidence(results, gold)[name]`` from
            :mod:`cross_judge.reliability`), or its ``to_dict()`` form. Every valid verdict
            whose answer states a confidence then has ``confidence`` mapped by it and the
            model's number in ``stated_confidence``; an answer without one keeps 0.0
            (with ``confidence_stated=False``, like any verdict that stated none).
            Applied on each call, cache hits included (the cache holds the raw answer), so
            a new calibration takes effect at once.
        samples: how many times the critic is asked each item (self-consistency; default
            1). With ``n > 1`` the ``n`` calls run concurrently, each a full call of its
            own (retries, response cache, budget reservation, as for one call), and their
            answers are voted into one verdict by :func:`combine_samples`: the most common
            valid label, with the mean confidence of the answers giving it, every answer in
            ``answers`` and ``self_agreement``, the share of valid answers giving the voted
            label. Sampling needs ``temperature > 0`` (at 0 the ``n`` answers would be one
            answer billed ``n`` times); on the ``anthropic`` protocol, which sends no
            temperature, the vendor samples at its own default and any value does. Sample
            ``k`` is its own request (:func:`sample_request`): its own cache entry
            (sample 0 shares that of a single call, so a ``samples=1`` cache stays valid)
            and, with a ``seed``, the seed ``seed + k``, so seeded samples still differ.

    Raises:
        ConfigError: an invalid value, an unknown vendor, ``custom`` without ``base_url``,
            ``prompt=`` together with ``prompt_template``/``system_prompt``, ``samples > 1``
            at temperature 0.
        PromptError: the template cannot be rendered safely or lacks ``{query}``.
    """

    name: str
    model: str
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    vendor: str = "deepseek"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    temperature: float = 0.0
    max_tokens: int = 2000
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = field(default=None, repr=False)
    http_client: Any = field(default=None, repr=False)
    timeout: float = 60.0
    weight: float = 1.0
    labels: Sequence[str] | None = None
    max_retries: int = 2
    deadline: float | None = None
    json_mode: JsonMode = "auto"
    prompt: PromptSpec | str | None = None
    seed: int | None = None
    cache: ResponseCache | bool | str | os.PathLike[str] | None = field(default=None, repr=False)
    max_item_chars: int | None = DEFAULT_MAX_ITEM_CHARS
    calibration: ConfidenceCalibration | Mapping[str, Any] | None = field(default=None, repr=False)
    samples: int = 1

    _template: Template = field(init=False, repr=False)
    _injected: HTTPSession | None = field(init=False, repr=False, default=None)
    _cache: ResponseCache | None = field(init=False, repr=False, default=None)
    # Derived from public fields and the registry on the hot path; recomputed if those
    # fields are reassigned or the vendor's registration is replaced (set_vendor_limits).
    _endpoint_memo: tuple[str, str | None, VendorConfig, VendorConfig] | None = field(
        init=False, repr=False, default=None
    )
    _sha_memo: tuple[str, str, str] | None = field(init=False, repr=False, default=None)
    _price_memo: tuple[str, str, int, Price | None] | None = field(
        init=False, repr=False, default=None
    )
    # Which JSON keys hold the label and the reasoning, highest precedence first. The
    # legacy Reviewer reads 0.1's `verdict`/`rationale` first; everything else `kind` first.
    _label_keys: tuple[str, ...] = field(init=False, repr=False, default=LABEL_KEYS)
    _reasoning_keys: tuple[str, ...] = field(init=False, repr=False, default=REASONING_KEYS)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError("Critic name must be a non-empty string, e.g. name='strict-gpt'")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"Critic {self.name!r}: model must be a non-empty model id")
        _check_number(self.name, "temperature", self.temperature, low=0.0, high=2.0)
        _check_number(self.name, "timeout", self.timeout, low=0.0, low_open=True)
        _check_number(self.name, "weight", self.weight, low=0.0)
        if self.deadline is not None:
            _check_number(self.name, "deadline", self.deadline, low=0.0, low_open=True)
        for attr, minimum in (
            ("max_tokens", 1),
            ("max_retries", 0),
            ("max_item_chars", 1),
            ("samples", 1),
        ):
            value = getattr(self, attr)
            if attr == "max_item_chars" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                none = " or None (no limit)" if attr == "max_item_chars" else ""
                raise ConfigError(
                    f"Critic {self.name!r}: {attr} must be an integer >= {minimum}{none}, "
                    f"got {value!r}"
                )
        if self.json_mode not in (True, False, "auto"):
            raise ConfigError(
                f"Critic {self.name!r}: json_mode must be True, False or 'auto', "
                f"got {self.json_mode!r}"
            )
        if self.prompt is not None:
            self._adopt_prompt()
        if self.labels is not None:
            self.labels = _normalise_labels(self.name, self.labels)
        self._endpoint()  # unknown vendor / custom without base_url: fail now
        self._template = self._compile()
        if self.json_mode is True and not self._mentions_json():
            raise ConfigError(
                f"Critic {self.name!r}: json_mode=True, but neither the system prompt nor the "
                "template mentions JSON, and vendors reject json_object requests then; "
                "mention JSON in the prompt or set json_mode='auto'"
            )
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise ConfigError(f"Critic {self.name!r}: seed must be an integer or None")
        protocol = self._endpoint().protocol
        if protocol == "anthropic" and self.json_mode is True:
            raise ConfigError(
                f"Critic {self.name!r}: Anthropic's Messages API has no JSON mode; ask for "
                "JSON in the prompt (the packaged prompts do) and set json_mode='auto'"
            )
        if self.http_client is not None:
            if protocol != "openai":
                raise ConfigError(
                    f"Critic {self.name!r}: http_client is for OpenAI-compatible vendors; "
                    f"vendor {self._endpoint().name!r} speaks {self._endpoint().protocol!r}, "
                    "so leave http_client out (its SDK client is pooled per event loop)"
                )
            self._injected = _wrap_client(self.name, self.http_client)
        self._check_samples()
        if self.cache is not None and self.cache is not False:
            from .cache import resolve_cache

            self._cache = resolve_cache(self.cache)
        self._calibration_in_use()

    # -- configuration ------------------------------------------------------------------

    @classmethod
    def from_yaml_prompt(cls, name: str, model: str, yaml_path: str, **kwargs: Any) -> Critic:
        """A critic whose prompt comes from a YAML file (cross-judge 0.1's signature).

        ``yaml_path`` is a file path (``"file.yaml@1"`` pins its version) or a packaged
        prompt reference such as ``"taxonomy-review@1"``. ``kwargs`` may override
        ``system_prompt``, ``prompt_template`` and ``labels`` (0.1 raised ``TypeError``);
        verdicts then carry the overridden prompt's sha256 and no prompt id.

        Raises:
            PromptError: the file is missing or malformed; the message names file and field.
        """
        from .prompts import load_prompt

        spec = load_prompt(yaml_path)
        if "system_prompt" in kwargs or "prompt_template" in kwargs:
            kwargs.setdefault("system_prompt", spec.system_prompt)
            kwargs.setdefault("prompt_template", spec.user_prompt_template)
            kwargs.setdefault("labels", list(spec.labels) if spec.labels else None)
            return cls(name=name, model=model, **kwargs)
        return cls(name=name, model=model, prompt=spec, **kwargs)

    def _adopt_prompt(self) -> None:
        from .prompts import PromptSpec, load_prompt

        if isinstance(self.prompt, str):
            self.prompt = load_prompt(self.prompt)
        if not isinstance(self.prompt, PromptSpec):
            raise ConfigError(
                f"Critic {self.name!r}: prompt must be a PromptSpec or a reference such as "
                f"'taxonomy-review@1', got {type(self.prompt).__name__}"
            )
        if (self.prompt_template, self.system_prompt) != (
            DEFAULT_PROMPT_TEMPLATE,
            DEFAULT_SYSTEM_PROMPT,
        ):
            raise ConfigError(
                f"Critic {self.name!r}: pass either prompt= or prompt_template/system_prompt, "
                "not both (Critic.from_yaml_prompt(..., prompt_template=...) overrides a file)"
            )
        self.prompt_template = self.prompt.user_prompt_template
        self.system_prompt = self.prompt.system_prompt
        if self.labels is None and self.prompt.labels:
            self.labels = list(self.prompt.labels)

    def _check_samples(self) -> None:
        """Raise unless ``samples`` is an integer >= 1 that can sample: more than one
        sample needs a temperature > 0 where the protocol sends one.

        Raises:
            ConfigError: saying what to change.
        """
        n = self.samples
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"Critic {self.name!r}: samples must be an integer >= 1, got {n!r}")
        if n > 1 and self.temperature == 0 and self._endpoint().protocol != "anthropic":
            raise ConfigError(
                f"Critic {self.name!r}: samples={n} needs a temperature > 0: at temperature 0 "
                f"the {n} answers would be the same answer billed {n} times; set e.g. "
                "temperature=0.7, or samples=1"
            )

    def _spec_in_use(self) -> PromptSpec | None:
        """The prompt spec, while the critic still sends its exact text (a template
        changed after construction is no longer that prompt)."""
        spec = self.prompt
        if (
            spec is None
            or isinstance(spec, str)
            or spec.user_prompt_template != self.prompt_template
            or spec.system_prompt != self.system_prompt
        ):
            return None
        return spec

    def _prompt_provenance(self) -> tuple[str | None, str | None]:
        """(id, version) of the prompt, while the critic still uses its exact text."""
        spec = self._spec_in_use()
        return (None, None) if spec is None else (spec.id, spec.version)

    def _examples(self) -> tuple[ExampleAnswer, ...]:
        """The example answers the prompt shows the model, so that a verbatim copy of one
        is not counted as a vote; none once the template was changed."""
        spec = self._spec_in_use()
        return () if spec is None else spec.examples

    def _calibration_in_use(self) -> ConfidenceCalibration | None:
        """The calibration; a mapping (given, or assigned later) is converted and kept.

        Raises:
            ConfigError: it is neither a calibration, a valid ``to_dict()`` mapping nor None.
        """
        calibration = self.calibration
        if calibration is None or isinstance(calibration, ConfidenceCalibration):
            return calibration
        if not isinstance(calibration, Mapping):
            raise ConfigError(
                f"Critic {self.name!r}: calibration must be a ConfidenceCalibration (e.g. "
                "cross_judge.reliability.calibrate_confidence(results, gold)[name]), its "
                f"to_dict() form, or None; got {type(calibration).__name__}"
            )
        try:
            converted = ConfidenceCalibration.from_dict(calibration)
        except ConfigError as exc:
            raise ConfigError(f"Critic {self.name!r}: calibration: {exc}") from None
        self.calibration = converted
        return converted

    def _compile(self) -> Template:
        template = Template.compile(self.prompt_template, what=f"Critic {self.name!r} template")
        if "query" not in template.fields:
            raise PromptError(
                f"Critic {self.name!r} template has no {{query}} placeholder, so the item would "
                "never reach the model; add {query} where the item belongs"
            )
        return template

    def _endpoint(self) -> VendorConfig:
        memo = self._endpoint_memo
        if (
            memo is None
            or memo[0] != self.vendor
            or memo[1] != self.base_url
            or get_vendor(memo[2].name) is not memo[2]  # the registration was replaced
        ):
            registered = get_vendor(self.vendor)
            config = with_base_url(registered, self.base_url)
            memo = self._endpoint_memo = (self.vendor, self.base_url, registered, config)
        return memo[3]

    def _mentions_json(self) -> bool:
        return "json" in (self.system_prompt + self.prompt_template).lower()

    def _json_mode_on(self, config: VendorConfig) -> bool:
        if self.json_mode == "auto":
            return config.json_object and self._mentions_json()
        return bool(self.json_mode)

    @property
    def prompt_sha256(self) -> str:
        """sha256 of the system prompt and template: which exact prompt judged."""
        memo = self._sha_memo
        if memo is None or memo[0] != self.system_prompt or memo[1] != self.prompt_template:
            blob = json.dumps([self.system_prompt, self.prompt_template], ensure_ascii=False)
            digest = hashlib.sha256(blob.encode()).hexdigest()
            memo = self._sha_memo = (self.system_prompt, self.prompt_template, digest)
        return memo[2]

    def check(self, context: Mapping[str, Any] | None = None) -> None:
        """Raise now for what would otherwise only show up at call time.

        Checks the vendor and endpoint, that an API key is available when the vendor needs
        one, and (given ``context``) that the template can be rendered with it.

        Raises:
            MissingAPIKeyError: no key; the message names the environment variable.
            ConfigError / PromptError: as at construction, or a context key is missing.
        """
        config = self._endpoint()
        resolve_api_key(config, self.api_key)
        if context is not None:
            self.render_prompt("", context)

    def render_prompt(self, query: str, context: Mapping[str, Any] | None = None) -> str:
        """The user message for ``query``: every field filled literally, nothing evaluated.

        Raises:
            PromptError: a field has no value, or ``context`` tries to override ``query``.
            ItemTooLongError: the query plus the context values the template uses are
                longer than ``max_item_chars``.
        """
        if self._template.source != self.prompt_template:  # the attribute was reassigned
            self._template = self._compile()
        limit = self.max_item_chars
        if limit is not None:
            self._check_item_length(query, context, limit)
        return self._template.render_item(query, context, what=f"Critic {self.name!r} template")

    def _check_item_length(self, query: str, context: Mapping[str, Any] | None, limit: int) -> None:
        size = len(str(query))
        if context:
            for name in self._template.fields:
                if name != "query" and name in context:
                    size += len(str(context[name]))
        if size > limit:
            raise ItemTooLongError(
                f"Critic {self.name!r}: the item is {size:,} characters (query plus context "
                f"values), over max_item_chars={limit:,}; shorten or split it, or raise the "
                "critic's max_item_chars (None removes the limit)"
            )

    def build_messages(
        self, query: str, context: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages sent for ``query`` (system message only if non-empty)."""
        user = self.render_prompt(query, context)
        if self.system_prompt:
            return [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": user},
            ]
        return [{"role": "user", "content": user}]

    # -- calling --------------------------------------------------------------------------

    def build_request(self, query: str, context: Mapping[str, Any] | None = None) -> ChatRequest:
        """The wire-neutral request sent for ``query`` (see :meth:`build_messages`).

        Raises:
            PromptError: as :meth:`render_prompt`.
        """
        config = self._endpoint()
        return ChatRequest(
            model=self.model,
            system=self.system_prompt,
            user=self.render_prompt(query, context),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            json_mode=self._json_mode_on(config),
            seed=self.seed,
        )

    def price(self) -> Price | None:
        """This critic's model price (:func:`cross_judge.pricing.price_for`), if known."""
        vendor, generation = self._endpoint().name, registry_generation()
        memo = self._price_memo
        if memo is None or memo[:3] != (vendor, self.model, generation):
            memo = self._price_memo = (
                vendor,
                self.model,
                generation,
                price_for(vendor, self.model),
            )
        return memo[3]

    async def judge(
        self,
        query: str,
        context: Mapping[str, Any] | None = None,
        *,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """Judge ``query`` and return a :class:`Verdict`; vendor failures never raise.

        Args:
            query: the item to judge, inserted literally into the template.
            context: values for the template's other fields.
            budget: a spending cap in USD (or a :class:`~cross_judge.budget.Budget` shared
                with other calls). The call's worst case is reserved before it is sent; if
                it does not fit, nothing is sent and the verdict is ``SKIPPED`` with
                ``error_kind="budget"``.
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
        """
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
        config = self._endpoint()
        if self.calibration is not None:
            self._calibration_in_use()  # one assigned after construction: fail before sending
        price = self.price()
        spending = Budget.of(budget)  # once: a number is one cap for every sample
        if spending is not None and price is None:
            raise ConfigError(self._no_price_message(config))
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
        batch mode, the vendor's batch API: :mod:`cross_judge._batch_job`). With
        OpenTelemetry installed, in a ``chat {model}`` span (:mod:`cross_judge._otel`)."""
        job = active_job()
        if _otel.available:  # without OpenTelemetry, this branch is the whole cost
            with _otel.chat_span(self, config, request) as span:
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
        job: _Job | None,
    ) -> Verdict:
        started = time.perf_counter()
        key = request.cache_key(config) if store is not None else ""
        if store is not None:
            stored = await store.get(key)
            if stored is not None:
                hit = self._verdict_from(stored, 0, started, price=None, cached=True)
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
            if not spending.reserve(reserved):
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
                    self,
                    config,
                    request,
                    api_key,
                    lambda: self._call(config, request, api_key, price, started, hide),
                )
            verdict = _redacted(answer, hide)
            spent = verdict.cost_usd or 0.0
            if store is not None and verdict.is_valid and verdict.raw_response is not None:
                await store.put(key, self._stored_completion(verdict))
            return verdict
        finally:
            if spending is not None:
                if spent is None:  # cancelled in flight: the vendor may bill the prompt
                    assert price is not None
                    prompt = Usage(prompt_tokens=estimate_prompt_tokens(request))
                    spent = price.cost(prompt)
                spending.settle(reserved, spent)

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

        The Anthropic SDK's first use in a process imports it (1-3 s, in a worker thread):
        that is set-up, not the call, so it runs before the first attempt, outside the
        per-attempt timeout and the deadline, and ``elapsed_s`` starts after it.
        """
        sending = False
        try:
            if config.protocol == "anthropic":
                from ..transport import anthropic

                await anthropic.prepare(config, api_key)
                started = time.perf_counter()

                async def attempt() -> Completion:
                    return await anthropic.complete(
                        config, request, api_key=api_key, timeout=self.timeout
                    )

                self_timed = False
            else:
                session = self._injected or shared_session(config.base_url)
                self_timed = session.enforces_total_timeout

                async def attempt() -> Completion:
                    return await openai_compat.complete(
                        session, config, request, api_key=api_key, timeout=self.timeout
                    )

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
            return self._verdict_from(completion, attempts, started, price=price)
        except CallFailure as failure:
            message = str(failure)
            if failure.attempts > 1:
                message += f" (after {failure.attempts} attempts)"
            message = hide.error(message)
            logger.debug("critic %s: %s", self.name, message)
            return self._failed(
                failure.kind, message, started, attempts=failure.attempts, price=price
            )
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

    def judge_sync(self, query: str, context: Mapping[str, Any] | None = None) -> Verdict:
        """:meth:`judge` for synchronous code; also works inside a running event loop."""
        return _sync.run_sync(self.judge, query, context)

    def verdict_from_batch(self, outcome: Completion | CallFailure) -> Verdict:
        """The verdict for this critic's request answered through a vendor's batch API
        (:mod:`cross_judge.provider_batches`): a completion is parsed as a live answer is
        (labels, confidence, calibration, refusals, empty answers) and priced at the
        model's batch rate; a failure is an ``ERROR`` verdict of its kind. Secrets are
        redacted as for live verdicts. One attempt; ``elapsed_s`` is 0 (the batch's wall
        time is the job's, not the request's).

        Raises:
            ConfigError: a completion reports usage, and the model has a price but no batch
                rate (its vendor has no batch API the price table knows).
        """
        config = self._endpoint()
        try:
            api_key: str | None = resolve_api_key(config, self.api_key)
        except MissingAPIKeyError:
            api_key = None
        hide = redactor_for(*secrets_of(config.base_url, api_key))
        price = self.price()
        started = time.perf_counter()
        if isinstance(outcome, CallFailure):
            verdict = self._failed(outcome.kind, str(outcome), started, attempts=1, price=price)
        else:
            verdict = self._verdict_from(outcome, 1, started, price=price, batch=True)
        return _redacted(verdict, hide).model_copy(update={"elapsed_s": 0.0})

    def _verdict_from(
        self,
        completion: Completion,
        attempts: int,
        started: float,
        *,
        price: Price | None,
        cached: bool = False,
        batch: bool = False,
    ) -> Verdict:
        """The verdict for a completed call (or a cache hit: no usage, cost 0; or a batch
        request: the batch rate)."""
        common = self._common(started, attempts)
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
                usage=completion.usage,
                **common,
            )
        text = (completion.text or "").strip()
        if not text:
            filtered = completion.finish_reason == "content_filter"
            return Verdict(
                kind="ERROR",
                reasoning="empty response from LLM",
                error="refusal: content filter" if filtered else "empty_response",
                error_kind=ErrorKind.REFUSAL if filtered else ErrorKind.EMPTY,
                usage=completion.usage,
                **common,
            )
        parsed = parse_answer(
            text,
            labels=self.labels,
            label_keys=self._label_keys,
            reasoning_keys=self._reasoning_keys,
            examples=self._examples(),
        )
        if not parsed.ok:
            error = parsed.error or "parse_fail"
            if completion.truncated:
                error += f" (the answer was cut off at max_tokens={self.max_tokens})"
            return Verdict(
                kind="PARSE_FAIL",
                reasoning=parsed.reasoning,
                raw_response=text,
                error=error,
                error_kind=ErrorKind.PARSE,
                usage=completion.usage,
                **common,
            )
        score = parsed.score
        spec = self.prompt
        if score is None and spec is not None and not isinstance(spec, str) and spec.score:
            score = spec.score.get(parsed.kind)
        confidence, stated = parsed.confidence, None
        # Applied here, on every parse of an answer (a cache hit is re-parsed), never
        # stored: the cache keeps the raw text, so a changed calibration cannot go stale.
        if self.calibration is not None and parsed.confidence_given:
            calibration = self._calibration_in_use()
            assert calibration is not None
            confidence, stated = calibration.apply(parsed.confidence), parsed.confidence
        return Verdict(
            kind=parsed.kind,
            confidence=confidence,
            stated_confidence=stated,
            confidence_stated=parsed.confidence_given,
            reasoning=parsed.reasoning,
            score=score,
            raw_response=text,
            usage=completion.usage,
            **common,
        )

    def unfinished_verdict(
        self,
        kind: str,
        message: str,
        error_kind: ErrorKind,
        *,
        elapsed_s: float = 0.0,
        sent: bool = True,
    ) -> Verdict:
        """A verdict for a call of this critic that did not complete or was never made.

        Used by ensembles for calls cut off by a deadline (``kind="ERROR"``) or saved by
        early stop (``kind="SKIPPED"``). Carries the critic's provenance. A call that was
        never ``sent`` costs $0 (when the price is known); one cut off in flight has no
        known cost (a vendor may bill its prompt).
        """
        common = self._common(time.perf_counter() - elapsed_s, attempts=0)
        if not sent and self.price() is not None:
            common["cost_usd"] = 0.0
        return Verdict(kind=kind, reasoning=message, error=message, error_kind=error_kind, **common)

    def _failed(
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
            cost_usd=None if price is None else 0.0,
            **self._common(started, attempts),
        )

    def _over_budget(self, budget: Budget, needed: float, started: float) -> Verdict:
        message = (
            f"budget: this call could cost up to ${needed:.6f} (prompt and max_tokens="
            f"{self.max_tokens} at worst), more than the ${max(budget.remaining_usd, 0.0):.6f} "
            f"left of budget_usd={budget.limit_usd:g}; not sent"
        )
        return Verdict(
            kind="SKIPPED",
            reasoning=message,
            error=message,
            error_kind=ErrorKind.BUDGET,
            cost_usd=0.0,  # nothing was sent
            **self._common(started, 0),
        )

    def _no_price_message(self, config: VendorConfig) -> str:
        return (
            f"Critic {self.name!r}: a budget needs the price of model {self.model!r} on vendor "
            f"{config.name!r}, and none is known; add it with cross_judge.register_price("
            f"{self.model!r}, vendor={config.name!r}, input=..., output=...) (USD per million "
            "tokens) or load a price file with cross_judge.load_prices(path)"
        )

    def _stored_completion(self, verdict: Verdict) -> Completion:
        """What the response cache keeps of a valid verdict: the text (re-parsed on a hit),
        the usage and the model."""
        return Completion(text=verdict.raw_response, usage=verdict.usage, model=self.model)

    def _common(self, started: float, attempts: int) -> dict[str, Any]:
        prompt_id, prompt_version = self._prompt_provenance()
        return {
            "critic_id": self.name,
            "elapsed_s": round(time.perf_counter() - started, 3),
            "model": self.model,
            "vendor": self._endpoint().name,
            "prompt_id": prompt_id,
            "prompt_version": prompt_version,
            "prompt_sha256": self.prompt_sha256,
            "attempts": attempts,
        }

    # -- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close this critic's pooled connections on the running loop (shared with other
        critics on the same endpoint, which reopen on their next call). An injected
        ``http_client`` is left open: it belongs to the caller."""
        if self._injected is None:
            await aclose_sessions([self._endpoint().base_url])

    async def __aenter__(self) -> Critic:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- export ---------------------------------------------------------------------------

    def model_dump(self) -> dict[str, Any]:
        """The critic's configuration as plain data, without secrets or the client.

        ``api_key`` and ``http_client`` are left out; a ``base_url`` loses any
        ``user:password@`` part; ``cache`` is the cache file's path; ``calibration`` its
        ``to_dict()`` form. The result is safe to log or write to a manifest.
        """
        skip = {"api_key", "http_client"}
        data: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.init and f.name not in skip
        }
        data["labels"] = list(self.labels) if self.labels is not None else None
        data["prompt"] = (
            self.prompt
            if isinstance(self.prompt, str) or self.prompt is None
            else (self.prompt.ref)
        )
        data["base_url"] = _strip_userinfo(self._endpoint().base_url)
        data["vendor"] = self._endpoint().name
        data["api_key_env"] = self._endpoint().api_key_env
        data["prompt_sha256"] = self.prompt_sha256
        data["cache"] = str(self._cache.path) if self._cache is not None else None
        calibration = self._calibration_in_use()
        data["calibration"] = calibration.to_dict() if calibration is not None else None
        return data

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """:meth:`model_dump` as JSON."""
        return json.dumps(self.model_dump(), indent=indent, ensure_ascii=False)


def sample_request(request: ChatRequest, k: int) -> ChatRequest:
    """The request of sample ``k`` (0-based) of ``request``, for ``Critic(samples=n)``.

    Sample 0 is ``request`` itself. Sample ``k > 0`` carries ``sample=k``, which gives it
    its own response-cache key (:meth:`~cross_judge.transport.ChatRequest.cache_key`) and
    is not sent; with a ``seed`` it sends ``seed + k``, since one seed would make every
    sample the same draw.
    """
    if k == 0:
        return request
    seed = None if request.seed is None else request.seed + k
    return replace(request, sample=k, seed=seed)


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


def _check_number(
    critic: str,
    name: str,
    value: object,
    *,
    low: float,
    high: float | None = None,
    low_open: bool = False,
) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        number = float(value)  # type: ignore[arg-type]  # checked just above
        ok = math.isfinite(number) and (number > low if low_open else number >= low)
        ok = ok and (high is None or number <= high)
    if not ok:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        if high is not None:
            bound += f" and <= {high:g}"
        raise ConfigError(f"Critic {critic!r}: {name} must be a number {bound}, got {value!r}")


def _normalise_labels(critic: str, labels: Sequence[str]) -> tuple[str, ...]:
    if isinstance(labels, str):
        raise ConfigError(
            f"Critic {critic!r}: labels must be a list of strings, e.g. ['KEEP', 'REJECT']"
        )
    out: list[str] = []
    for label in labels:
        norm = normalize_label(label)
        if norm is None:
            raise ConfigError(f"Critic {critic!r}: label {label!r} is not a usable label")
        if norm not in out:
            out.append(norm)
    if not out:
        raise ConfigError(f"Critic {critic!r}: labels is empty; pass None to allow any label")
    return tuple(out)


def _wrap_client(critic: str, client: Any) -> HTTPSession:
    import httpx

    if isinstance(client, httpx.AsyncClient):
        return HttpxSession(client)
    if callable(getattr(client, "post", None)):
        return SyncDuckSession(client)
    raise ConfigError(
        f"Critic {critic!r}: http_client must be an httpx.AsyncClient or an object with "
        f"post(url, json=..., headers=...); got {type(client).__name__}"
    )


def _redacted(verdict: Verdict, hide: Redactor) -> Verdict:
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
    return verdict.model_copy(update=changes) if changes else verdict


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
