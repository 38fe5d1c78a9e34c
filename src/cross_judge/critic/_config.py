"""A critic's frozen configuration: what its collaborators read, derived once.

A :class:`~cross_judge.critic._critic.Critic` keeps mutable fields (cross-judge 0.1 code
assigns ``critic.temperature``); :class:`CriticConfig` is a snapshot of them, with what
is derived from them computed once (the compiled template, the prompt spec still in use,
its examples, answer regex, rubric and provenance, the converted calibration, the vendor
endpoint). The critic takes a new snapshot after any field is assigned; the collaborators
that build a request (:mod:`._request`), make the call (:mod:`._calls`), assemble the
verdict (:mod:`._assembly`) and judge a rubric (:mod:`._rubric`) read only it.

The checks a critic makes on its settings are here too, as functions, and so are the
helpers its construction uses. Nothing here sends a request.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from ..content import DEFAULT_LIMITS, RenderLimits
from ..errors import ConfigError, PromptError
from ..pricing import Price, price_for
from ..stats import ConfidenceCalibration
from ..transport import HTTPSession, HttpxSession, SyncDuckSession, protocol_adapter
from ..vendors import VendorConfig
from ._answer_schema import schema_name
from ._item_fields import ITEM_FIELDS, JUDGED_FIELDS
from ._parsing import LABEL_KEYS, REASONING_KEYS, ExampleAnswer, normalize_label
from ._template import Template

if TYPE_CHECKING:
    from ..rubric.models import Rubric
    from ._prompts import PromptSpec

__all__ = [
    "CONFIDENCE_MODES",
    "CRITIC_SETTINGS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_SYSTEM_PROMPT",
    "EFFORTS",
    "STRUCTURED",
    "ConfidenceMode",
    "CriticConfig",
    "Effort",
    "JsonMode",
    "Structured",
    "adopt_prompt",
    "check_answer_options",
    "check_fields",
    "check_number",
    "check_samples",
    "check_sending",
    "check_vision",
    "compile_template",
    "convert_calibration",
    "normalise_labels",
    "price_of",
    "prompt_digest",
    "spec_in_use",
    "strip_userinfo",
    "wrap_client",
]

logger = logging.getLogger("cross_judge")

JsonMode = bool | Literal["auto"]

Structured = Literal["auto", "schema", "tool", "json", "off"]
"""``Critic(structured=...)``: the answer shape asked of the vendor (see :class:`Critic`)."""

Effort = Literal["low", "medium", "high"]
"""``Critic(effort=...)``: a reasoning model's effort."""

ConfidenceMode = Literal["stated", "logprob", "auto"]
"""``Critic(confidence=...)``: where a verdict's confidence comes from."""

DEFAULT_PROMPT_TEMPLATE = (
    "Judge the following query:\n{query}\n\n"
    "Output JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1), reasoning."
)
"""cross-judge 0.1's default user template, unchanged."""

DEFAULT_SYSTEM_PROMPT = "You are a careful judge. Output strict JSON only."
"""cross-judge 0.1's default system prompt, unchanged."""

CRITIC_SETTINGS = (
    "name",
    "model",
    "prompt_template",
    "system_prompt",
    "temperature",
    "max_tokens",
    "api_key",
    "timeout",
    "max_retries",
    "deadline",
    "json_mode",
    "prompt",
    "seed",
    "max_item_chars",
    "vision",
    "labels",
    "samples",
    "structured",
    "effort",
    "thinking_budget",
    "confidence",
    "retry_truncated",
)
"""The :class:`~cross_judge.critic._critic.Critic` fields :meth:`CriticConfig.build` takes
as they are."""

STRUCTURED: tuple[str, ...] = get_args(Structured)
EFFORTS: tuple[str, ...] = get_args(Effort)
CONFIDENCE_MODES: tuple[str, ...] = get_args(ConfidenceMode)


@dataclass(frozen=True, slots=True)
class CriticConfig:
    """One critic's settings as its next call uses them, and what they imply.

    Build with :meth:`build`, which derives the rest from the settings. It holds the
    settings as given (``labels`` a tuple, as assigned: normalised only when the critic
    was constructed with them) and the endpoint resolved from the vendor registry when
    the snapshot was taken.
    """

    name: str
    model: str
    endpoint: VendorConfig
    template: Template
    system_prompt: str
    temperature: float
    max_tokens: int
    api_key: str | None = field(repr=False)
    timeout: float
    max_retries: int
    deadline: float | None
    json_mode: JsonMode
    seed: int | None
    max_item_chars: int | None
    vision: bool | None  # Critic(vision=...): None follows the vendor (sees_images)
    labels: tuple[str, ...] | None
    samples: int
    structured: str | None
    effort: str | None
    thinking_budget: int | None
    confidence: str
    retry_truncated: bool
    calibration: ConfidenceCalibration | None
    label_keys: tuple[str, ...]
    reasoning_keys: tuple[str, ...]
    # Derived, once per snapshot:
    where: str  # "Critic 'name'", how messages name the critic
    spec: PromptSpec | None  # the prompt spec while its exact text is sent
    scores: Mapping[str, float] | None  # the prompt's score map (kept if the text changed)
    examples: tuple[ExampleAnswer, ...]
    answer_regex: re.Pattern[str] | None
    rubric: Rubric | None
    prompt_id: str | None
    prompt_version: str | None
    prompt_sha256: str
    schema_name: str
    mentions_json: bool
    limits: RenderLimits  # how much of a conversation or trajectory is shown
    item_fields: frozenset[str]  # the template's fields an item fills ({reference}, ...)
    unit_limit: int  # the most turns or steps of one item a unit prompt judges

    @property
    def prompt_template(self) -> str:
        """The user template's source."""
        return self.template.source

    @classmethod
    def build(
        cls,
        *,
        name: str,
        model: str,
        endpoint: VendorConfig,
        prompt_template: str,
        system_prompt: str,
        temperature: float = 0.0,
        max_tokens: int = 2000,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        deadline: float | None = None,
        json_mode: JsonMode = "auto",
        prompt: PromptSpec | str | None = None,
        seed: int | None = None,
        max_item_chars: int | None = None,
        vision: bool | None = None,
        labels: Sequence[str] | None = None,
        samples: int = 1,
        structured: str | None = None,
        effort: str | None = None,
        thinking_budget: int | None = None,
        confidence: str = "stated",
        retry_truncated: bool = True,
        calibration: ConfidenceCalibration | None = None,
        label_keys: Sequence[str] = LABEL_KEYS,
        reasoning_keys: Sequence[str] = REASONING_KEYS,
        prompt_sha256: str | None = None,
    ) -> CriticConfig:
        """The configuration of these settings, its derived values computed.

        ``endpoint`` is the vendor configuration the critic calls; ``prompt`` a loaded
        spec (a reference string counts as none: the critic loads it at construction);
        ``prompt_sha256`` the prompt's digest when the caller has it memoised.

        Raises:
            PromptError: the template cannot be compiled or has no ``{query}``.
        """
        where = f"Critic {name!r}"
        spec = spec_in_use(prompt, prompt_template, system_prompt)
        scores = prompt.score if prompt is not None and not isinstance(prompt, str) else None
        template = compile_template(where, prompt_template)
        return cls(
            name=name,
            model=model,
            endpoint=endpoint,
            template=template,
            system_prompt=system_prompt,
            temperature=temperature,
            max_tokens=max_tokens,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            deadline=deadline,
            json_mode=json_mode,
            seed=seed,
            max_item_chars=max_item_chars,
            vision=vision,
            labels=tuple(labels) if labels is not None else None,
            samples=samples,
            structured=structured,
            effort=effort,
            thinking_budget=thinking_budget,
            confidence=confidence,
            retry_truncated=retry_truncated,
            calibration=calibration,
            label_keys=tuple(label_keys),
            reasoning_keys=tuple(reasoning_keys),
            where=where,
            spec=spec,
            scores=scores or None,
            examples=() if spec is None else spec.example_answers,
            answer_regex=None if spec is None else spec.answer_regex,
            rubric=None if spec is None else spec.rubric,
            prompt_id=None if spec is None else spec.id,
            prompt_version=None if spec is None else spec.version,
            prompt_sha256=prompt_sha256 or prompt_digest(system_prompt, prompt_template),
            schema_name="verdict" if spec is None else schema_name(spec.id, spec.version),
            mentions_json="json" in (system_prompt + prompt_template).lower(),
            limits=DEFAULT_LIMITS if spec is None else spec.limits,
            item_fields=template.fields & _ITEM_FIELDS,
            unit_limit=100 if spec is None else spec.unit_limit,
        )


@functools.lru_cache(maxsize=256)
def price_of(vendor: str, model: str, generation: int) -> Price | None:
    """:func:`~cross_judge.pricing.price_for` of ``vendor``'s ``model``, cached per price
    registry ``generation`` (:func:`~cross_judge.pricing.registry_generation`)."""
    return price_for(vendor, model)


def spec_in_use(
    prompt: PromptSpec | str | None, prompt_template: str, system_prompt: str
) -> PromptSpec | None:
    """``prompt`` while the critic still sends its exact text (a template or system prompt
    changed after construction is no longer that prompt); ``None`` otherwise or without
    a loaded spec."""
    if (
        prompt is None
        or isinstance(prompt, str)
        or prompt.template_text != prompt_template
        or prompt.system_prompt != system_prompt
    ):
        return None
    return prompt


@functools.lru_cache(maxsize=256)
def prompt_digest(system_prompt: str, prompt_template: str) -> str:
    """sha256 of the system prompt and template: which exact prompt judged (cached)."""
    blob = json.dumps([system_prompt, prompt_template], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


_ITEM_FIELDS = frozenset(ITEM_FIELDS)


@functools.lru_cache(maxsize=256)
def compile_template(where: str, source: str) -> Template:
    """A critic's compiled user template (``where`` names the critic in errors). Cached:
    a template is immutable, and a critic whose fields change recompiles the same text.

    Raises:
        PromptError: the template cannot be compiled, or has no ``{query}``.
    """
    template = Template.compile(source, what=f"{where} template")
    if not template.fields & set(JUDGED_FIELDS):
        raise PromptError(
            f"{where} template has no {{query}} placeholder (nor {{conversation}} or "
            "{trajectory}), so the item would never reach the model; add {query} where the "
            "item belongs"
        )
    return template


def convert_calibration(
    where: str, calibration: ConfidenceCalibration | Mapping[str, Any] | None
) -> ConfidenceCalibration | None:
    """``calibration`` as a :class:`ConfidenceCalibration` (a ``to_dict()`` mapping is
    converted), or ``None``.

    Raises:
        ConfigError: it is neither a calibration, a valid ``to_dict()`` mapping nor None.
    """
    if calibration is None or isinstance(calibration, ConfidenceCalibration):
        return calibration
    if not isinstance(calibration, Mapping):
        raise ConfigError(
            f"{where}: calibration must be a ConfidenceCalibration (e.g. "
            "cross_judge.reliability.calibrate_confidence(results, gold)[name]), its "
            f"to_dict() form, or None; got {type(calibration).__name__}"
        )
    try:
        return ConfidenceCalibration.from_dict(calibration)
    except ConfigError as exc:
        raise ConfigError(f"{where}: calibration: {exc}") from None


def check_samples(config: CriticConfig) -> None:
    """Raise unless ``samples`` is an integer >= 1 that can sample: more than one sample
    needs a temperature > 0 where the protocol sends one.

    Raises:
        ConfigError: saying what to change.
    """
    n, where, endpoint = config.samples, config.where, config.endpoint
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"{where}: samples must be an integer >= 1, got {n!r}")
    # no temperature is sent: the vendor samples at its own default
    unsent = not protocol_adapter(endpoint.protocol).sends_temperature(endpoint, config.effort)
    if n > 1 and config.temperature == 0 and not unsent:
        raise ConfigError(
            f"{where}: samples={n} needs a temperature > 0: at temperature 0 the {n} answers "
            f"would be the same answer billed {n} times; set e.g. temperature=0.7, or samples=1"
        )


def check_answer_options(config: CriticConfig) -> None:
    """Raise unless ``structured``, ``effort``, ``thinking_budget``, ``confidence`` and
    ``retry_truncated`` are valid and the vendor can take them as asked.

    Raises:
        ConfigError: saying what to change.
    """
    where, endpoint, structured = config.where, config.endpoint, config.structured
    adapter = protocol_adapter(endpoint.protocol)
    if structured not in (None, *STRUCTURED):
        raise ConfigError(
            f"{where}: structured must be one of {', '.join(map(repr, STRUCTURED))} or "
            f"None (follow json_mode); got {structured!r}"
        )
    if structured is not None and config.json_mode != "auto":
        raise ConfigError(
            f"{where}: pass structured= or json_mode=, not both (json_mode=True is "
            "structured='json', json_mode=False is structured='off')"
        )
    if structured not in (None, "auto"):
        problem = adapter.form_problem(endpoint, structured)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")
    if config.answer_regex is not None and structured in ("schema", "tool", "json"):
        raise ConfigError(
            f"{where}: its prompt answers in a regex answer_format, not JSON, so "
            f"structured={structured!r} cannot apply; use structured='off' or 'auto' "
            "(which then sends no format)"
        )
    if config.effort is not None and config.effort not in EFFORTS:
        raise ConfigError(
            f"{where}: effort must be 'low', 'medium', 'high' or None; got {config.effort!r}"
        )
    budget = config.thinking_budget
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise ConfigError(
            f"{where}: thinking_budget must be a whole number of tokens >= 1 or None; "
            f"got {budget!r}"
        )
    problem = adapter.reasoning_problem(endpoint, config.effort, budget, structured)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    if config.confidence not in CONFIDENCE_MODES:
        raise ConfigError(
            f"{where}: confidence must be 'stated', 'logprob' or 'auto'; got {config.confidence!r}"
        )
    if config.confidence == "logprob":
        if endpoint.logprobs is False:
            raise ConfigError(
                f"{where}: vendor {endpoint.name!r} serves no token probabilities, so "
                "confidence='logprob' cannot work; use confidence='stated', or 'auto' "
                "(logprob where served, stated elsewhere)"
            )
        if config.labels is None:
            raise ConfigError(
                f"{where}: confidence='logprob' renormalises over the label vocabulary; "
                "give labels=[...] (or a prompt that lists them)"
            )
    if config.confidence == "auto" and endpoint.logprobs is False:
        _say_once(
            (endpoint.name, config.model),
            f"{where}: vendor {endpoint.name!r} serves no token probabilities, so "
            "confidence='auto' uses the confidence the model states "
            "(confidence_source='stated')",
        )
    if not isinstance(config.retry_truncated, bool):
        raise ConfigError(
            f"{where}: retry_truncated must be True or False; got {config.retry_truncated!r}"
        )


_said: set[tuple[str, str]] = set()


def _say_once(key: tuple[str, str], message: str) -> None:
    """Log ``message`` at INFO once per process for ``key``."""
    if key not in _said:
        _said.add(key)
        logger.info(message)


def check_fields(values: Mapping[str, Any]) -> None:
    """Raise for the first invalid plain setting among a critic's field ``values``: its
    name and model, the numbers, ``family`` and ``json_mode``.

    Raises:
        ConfigError: saying which setting and what it must be.
    """
    name = values["name"]
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("Critic name must be a non-empty string, e.g. name='strict-gpt'")
    if not isinstance(values["model"], str) or not values["model"].strip():
        raise ConfigError(f"Critic {name!r}: model must be a non-empty model id")
    check_number(name, "temperature", values["temperature"], low=0.0, high=2.0)
    check_number(name, "timeout", values["timeout"], low=0.0, low_open=True)
    check_number(name, "weight", values["weight"], low=0.0)
    if values["deadline"] is not None:
        check_number(name, "deadline", values["deadline"], low=0.0, low_open=True)
    for attr, minimum in (
        ("max_tokens", 1),
        ("max_retries", 0),
        ("max_item_chars", 1),
        ("samples", 1),
    ):
        value = values[attr]
        if attr == "max_item_chars" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            none = " or None (no limit)" if attr == "max_item_chars" else ""
            raise ConfigError(
                f"Critic {name!r}: {attr} must be an integer >= {minimum}{none}, got {value!r}"
            )
    family = values["family"]
    if family is not None and (not isinstance(family, str) or not family.strip()):
        raise ConfigError(
            f"Critic {name!r}: family must be a non-empty string such as 'openai', "
            f"or None, got {family!r}"
        )
    if values["json_mode"] not in (True, False, "auto"):
        raise ConfigError(
            f"Critic {name!r}: json_mode must be True, False or 'auto', got {values['json_mode']!r}"
        )


def adopt_prompt(
    values: Mapping[str, Any],
) -> tuple[PromptSpec, str, str, Sequence[str] | None]:
    """``(prompt, prompt_template, system_prompt, labels)`` of a critic given ``prompt=``
    (its field ``values``): the spec loaded (a reference such as ``"taxonomy-review@1"``),
    its texts, and its labels unless the critic gives its own.

    Raises:
        ConfigError: not a spec nor a reference, or given with a template or system prompt.
        PromptError: the reference cannot be loaded.
    """
    from ._prompts import PromptSpec, load_prompt

    name, prompt = values["name"], values["prompt"]
    if isinstance(prompt, str):
        prompt = load_prompt(prompt)
    if not isinstance(prompt, PromptSpec):
        raise ConfigError(
            f"Critic {name!r}: prompt must be a PromptSpec or a reference such as "
            f"'taxonomy-review@1', got {type(prompt).__name__}"
        )
    if (values["prompt_template"], values["system_prompt"]) != (
        DEFAULT_PROMPT_TEMPLATE,
        DEFAULT_SYSTEM_PROMPT,
    ):
        raise ConfigError(
            f"Critic {name!r}: pass either prompt= or prompt_template/system_prompt, "
            "not both (Critic.from_yaml_prompt(..., prompt_template=...) overrides a file)"
        )
    labels = values["labels"]
    if labels is None and prompt.labels:
        labels = list(prompt.labels)
    return prompt, prompt.template_text, prompt.system_prompt, labels


def check_sending(values: Mapping[str, Any], endpoint: VendorConfig) -> HTTPSession | None:
    """Check what a critic of field ``values`` sends to ``endpoint``: its template, JSON
    mode, seed and ``http_client``; return the injected client as a session (``None``: the
    shared pool).

    Raises:
        PromptError: the template cannot be compiled or has no ``{query}``.
        ConfigError: JSON mode the prompt or the protocol cannot take, a non-integer seed,
            an ``http_client`` the protocol cannot use or that is no client.
    """
    name, json_mode = values["name"], values["json_mode"]
    compile_template(f"Critic {name!r}", values["prompt_template"])
    if (
        json_mode is True
        and "json" not in (values["system_prompt"] + values["prompt_template"]).lower()
    ):
        raise ConfigError(
            f"Critic {name!r}: json_mode=True, but neither the system prompt nor the "
            "template mentions JSON, and vendors reject json_object requests then; "
            "mention JSON in the prompt or set json_mode='auto'"
        )
    seed = values["seed"]
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"Critic {name!r}: seed must be an integer or None")
    adapter = protocol_adapter(endpoint.protocol)
    if json_mode is True and "json" not in adapter.forms:
        raise ConfigError(
            f"Critic {name!r}: {adapter.title} has no JSON mode; ask for "
            "JSON in the prompt (the packaged prompts do) and set json_mode='auto'"
        )
    client = values["http_client"]
    if client is None:
        return None
    if not adapter.takes_http_client:
        raise ConfigError(
            f"Critic {name!r}: http_client is for OpenAI-compatible vendors; "
            f"vendor {endpoint.name!r} speaks {endpoint.protocol!r}, "
            "so leave http_client out (its SDK client is pooled per event loop)"
        )
    return wrap_client(name, client)


def check_vision(critic: str, value: object) -> None:
    """Raise unless ``Critic(vision=...)`` is ``True`` (the model sees images, whatever its
    vendor says), ``False`` (it does not: items with images are skipped without a call) or
    ``None`` (the vendor's :func:`~cross_judge.vendors.sees_images` decides).

    Raises:
        ConfigError: naming the critic and the three values.
    """
    if value is not None and not isinstance(value, bool):
        raise ConfigError(
            f"Critic {critic!r}: vision must be True (the model sees images), False (it "
            "does not: items with images are skipped without a call) or None (the "
            f"vendor's table decides); got {value!r}"
        )


def check_number(
    critic: str,
    name: str,
    value: object,
    *,
    low: float,
    high: float | None = None,
    low_open: bool = False,
) -> None:
    """Raise unless ``value`` is a finite number within the bounds (``low_open``: > low).

    Raises:
        ConfigError: naming critic ``critic``'s setting ``name`` and the bounds.
    """
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


def normalise_labels(critic: str, labels: Sequence[str]) -> tuple[str, ...]:
    """``labels`` normalised (:func:`~._parsing.normalize_label`), without repeats.

    Raises:
        ConfigError: a string instead of a list, an unusable label, or no label.
    """
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


def wrap_client(critic: str, client: Any) -> HTTPSession:
    """An injected ``http_client`` as the session a call sends through.

    Raises:
        ConfigError: neither an ``httpx.AsyncClient`` nor an object with ``post()``.
    """
    import httpx

    if isinstance(client, httpx.AsyncClient):
        return HttpxSession(client)
    if callable(getattr(client, "post", None)):
        return SyncDuckSession(client)
    raise ConfigError(
        f"Critic {critic!r}: http_client must be an httpx.AsyncClient or an object with "
        f"post(url, json=..., headers=...); got {type(client).__name__}"
    )


def strip_userinfo(url: str) -> str:
    """``url`` without any ``user:password@`` part."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
