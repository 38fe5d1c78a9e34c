"""The :class:`Critic`: one LLM, on one vendor, with one prompt, judging one item at a time.

``await critic.judge(query)`` renders the prompt, calls the vendor (pooled connection,
retries, per-attempt timeout, overall deadline), parses the answer and returns a
:class:`~cross_judge.verdict.Verdict`. It never raises for anything the vendor does: every
failure is a verdict with ``kind="ERROR"`` or ``"PARSE_FAIL"`` and a classified
``error_kind``. It raises only for programming mistakes (unknown vendor, bad template,
missing context key), and those surface at construction or before any request is sent.

It does not vote or fan out (see :mod:`cross_judge.ensemble`), and keeps no state between
calls other than the shared connection pool.

This module holds the class itself: its fields, the checks made at construction, its
vendor, price and prompt provenance, and its export. Its methods for the rest come from
the classes it is made of, one module per concern: building the request
(:mod:`.request`), the call path (:mod:`.calls`) and turning an answer into a verdict
(:mod:`.assembly`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError
from ..pricing import Price, price_for, registry_generation
from ..stats import ConfidenceCalibration
from ..transport import (
    HTTPSession,
    HttpxSession,
    SyncDuckSession,
    aclose_sessions,
    protocol_adapter,
)
from ..vendors import VendorConfig, get_vendor, resolve_api_key, with_base_url
from .assembly import VerdictAssembly
from .calls import CallPath
from .parsing import LABEL_KEYS, REASONING_KEYS, ExampleAnswer, normalize_label
from .request import RequestBuilder
from .rubric import RubricMethods
from .template import Template

if TYPE_CHECKING:
    from .cache import ResponseCache
    from .prompts import PromptSpec

logger = logging.getLogger("cross_judge")

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

DEFAULT_PROMPT_TEMPLATE = (
    "Judge the following query:\n{query}\n\n"
    "Output JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1), reasoning."
)
"""cross-judge 0.1's default user template, unchanged."""

DEFAULT_SYSTEM_PROMPT = "You are a careful judge. Output strict JSON only."
"""cross-judge 0.1's default system prompt, unchanged."""

JsonMode = bool | Literal["auto"]

Structured = Literal["auto", "schema", "tool", "json", "off"]
"""``Critic(structured=...)``: the answer shape asked of the vendor (see :class:`Critic`)."""

Effort = Literal["low", "medium", "high"]
"""``Critic(effort=...)``: a reasoning model's effort."""

ConfidenceMode = Literal["stated", "logprob", "auto"]
"""``Critic(confidence=...)``: where a verdict's confidence comes from."""

_STRUCTURED: tuple[str, ...] = get_args(Structured)
_EFFORTS: tuple[str, ...] = get_args(Effort)
_CONFIDENCE_MODES: tuple[str, ...] = get_args(ConfidenceMode)

DEFAULT_MAX_ITEM_CHARS = 1_000_000
"""Critic's default ``max_item_chars``: above any context window at ~4 characters a token."""


@dataclass(eq=False)
class Critic(RequestBuilder, CallPath, VerdictAssembly, RubricMethods):
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
        calibration: a :class:`~cross_judge.stats._confidence_calibration.ConfidenceCalibration`
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
        if self.family is not None and (
            not isinstance(self.family, str) or not self.family.strip()
        ):
            raise ConfigError(
                f"Critic {self.name!r}: family must be a non-empty string such as 'openai', "
                f"or None, got {self.family!r}"
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
        self.endpoint()  # unknown vendor / custom without base_url: fail now
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
        adapter = protocol_adapter(self.endpoint().protocol)
        if self.json_mode is True and "json" not in adapter.forms:
            raise ConfigError(
                f"Critic {self.name!r}: {adapter.title} has no JSON mode; ask for "
                "JSON in the prompt (the packaged prompts do) and set json_mode='auto'"
            )
        if self.http_client is not None:
            if not adapter.takes_http_client:
                raise ConfigError(
                    f"Critic {self.name!r}: http_client is for OpenAI-compatible vendors; "
                    f"vendor {self.endpoint().name!r} speaks {self.endpoint().protocol!r}, "
                    "so leave http_client out (its SDK client is pooled per event loop)"
                )
            self._injected = _wrap_client(self.name, self.http_client)
        self._check_samples()
        self._check_answer_options()
        self.check_rubric_options()
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

    def use_answer_keys(self, label_keys: Sequence[str], reasoning_keys: Sequence[str]) -> None:
        """Read the label and the reasoning of an answer from these JSON keys, highest
        precedence first, instead of :data:`~cross_judge.critic.parsing.LABEL_KEYS` and
        :data:`~cross_judge.critic.parsing.REASONING_KEYS` (``kind`` and ``reasoning``
        first). The legacy :class:`~cross_judge.reviewer.Reviewer` reads cross-judge 0.1's
        ``verdict`` and ``rationale`` first."""
        self._label_keys = tuple(label_keys)
        self._reasoning_keys = tuple(reasoning_keys)

    def _check_samples(self) -> None:
        """Raise unless ``samples`` is an integer >= 1 that can sample: more than one
        sample needs a temperature > 0 where the protocol sends one.

        Raises:
            ConfigError: saying what to change.
        """
        n = self.samples
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"Critic {self.name!r}: samples must be an integer >= 1, got {n!r}")
        config = self.endpoint()
        # no temperature is sent: the vendor samples at its own default
        unsent = not protocol_adapter(config.protocol).sends_temperature(config, self.effort)
        if n > 1 and self.temperature == 0 and not unsent:
            raise ConfigError(
                f"Critic {self.name!r}: samples={n} needs a temperature > 0: at temperature 0 "
                f"the {n} answers would be the same answer billed {n} times; set e.g. "
                "temperature=0.7, or samples=1"
            )

    def _check_answer_options(self) -> None:
        """Raise unless ``structured``, ``effort``, ``thinking_budget``, ``confidence`` and
        ``retry_truncated`` are valid and the vendor can take them as asked.

        Raises:
            ConfigError: saying what to change.
        """
        where = f"Critic {self.name!r}"
        config = self.endpoint()
        adapter = protocol_adapter(config.protocol)
        if self.structured not in (None, *_STRUCTURED):
            raise ConfigError(
                f"{where}: structured must be one of {', '.join(map(repr, _STRUCTURED))} or "
                f"None (follow json_mode); got {self.structured!r}"
            )
        if self.structured is not None and self.json_mode != "auto":
            raise ConfigError(
                f"{where}: pass structured= or json_mode=, not both (json_mode=True is "
                "structured='json', json_mode=False is structured='off')"
            )
        if self.structured not in (None, "auto"):
            problem = adapter.form_problem(config, self.structured)
            if problem is not None:
                raise ConfigError(f"{where}: {problem}")
        if self._answer_regex() is not None and self.structured in ("schema", "tool", "json"):
            raise ConfigError(
                f"{where}: its prompt answers in a regex answer_format, not JSON, so "
                f"structured={self.structured!r} cannot apply; use structured='off' or 'auto' "
                "(which then sends no format)"
            )
        if self.effort is not None and self.effort not in _EFFORTS:
            raise ConfigError(
                f"{where}: effort must be 'low', 'medium', 'high' or None; got {self.effort!r}"
            )
        budget = self.thinking_budget
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise ConfigError(
                f"{where}: thinking_budget must be a whole number of tokens >= 1 or None; "
                f"got {budget!r}"
            )
        problem = adapter.reasoning_problem(config, self.effort, budget, self.structured)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")
        if self.confidence not in _CONFIDENCE_MODES:
            raise ConfigError(
                f"{where}: confidence must be 'stated', 'logprob' or 'auto'; got "
                f"{self.confidence!r}"
            )
        if self.confidence == "logprob":
            if config.logprobs is False:
                raise ConfigError(
                    f"{where}: vendor {config.name!r} serves no token probabilities, so "
                    "confidence='logprob' cannot work; use confidence='stated', or 'auto' "
                    "(logprob where served, stated elsewhere)"
                )
            if self.labels is None:
                raise ConfigError(
                    f"{where}: confidence='logprob' renormalises over the label vocabulary; "
                    "give labels=[...] (or a prompt that lists them)"
                )
        if self.confidence == "auto" and config.logprobs is False:
            _say_once(
                (config.name, self.model),
                f"{where}: vendor {config.name!r} serves no token probabilities, so "
                "confidence='auto' uses the confidence the model states "
                "(confidence_source='stated')",
            )
        if not isinstance(self.retry_truncated, bool):
            raise ConfigError(
                f"{where}: retry_truncated must be True or False; got {self.retry_truncated!r}"
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

    def prompt_provenance(self) -> tuple[str | None, str | None]:
        """``(id, version)`` of the prompt this critic judges with, as stamped on its
        verdicts (``prompt_id``, ``prompt_version``): those of its
        :class:`~cross_judge.prompts.PromptSpec` while it still sends that prompt's exact
        text; ``(None, None)`` for a critic without one, or whose ``system_prompt`` or
        ``prompt_template`` was changed since."""
        spec = self._spec_in_use()
        return (None, None) if spec is None else (spec.id, spec.version)

    def _examples(self) -> tuple[ExampleAnswer, ...]:
        """The example answers the prompt shows the model, so that a verbatim copy of one
        is not counted as a vote; none once the template was changed."""
        spec = self._spec_in_use()
        return () if spec is None else spec.examples

    def _answer_regex(self) -> re.Pattern[str] | None:
        """The prompt's ``answer_format`` regex while the critic sends that prompt."""
        spec = self._spec_in_use()
        return None if spec is None else spec.answer_regex

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
        config = self.endpoint()
        resolve_api_key(config, self.api_key)
        if context is not None:
            self.render_prompt("", context)

    def price(self) -> Price | None:
        """This critic's model price (:func:`cross_judge.pricing.price_for`), if known."""
        vendor, generation = self.endpoint().name, registry_generation()
        memo = self._price_memo
        if memo is None or memo[:3] != (vendor, self.model, generation):
            memo = self._price_memo = (
                vendor,
                self.model,
                generation,
                price_for(vendor, self.model),
            )
        return memo[3]

    def no_price_message(self, config: VendorConfig) -> str:
        """The error message for a budget given to this critic, on ``config``'s vendor,
        while its model has no known price: it says how to register one."""
        return (
            f"Critic {self.name!r}: a budget needs the price of model {self.model!r} on vendor "
            f"{config.name!r}, and none is known; add it with cross_judge.register_price("
            f"{self.model!r}, vendor={config.name!r}, input=..., output=...) (USD per million "
            "tokens) or load a price file with cross_judge.load_prices(path)"
        )

    # -- lifecycle ------------------------------------------------------------------------

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
        data["base_url"] = _strip_userinfo(self.endpoint().base_url)
        data["vendor"] = self.endpoint().name
        data["api_key_env"] = self.endpoint().api_key_env
        data["prompt_sha256"] = self.prompt_sha256
        data["cache"] = str(self._cache.path) if self._cache is not None else None
        calibration = self._calibration_in_use()
        data["calibration"] = calibration.to_dict() if calibration is not None else None
        return data

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """:meth:`model_dump` as JSON."""
        return json.dumps(self.model_dump(), indent=indent, ensure_ascii=False)


_said: set[tuple[str, str]] = set()


def _say_once(key: tuple[str, str], message: str) -> None:
    """Log ``message`` at INFO once per process for ``key``."""
    if key not in _said:
        _said.add(key)
        logger.info(message)


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


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
