"""The :class:`Critic`: one LLM, on one vendor, with one prompt, judging one item at a time.

``await critic.judge(query)`` renders the prompt, calls the vendor (pooled connection,
retries, per-attempt timeout, overall deadline), parses the answer and returns a
:class:`~cross_judge.verdict.Verdict`. It never raises for anything the vendor does: every
failure is a verdict with ``kind="ERROR"`` or ``"PARSE_FAIL"`` and a classified
``error_kind``. It raises only for programming mistakes (unknown vendor, bad template,
missing context key), and those surface at construction or before any request is sent.

It does not vote or fan out (see :mod:`cross_judge.ensemble`), and keeps no state between
calls other than the shared connection pool.

This module holds the class: its mutable fields, the checks made at construction, its
vendor, price and export. Its methods delegate to collaborators reading a frozen snapshot of
the fields (:mod:`._config`, taken on first use after a field is assigned): the request
(:mod:`._request`), the call (:mod:`._calls`), the verdict (:mod:`._assembly`), a rubric
(:mod:`._rubric`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from .. import _sync
from ..pricing import Price, registry_generation
from ..stats import ConfidenceCalibration
from ..transport import AnswerSchema, HTTPSession, aclose_sessions
from ..vendors import VendorConfig, get_vendor, resolve_api_key, with_base_url
from . import _config
from ._config import (
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_SYSTEM_PROMPT,
    ConfidenceMode,
    CriticConfig,
    Effort,
    JsonMode,
    Structured,
)
from ._parsing import LABEL_KEYS, REASONING_KEYS
from ._parts import Parts, parts_of
from ._warmup import warm_up

if TYPE_CHECKING:
    from .._item import Item
    from ..budget import Budget
    from ..errors import ErrorKind
    from ..rubric.models import CriterionVerdict, Rubric
    from ..transport import CallFailure, ChatRequest, Completion, Message, StructuredForm
    from ..verdict import Usage, Verdict
    from ._cache import ResponseCache
    from ._prompts import PromptSpec

__all__ = [
    "DEFAULT_MAX_ITEM_CHARS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_SYSTEM_PROMPT",
    "ConfidenceMode",
    "Critic",
    "Effort",
    "JsonMode",
    "Structured",
]

DEFAULT_MAX_ITEM_CHARS = 1_000_000
"""Critic's default ``max_item_chars``: above any context window at ~4 characters a token."""

# Assigning these does not change what the collaborators read: the snapshot stays.
_SNAPSHOT_FREE = frozenset({"_memo", "_endpoint_memo", "_cache"})


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
        calibration: a :class:`~cross_judge.stats.ConfidenceCalibration`
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
        structured: the answer shape asked of the vendor, with a JSON schema built from
            the prompt (:meth:`answer_schema`: the labels as an enum, confidence as a
            number, the reasoning and the prompt's other ``output`` fields):
            ``"schema"``, enforced by the vendor (OpenAI-compatible ``response_format``
            ``json_schema`` with ``strict``, llama.cpp's ``json_object`` with a
            ``schema``, Anthropic's JSON output format); ``"tool"``, Anthropic only, a
            tool the model must call, whose input is the answer; ``"json"``, any JSON
            object (``json_mode=True``); ``"off"``, nothing; ``"auto"``, the strongest
            form the endpoint takes, stepping down schema -> json -> off for the
            endpoint and model on a refusal that names the form (logged once, recorded
            in the manifest and on each verdict's ``structured``), never failing the
            item. ``None`` (the default) keeps ``json_mode``'s behaviour, so existing
            panels send what they sent and keep their cache.
        effort: a reasoning model's effort, ``"low"``, ``"medium"`` or ``"high"``, sent
            as the vendor takes it (OpenAI ``reasoning_effort``, Anthropic
            ``output_config.effort``, DeepSeek's thinking switch, ...; see
            :func:`~cross_judge.transport._openai_compat.reasoning_fields`). With the ``openai``
            dialect ``temperature`` is then not sent (reasoning models refuse it).
        thinking_budget: tokens a reasoning model may think before answering: Anthropic
            extended thinking (``max_tokens`` becomes the budget plus ``max_tokens``,
            the room for the answer; at least 1024), Qwen's ``thinking_budget``,
            OpenRouter's ``reasoning.max_tokens``. A vendor that cannot take what is
            asked is a :class:`~cross_judge.errors.ConfigError` here, never a silent drop.
        confidence: where the verdict's ``confidence`` comes from: ``"stated"`` (the
            default), the number the model wrote; ``"logprob"``, the probability of the
            chosen label at the token where it was decided, renormalised over the labels
            (needs ``labels``; the request asks for ``logprobs``/``top_logprobs``; a
            score prompt's ``score`` becomes the expected score); a ConfigError on a
            vendor that serves none (Anthropic); a reply without them has
            ``confidence_source="none"``. ``"auto"``: logprob when the reply has them,
            else stated (on Anthropic stated, logged once). Every verdict says which in
            ``confidence_source``.
        retry_truncated: an answer cut off by the token limit before it held a verdict
            (``error_kind="truncated"``) is asked once more with twice ``max_tokens``;
            the verdict then carries both calls' usage, cost and attempts.
        family: the model family this critic belongs to (``"openai"``, ``"anthropic"``,
            ...), free text compared case-insensitively. When ranking candidates that
            declare families too (:func:`cross_judge.ranking.rank`, ``families=``), the
            critic sits out every pair involving a candidate of its own family (its verdict
            ``SKIPPED`` with ``error_kind="self_preference"``): judges favour their own
            family's answers. ``None``: no family, never sits out.
        vision: whether the model sees images. ``None`` (the default) follows the
            vendor's table (:func:`~cross_judge.vendors.sees_images`: OpenAI's and
            Anthropic's vision models yes, DeepSeek no, OpenRouter, ``custom`` and local
            servers not known, in which case the images are sent and the vendor decides);
            ``True`` or ``False`` settles it for this critic. A critic that cannot see an
            item's images abstains without a call: ``SKIPPED`` with
            ``error_kind="no_vision"``, no request, no cost, nothing cached, no vote.

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
    structured: Structured | None = None
    effort: Effort | None = None
    thinking_budget: int | None = None
    confidence: ConfidenceMode = "stated"
    retry_truncated: bool = True
    family: str | None = None
    vision: bool | None = None

    _injected: HTTPSession | None = field(init=False, repr=False, default=None)
    _cache: ResponseCache | None = field(init=False, repr=False, default=None)
    # Derived from public fields and the registry on the hot path; recomputed if those
    # fields are reassigned or the vendor's registration is replaced (set_vendor_limits).
    _endpoint_memo: tuple[str, str | None, VendorConfig, VendorConfig] | None = field(
        init=False, repr=False, default=None
    )
    # Which JSON keys hold the label and the reasoning, highest precedence first. The
    # legacy Reviewer reads 0.1's `verdict`/`rationale` first; everything else `kind` first.
    _label_keys: tuple[str, ...] = field(init=False, repr=False, default=LABEL_KEYS)
    _reasoning_keys: tuple[str, ...] = field(init=False, repr=False, default=REASONING_KEYS)
    # The configuration snapshot and its collaborators, dropped when a field is assigned.
    # Per instance, set with object.__setattr__; not a field, so that repr, asdict and
    # model_dump never see it.
    _memo: ClassVar[Parts | None] = None

    def __post_init__(self) -> None:
        _config.check_fields(vars(self))
        _config.check_vision(self.name, self.vision)
        if self.prompt is not None:
            self.prompt, self.prompt_template, self.system_prompt, self.labels = (
                _config.adopt_prompt(vars(self))
            )
        if self.labels is not None:
            self.labels = _config.normalise_labels(self.name, self.labels)
        endpoint = self.endpoint()  # unknown vendor / custom without base_url: fail now
        self._injected = _config.check_sending(vars(self), endpoint)
        parts = self._parts()  # converts a calibration mapping, or raises for a bad one
        _config.check_samples(parts.settings)
        _config.check_answer_options(parts.settings)
        parts.rubric.check_options()
        if self.cache is not None and self.cache is not False:
            from ._cache import resolve_cache

            self._cache = resolve_cache(self.cache)

    def __setattr__(self, name: str, value: Any) -> None:
        # A field assigned (critic.temperature = 0.3) drops the snapshot: the next call
        # takes a new one, so the change takes effect there.
        object.__setattr__(self, name, value)
        if name not in _SNAPSHOT_FREE:
            object.__setattr__(self, "_memo", None)

    def __getstate__(self) -> dict[str, Any]:
        # A pickle or copy leaves the snapshot out: the copy takes its own on first use.
        state = self.__dict__.copy()
        state.pop("_memo", None)
        return state

    def _parts(self) -> Parts:
        """The configuration snapshot and its collaborators: the one taken, while no field
        was assigned since and the vendor's registration is the one it used."""
        parts = self._memo
        if parts is None or parts.settings.endpoint is not self.endpoint():
            parts = self._snapshot_parts()
        return parts

    def _snapshot_parts(self) -> Parts:
        calibration = self._calibration_in_use()  # first: converting it assigns the field
        values = vars(self)
        settings = CriticConfig.build(
            **{name: values[name] for name in _config.CRITIC_SETTINGS},
            endpoint=self.endpoint(),
            calibration=calibration,
            label_keys=self._label_keys,
            reasoning_keys=self._reasoning_keys,
            prompt_sha256=self.prompt_sha256,
        )
        parts = parts_of(settings, session=self._injected, owner=self)
        object.__setattr__(self, "_memo", parts)
        return parts

    @property
    def response_cache(self) -> ResponseCache | None:
        """The response cache this critic's calls use, opened from ``cache`` when the critic
        was made; ``None`` without one (an ensemble's own cache may still serve it)."""
        return self._cache

    def snapshot(self) -> CriticConfig:
        """The frozen configuration the next call reads: taken on first use after a field
        was assigned (or the vendor's registration replaced), then reused.

        Raises:
            PromptError / ConfigError: a field assigned since construction is invalid.
        """
        return self._parts().settings

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
        from ._prompts import load_prompt

        spec = load_prompt(yaml_path)
        if "system_prompt" in kwargs or "prompt_template" in kwargs:
            kwargs.setdefault("system_prompt", spec.system_prompt)
            kwargs.setdefault("prompt_template", spec.template_text)
            kwargs.setdefault("labels", list(spec.labels) if spec.labels else None)
            return cls(name=name, model=model, **kwargs)
        return cls(name=name, model=model, prompt=spec, **kwargs)

    def use_answer_keys(self, label_keys: Sequence[str], reasoning_keys: Sequence[str]) -> None:
        """Read the label and the reasoning of an answer from these JSON keys, highest
        precedence first, instead of :data:`~cross_judge.critic._parsing.LABEL_KEYS` and
        :data:`~cross_judge.critic._parsing.REASONING_KEYS` (``kind`` and ``reasoning``
        first). The legacy :class:`~cross_judge.reviewer.Reviewer` reads cross-judge 0.1's
        ``verdict`` and ``rationale`` first."""
        self._label_keys = tuple(label_keys)
        self._reasoning_keys = tuple(reasoning_keys)

    def _calibration_in_use(self) -> ConfidenceCalibration | None:
        """The calibration; a mapping (given, or assigned later) is converted and kept.

        Raises:
            ConfigError: it is neither a calibration, a valid ``to_dict()`` mapping nor None.
        """
        converted = _config.convert_calibration(f"Critic {self.name!r}", self.calibration)
        if converted is not self.calibration:
            self.calibration = converted
        return converted

    def prompt_provenance(self) -> tuple[str | None, str | None]:
        """``(id, version)`` of the prompt this critic judges with, as stamped on its
        verdicts (``prompt_id``, ``prompt_version``): those of its
        :class:`~cross_judge.prompts.PromptSpec` while it still sends that prompt's exact
        text; ``(None, None)`` for a critic without one, or whose ``system_prompt`` or
        ``prompt_template`` was changed since."""
        spec = _config.spec_in_use(self.prompt, self.prompt_template, self.system_prompt)
        return (None, None) if spec is None else (spec.id, spec.version)

    @property
    def rubric(self) -> Rubric | None:
        """The rubric of this critic's prompt (a prompt with ``criteria``) while the critic
        sends that prompt, else ``None``."""
        spec = _config.spec_in_use(self.prompt, self.prompt_template, self.system_prompt)
        return None if spec is None else spec.rubric

    def endpoint(self) -> VendorConfig:
        """The vendor configuration this critic calls: its registered ``vendor`` (as
        registered now) with ``base_url``, when given, in place of the vendor's. Memoised,
        and recomputed when ``vendor`` or ``base_url`` is reassigned or the vendor's
        registration is replaced (e.g. by :func:`~cross_judge.vendors.set_vendor_limits`).

        Raises:
            ConfigError: an unknown vendor (:class:`~cross_judge.errors.UnknownVendorError`),
                or ``custom`` without a ``base_url``.
        """
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

    @property
    def prompt_sha256(self) -> str:
        """sha256 of the system prompt and template: which exact prompt judged."""
        return _config.prompt_digest(self.system_prompt, self.prompt_template)

    def check(self, context: Mapping[str, Any] | None = None) -> None:
        """Raise now for what would otherwise only show up at call time: the vendor and
        endpoint, an API key when the vendor needs one, and (given ``context``) that the
        template renders with it.

        Raises:
            MissingAPIKeyError: no key; the message names the environment variable.
            ConfigError / PromptError: as at construction, or a context key is missing.
        """
        config = self.endpoint()
        resolve_api_key(config, self.api_key)
        if context is not None:
            self.render_prompt("", context)

    def price(self) -> Price | None:
        """This critic's model price (:func:`cross_judge.pricing.price_for`), if known."""
        return _config.price_of(self.endpoint().name, self.model, registry_generation())

    def no_price_message(self, config: VendorConfig) -> str:
        """The error message for a budget given to this critic, on ``config``'s vendor,
        while its model has no known price: it says how to register one."""
        return self._parts().caller.no_price_message(config)

    def json_mode_on(self, config: VendorConfig) -> bool:
        """Whether requests to ``config`` ask for a JSON object (``response_format``
        ``json_object``): ``json_mode`` when True or False; with ``"auto"``, when the
        vendor accepts JSON mode and the prompt mentions JSON."""
        return self._parts().builder.json_mode_on(config)

    def answer_schema(self) -> AnswerSchema:
        """The JSON schema of this critic's answer (:func:`._answer_schema.answer_schema`):
        its prompt's ``output`` fields (``kind``, ``confidence``, ``reasoning`` without a
        prompt file) with the label an enum of ``labels``, named after the prompt and its
        version. Sent with ``structured="schema"``/``"tool"``/``"auto"``."""
        return self._parts().builder.answer_schema()

    def structured_form(self, config: VendorConfig) -> StructuredForm:
        """The answer shape this critic's next request to ``config`` asks for:
        ``structured=None`` follows ``json_mode`` (:meth:`json_mode_on`); ``"auto"`` starts
        at the strongest form the vendor may take
        (:meth:`~cross_judge.transport.WireAdapter.auto_form`) and keeps any step down the
        endpoint and model made (:mod:`._stepdown`); other values are sent as given."""
        return self._parts().builder.structured_form(config)

    def json_allowed(self, config: VendorConfig) -> bool:
        """Whether ``structured="auto"`` may step down to JSON mode on ``config``: the
        vendor is not known to refuse it and the prompt mentions JSON (vendors refuse a
        ``json_object`` request whose messages do not)."""
        return self._parts().builder.json_allowed(config)

    def logprobs_asked(self, config: VendorConfig) -> int | None:
        """How many alternatives per token this critic asks ``config`` for
        (:data:`~cross_judge.critic._request.TOP_LOGPROBS`), or ``None``: with
        ``confidence="logprob"``, and with ``"auto"`` where the vendor may serve them and
        has not refused them."""
        return self._parts().builder.logprobs_asked(config)

    def render_prompt(self, query: str | Item, context: Mapping[str, Any] | None = None) -> str:
        """The user message for ``query`` (a string with ``context``, or an
        :class:`~cross_judge.batch.Item`): every field filled literally, nothing evaluated.

        Raises:
            PromptError: a field has no value, or ``context`` tries to override ``query``.
            ItemTooLongError: the query plus the context values the template uses are
                longer than ``max_item_chars``.
        """
        return self._parts().builder.render_prompt(query, context)

    def build_messages(
        self, query: str | Item, context: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages sent for ``query`` (system message only if non-empty)."""
        return self._parts().builder.build_messages(query, context)

    def item_messages(
        self, item: str | Item, context: Mapping[str, Any] | None = None
    ) -> tuple[Message, ...]:
        """The messages that ask this critic about ``item`` (an
        :class:`~cross_judge.batch.Item`, or its query with ``context``): the system
        prompt when there is one, then the user's turn, the rendered template as one text
        part (the wire protocol's adapter sends them in its own form).

        Raises:
            PromptError: as :meth:`render_prompt`.
        """
        return self._parts().builder.item_messages(item, context)

    def build_request(
        self, item: str | Item, context: Mapping[str, Any] | None = None
    ) -> ChatRequest:
        """The wire-neutral request sent for ``item`` (an :class:`~cross_judge.batch.Item`,
        or its query as a string with ``context``): :meth:`item_messages` and this
        critic's settings.

        Raises:
            PromptError: as :meth:`render_prompt`.
            TypeError: an item and a ``context`` both given (an item carries its own).
        """
        return self._parts().builder.build_request(item, context)

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
                with other calls). The call's worst case is reserved before it is sent
                (waiting for calls in flight to settle if only they hold the room); if it
                cannot fit, nothing is sent: ``SKIPPED``, ``error_kind="budget"``. A call
                whose vendor reports no usable usage is charged its worst case.
            cache: a response cache for this call, instead of the critic's own ``cache``.

        Every attempt first waits its turn under the vendor's limits (``max_concurrency``,
        ``rpm`` and the pause after a 429, see :func:`~cross_judge.vendors.set_vendor_limits`),
        shared with every critic on the vendor; that wait counts against ``deadline``, not
        against the per-attempt ``timeout``.

        With ``samples=n > 1`` the verdict is the vote of ``n`` calls made at once
        (:func:`combine_samples`), each reserving its own worst case from ``budget``.

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
        parts = self._parts()
        if parts.settings.rubric is not None:
            return await parts.rubric.judge(query, context, budget=budget, cache=cache)
        request = parts.builder.build_request(query, context)
        return await self.judge_request(request, budget=budget, cache=cache)

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
        caller = self._parts().caller
        store = cache if cache is not None else self._cache
        verdict = await caller.judge_request(
            request, price=self.price(), budget=budget, cache=store
        )
        if request.render_cut:
            verdict.render_cut = [dict(cut) for cut in request.render_cut]
        return verdict

    def judge_sync(self, query: str | Item, context: Mapping[str, Any] | None = None) -> Verdict:
        """:meth:`judge` for synchronous code; also works inside a running event loop."""
        return _sync.run_sync(self.judge, query, context)

    def may_step(self, before: ChatRequest, after: ChatRequest) -> bool:
        """Whether this critic lets a refused request ``before`` be sent as ``after``
        (:func:`._stepdown.step_down`): a weaker answer shape with ``structured="auto"``,
        no token probabilities with ``confidence="auto"``. A critic that asked for a form
        or for ``"logprob"`` explicitly gets the refusal as its verdict instead."""
        return self._parts().caller.may_step(before, after)

    def verdict_from_batch(
        self, outcome: Completion | CallFailure, *, structured: str | None = None
    ) -> Verdict:
        """The verdict for this critic's request answered through a vendor's batch API
        (:mod:`cross_judge.transport._batch_codecs`): a completion parsed as a live answer is
        and priced at the model's batch rate, a failure an ``ERROR`` of its kind; redacted
        as live verdicts are; one attempt, ``elapsed_s`` 0 (the batch's time is the job's).
        ``structured`` is the answer shape asked for (a batch has no step down).

        Raises:
            ConfigError: a completion reports usage, and the model has a price but no batch
                rate (its vendor has no batch API the price table knows).
        """
        assembler = self._parts().assembler
        return assembler.from_batch(outcome, price=self.price(), structured=structured)

    def unfinished_verdict(
        self,
        kind: str,
        message: str,
        error_kind: ErrorKind,
        *,
        elapsed_s: float = 0.0,
        sent: bool = True,
    ) -> Verdict:
        """A verdict, with this critic's provenance, for a call cut off by a deadline
        (``kind="ERROR"``) or saved by early stop (``"SKIPPED"``): $0 if never ``sent``
        (when the price is known), else no known cost (a vendor may bill its prompt)."""
        return self._parts().assembler.unfinished(
            kind, message, error_kind, price=self.price(), elapsed_s=elapsed_s, sent=sent
        )

    def truncation_message(
        self, max_tokens: int, usage: Usage | None, *, retried_from: int | None = None
    ) -> str:
        """Why an answer cut off at ``max_tokens`` (``usage`` its call's) is no verdict;
        ``retried_from`` is the cap of the first call when this was the retry at twice it
        (``retry_truncated``), which the message then says."""
        assembler = self._parts().assembler
        return assembler.truncation_message(max_tokens, usage, retried_from=retried_from)

    def item_rubric(self, item: Item) -> Rubric:
        """The rubric ``item`` is judged on: the prompt's, or with a unit prompt (``unit:
        turn``/``step``) one criterion per turn or step of the item (``turn-4``,
        ``step-7.no_harm``).

        Raises:
            ConfigError: the critic has no rubric.
            ItemError: a unit prompt and an item without turns or steps, or more than the
                prompt's ``max_units``.
        """
        return self._parts().rubric.rubric_for(item)

    def check_rubric_options(self) -> None:
        """Raise for what a rubric critic cannot do.

        Raises:
            ConfigError: ``samples > 1``; ``confidence="logprob"`` with ``one_call``.
        """
        self._parts().rubric.check_options()

    def rubric_requests(
        self,
        query: str | Item,
        context: Mapping[str, Any] | None = None,
        criteria: Sequence[str] | None = None,
    ) -> list[tuple[tuple[str, ...], ChatRequest]]:
        """The requests that ask about ``criteria`` (default: every criterion), each with
        the criterion ids it answers: one per criterion (``per_criterion``) or one for all
        (``one_call``), in rubric order.

        Raises:
            PromptError: as :meth:`build_request`, or ``context`` sets a rubric field
                (``criterion``, ``criterion_id``, ``criteria``).
            ConfigError: the critic has no rubric, or ``criteria`` names an unknown id,
                none, or an id twice, or is a string (see :meth:`Rubric.select
                <cross_judge.rubric.Rubric.select>`).
        """
        return self._parts().rubric.requests(query, context, criteria)

    async def judge_rubric(
        self,
        query: str | Item,
        context: Mapping[str, Any] | None = None,
        *,
        criteria: Sequence[str] | None = None,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """Judge ``query`` on ``criteria`` (default all): the requests of
        :meth:`rubric_requests`, sent at once, put together by :meth:`rubric_verdict`.
        Never raises for a vendor failure (a failed call fails its criteria)."""
        path = self._parts().rubric
        return await path.judge(query, context, criteria=criteria, budget=budget, cache=cache)

    async def judge_rubric_requests(
        self,
        plan: Sequence[tuple[tuple[str, ...], ChatRequest]],
        *,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """:meth:`judge_rubric` for requests already built by :meth:`rubric_requests`."""
        return await self._parts().rubric.judge_requests(plan, budget=budget, cache=cache)

    def check_renders(self, query: str | Item, context: Mapping[str, Any] | None = None) -> None:
        """Render every prompt this critic would send for the item, sending nothing: its
        one prompt, or a rubric critic's prompt per criterion (or for all).

        Raises:
            PromptError: as :meth:`render_prompt` / :meth:`rubric_requests`.
        """
        self._parts().rubric.check_renders(query, context)

    def read_criteria(self, text: str) -> dict[str, CriterionVerdict] | str:
        """The criteria of a ``one_call`` answer (:func:`~._rubric.parse_criteria` with this
        critic's answer keys and the prompt's examples)."""
        return self._parts().rubric.read_criteria(text)

    def rubric_verdict(self, parts: Sequence[tuple[Sequence[str], Verdict]]) -> Verdict:
        """One verdict from this critic's calls on a rubric, each ``(criterion ids, call
        verdict)`` (a failed call fails its criteria): ``PASS``/``FAIL`` by the critic's own
        total over the criteria it answered, ``confidence`` their mean; with none answered,
        the first call's failure, ``criteria`` still set. Usage, cost and attempts are
        summed; ``raw_response`` is a ``one_call`` answer's text."""
        return self._parts().rubric.verdict(parts)

    async def aclose(self) -> None:
        """Close this critic's pooled connections on the running loop (shared with other
        critics on the same endpoint, which reopen on their next call). An injected
        ``http_client`` is left open: it belongs to the caller."""
        if self._injected is None:
            await aclose_sessions([self.endpoint().base_url])

    async def __aenter__(self) -> Critic:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

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
        data["prompt"] = getattr(self.prompt, "ref", self.prompt)  # a spec's reference
        endpoint = self.endpoint()
        data["base_url"] = _config.strip_userinfo(endpoint.base_url)
        data["vendor"], data["api_key_env"] = endpoint.name, endpoint.api_key_env
        data["prompt_sha256"] = self.prompt_sha256
        data["cache"] = str(self._cache.path) if self._cache is not None else None
        calibration = self._calibration_in_use()
        data["calibration"] = calibration.to_dict() if calibration is not None else None
        return data

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """:meth:`model_dump` as JSON."""
        return json.dumps(self.model_dump(), indent=indent, ensure_ascii=False)
