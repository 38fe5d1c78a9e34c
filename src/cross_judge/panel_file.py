"""``PANEL.yaml``: a panel of critics and its vote, written down once and reviewed like code.

:func:`load_panel` reads and checks a panel file and returns a :class:`PanelSpec`;
:meth:`PanelSpec.build` turns it into an :class:`~cross_judge.ensemble.Ensemble` (a file
with ``critics:``) or a :class:`~cross_judge.cascade.Cascade` (a file with ``tiers:``). The
``cross-judge review`` command is built on the two. A panel file::

    voting: majority                  # default majority
    voting_kwargs: {priority: [REJECT, SPLIT, MERGE]}
    early_stop: false                 # optional: true (= staged), staged or cancel
    min_valid: 2                      # optional quorum
    deadline: 120                     # optional, seconds per item
    order: both                       # optional, pairs: fixed (default), random, cyclic, both
    on_flip: tie                      # optional, with order both: tie (default) or abstain
    concurrency: 16                   # optional, items in flight (the CLI's default)
    critics:
      - name: strict-deepseek
        model: deepseek-flash
        vendor: deepseek              # default deepseek
        api_key_env: DEEPSEEK_API_KEY # optional; default the vendor's own variable
        prompt: taxonomy-review@1     # a packaged id@version, or a path
        weight: 1.0
        temperature: 0.0
        max_tokens: 2000
        labels: [KEEP, REJECT]        # optional; default the prompt's
        base_url: https://...         # optional; required for vendor: custom
        timeout: 60                   # optional, seconds per attempt
        max_retries: 2                # optional
        samples: 1                    # optional: ask n times and vote (needs temperature > 0)
        calibration: {method: temperature, temperature: 1.7, n: 200, bins: 10,
                      ece_before: 0.21, ece_after: 0.04}  # optional, see below

**Cascades.** A file has either ``critics:`` (one ensemble) or ``tiers:`` (a cascade:
cheapest tier first; an item goes on to the next tier only when the escalation rule says
the tier's result does not stand)::

    concurrency: 16
    tiers:
      - voting: majority              # each tier takes the keys of an ensemble above
        early_stop: true
        critics: [...]
      - critics: [...]
    escalate:                         # optional; default: on errors and fallbacks only
      agreement_below: 1.0            # a number in [0, 1] (.inf: always), or one per tier
      confidence_below: [0.8, null]   #   that can escalate (null: none at that tier)
      support_below: 0.6              # the confidence behind the consensus, per critic
      on_error: true                  # a critic failed
      on_fallback: true               # no vote decided (quorum, tie)
    final: decide                     # or abstain: the last tier too may leave an item
                                      #   for a human (consensus ABSTAIN)

The ensemble keys (``voting``, ``voting_kwargs``, ``early_stop``, ``min_valid``,
``deadline``, ``order``, ``on_flip``) then belong to each tier, and ``escalate`` and
``final`` to cascades only. Critic names are unique across tiers (they key the results).
Fields of a tier are written as ``tiers[1].critics[0].vendor``.

Checked when loaded, before anything is billed: unknown fields (with a did-you-mean),
wrong types, unknown vendors (listing the known ones), unknown or invalid prompts,
duplicate critic names, the voting strategy and its arguments, the escalation thresholds
(one per tier that can escalate when a list). Each problem is reported as
``<file>:<line>: <field>: <what to change>``, with the field written as a path
(``critics[1].vendor``); all problems of a file are reported at once in a
:class:`PanelError` (a field that cannot be read at all hides the checks across fields,
such as duplicate names, until it is fixed).

**No secrets in files.** A field that looks like a literal key (``api_key``, ``token``,
``secret``, ...) is refused, and so is an ``api_key_env`` that is not an environment
variable name (one that looks like ``sk-...``). Neither value is ever repeated in a
message. Keys are read from the environment when the ensemble is built; a missing
variable is a :class:`PanelError` that names it.

**Base URLs** are checked when loaded (:func:`cross_judge.vendors.check_base_url`): a
port outside 1-65535, ``abc``, ``http://[::1``, a missing or unsupported scheme is
reported at ``critics[i].base_url`` with its line, never at call time. Credentials
(``user:password@``) are refused in a panel file.

**Calibrated confidence.** A critic's optional ``calibration:`` is the ``to_dict()``
mapping of a :class:`~cross_judge.reliability.ConfidenceCalibration` (``method``,
``temperature`` or ``breakpoints`` and ``values``, ``n``, ``bins``, ``ece_before``,
``ece_after``), as ``cross-judge stats OUT.jsonl --gold GOLD.jsonl --fit-confidence
temperature`` prints it; it becomes ``Critic(calibration=...)``, so each verdict that
states a confidence gets the calibrated one. Unknown keys (with a did-you-mean), missing
keys and values that break the fit's invariants are reported at the key's line.

**Simulated critics.** ``vendor: simulated`` critics are answered by a local
:class:`cross_judge.testing.VendorServer` (seeded random answers, not a language model),
for dry runs and the shipped examples. An optional ``persona:`` mapping shapes each one
(``accuracy``, ``latency``, ``jitter``, ``style``, ``seed``, ``bias``, ``labels``,
``fault_rate``); its model name (default ``sim-<name>``) selects it on the server, so
simulated critics need distinct models (across tiers too). A simulated critic with
``samples`` > 1 gets a persona that resamples (:class:`~cross_judge.testing.Persona`'s
``resample=True``): its samples are independent draws, not one answer repeated. An
optional top-level ``simulator:`` mapping configures that server: ``error_correlation``
(in [0, 1); above 0 the personas err together on hard items, as real judges do) and
``difficulty_seed``.
``load_panel(path).build()`` starts one server for the simulated critics of every tier,
which lives as long as the ensemble or cascade (stopped when it is garbage collected, or
at exit). To control its lifetime, start it yourself::

    spec = load_panel("panel.yaml")
    with spec.simulator() as server:          # personas of every simulated critic
        ensemble = spec.build(simulator_url=server.url)

This module does not call any model, read items or write results.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import weakref
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ._yaml import YAMLSyntaxError
from ._yaml import load as load_yaml
from .errors import ConfigError, PromptError
from .transport.redaction import redact

if TYPE_CHECKING:
    from .cascade import Cascade, Escalation
    from .critic.cache import ResponseCache
    from .critic.critic import Critic
    from .critic.prompts import PromptSpec
    from .ensemble import Ensemble
    from .testing import Persona, VendorServer

__all__ = [
    "SIMULATED_VENDOR",
    "CriticSpec",
    "EscalateSpec",
    "PanelError",
    "PanelProblem",
    "PanelSpec",
    "PersonaSpec",
    "SimulatorSpec",
    "TierSpec",
    "load_panel",
    "parse_panel",
]

logger = logging.getLogger("cross_judge")

SIMULATED_VENDOR = "simulated"
"""The vendor name of critics answered by a local :class:`~cross_judge.testing.VendorServer`."""

# Sent nowhere: simulated critics are checked at load time against this placeholder, and
# built against the caller's server URL.
_PLACEHOLDER_URL = "http://127.0.0.1:9/v1"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Field names that would hold a literal secret. Matched only against unknown fields, so
# max_tokens and api_key_env are never taken for one.
_SECRET_FIELD = re.compile(
    r"(api_?key|apikey|(^|_)key$|^key|token|secret|passw|credential|bearer|auth)"
)


# -- errors -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelProblem:
    """One problem in a panel file: the field as a path (``critics[1].vendor``, ``""`` for
    the file as a whole), its 1-based YAML line when known, and what to change."""

    field: str
    line: int | None
    message: str

    def format(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line is not None else source
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class PanelError(ConfigError):
    """A panel file that cannot be used. ``problems`` lists every problem found; the
    message has one ``<file>:<line>: <field>: <message>`` line per problem. Never holds
    the value of a secret-looking field."""

    def __init__(self, source: str, problems: Sequence[PanelProblem]) -> None:
        self.source = source
        self.problems = [replace(p, message=redact(p.message)) for p in problems]
        super().__init__(redact("\n".join(p.format(source) for p in self.problems)))


class _Problem(ValueError):
    """Raised by a validator for a field below the one pydantic reports it at."""

    def __init__(self, field: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field = field


class _Problems(ValueError):
    """Raised by a validator that found several problems, each at its own field."""

    def __init__(self, problems: Sequence[_Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = list(problems)


# -- schema -------------------------------------------------------------------------------------

_MODEL_CONFIG = ConfigDict(
    extra="forbid", strict=True, frozen=True, hide_input_in_errors=True, allow_inf_nan=False
)


class PersonaSpec(BaseModel):
    """How a ``vendor: simulated`` critic answers (see :class:`cross_judge.testing.Persona`).

    ``labels`` defaults to the critic's labels (or its prompt's).
    """

    model_config = _MODEL_CONFIG

    accuracy: float = Field(default=0.9, ge=0.0, le=1.0)
    latency: float = Field(default=0.0, ge=0.0)
    jitter: float = Field(default=0.0, ge=0.0)
    style: Literal["json", "fenced", "think", "messy"] = "json"
    seed: int = 0
    bias: dict[str, float] | None = None
    labels: list[str] | None = None
    fault_rate: float = Field(default=0.0, ge=0.0, le=1.0)


class CriticSpec(BaseModel):
    """One critic of a panel file. See the module docstring for the fields.

    ``calibration`` is kept as the file's mapping, checked when loaded: :meth:`to_critic`
    gives the critic the :class:`~cross_judge.reliability.ConfidenceCalibration` it holds.
    """

    model_config = _MODEL_CONFIG

    name: str = Field(min_length=1)
    model: str | None = Field(default=None, min_length=1)
    vendor: str = "deepseek"
    base_url: str | None = None
    api_key_env: str | None = None
    prompt: str | None = None
    weight: float = Field(default=1.0, ge=0.0)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=2000, ge=1)
    labels: list[str] | None = None
    timeout: float = Field(default=60.0, gt=0.0)
    max_retries: int = Field(default=2, ge=0)
    samples: int = Field(default=1, ge=1)
    persona: PersonaSpec | None = None
    calibration: dict[str, Any] | None = None

    _prompt: PromptSpec | None = PrivateAttr(default=None)

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_as_text(cls, value: object) -> object:
        # YAML reads [1, 2, 3] as numbers; such labels are meant as text.
        if isinstance(value, list):
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value

    @field_validator("calibration", mode="before")
    @classmethod
    def _calibration(cls, value: object) -> object:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError(
                "expected a mapping such as {method: temperature, temperature: 1.7, n: 200, "
                f"bins: 10, ece_before: 0.21, ece_after: 0.04}}, got {_yaml_type(value)}; "
                f"{_CALIBRATION_FIX}"
            )
        _check_calibration(value)
        return value

    @field_validator("vendor")
    @classmethod
    def _known_vendor(cls, value: str) -> str:
        from .vendors import all_vendors

        name = value.strip().lower()
        known = sorted([*all_vendors(), SIMULATED_VENDOR])
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"unknown vendor {value!r}{hint}; known: {', '.join(known)}. For another "
                "OpenAI-compatible endpoint use vendor: custom with base_url: https://host/v1"
            )
        return name

    @field_validator("base_url")
    @classmethod
    def _plain_url(cls, value: str) -> str:
        from .vendors import base_url_problem

        # Not echoed either: a URL can carry credentials.
        problem = base_url_problem(value)
        if problem is not None:
            raise ValueError(f"{problem} (the value given is not shown)")
        if "@" in urlsplit(value).netloc:
            raise ValueError(
                "holds credentials (user:password@host), which a panel file must not; remove "
                "them and name the environment variable of the key with api_key_env (the value "
                "given is not shown)"
            )
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        # The value is never repeated: a key pasted here must not end up in a log.
        if _looks_like_key(value):
            raise ValueError(
                "looks like an API key, not the name of an environment variable (the value is "
                "not shown). Put the key in an environment variable and give its name here, "
                "e.g. api_key_env: DEEPSEEK_API_KEY"
            )
        if not _ENV_NAME.match(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits and _, not "
                "starting with a digit), e.g. DEEPSEEK_API_KEY; the value given is not shown"
            )
        return value

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> CriticSpec:
        context = info.context if isinstance(info.context, Mapping) else {}
        base_dir = Path(context.get("base_dir") or Path.cwd())
        simulated = self.vendor == SIMULATED_VENDOR
        if simulated:
            for field in ("base_url", "api_key_env"):
                if getattr(self, field) is not None:
                    raise _Problem(
                        (field,),
                        "simulated critics are answered by a local simulator; remove "
                        f"{field}, or use a real vendor",
                    )
        else:
            if self.persona is not None:
                raise _Problem(
                    ("persona",),
                    f"persona shapes simulated critics only; set vendor: {SIMULATED_VENDOR} "
                    "or remove persona",
                )
            if self.model is None:
                raise _Problem(
                    ("model",), "is required: the vendor's model id, e.g. deepseek-flash"
                )
        if self.prompt is not None:
            self._prompt = _load_prompt(self.prompt, base_dir)
        try:
            critic = self.to_critic(base_url=_PLACEHOLDER_URL if simulated else None)
        except ConfigError as exc:
            raise _Problem((), _without_critic_prefix(str(exc), self.name)) from None
        if simulated:
            try:
                self.to_persona(critic)
            except ValueError as exc:
                raise _Problem(("persona",), str(exc)) from None
        return self

    # -- building -----------------------------------------------------------------------

    @property
    def simulated(self) -> bool:
        """True for ``vendor: simulated``."""
        return self.vendor == SIMULATED_VENDOR

    @property
    def model_name(self) -> str:
        """The model sent to the vendor (``sim-<name>`` for a simulated critic without one)."""
        return self.model or f"sim-{self.name}"

    @property
    def prompt_spec(self) -> PromptSpec | None:
        """The loaded prompt, or ``None`` for the Critic's default prompt."""
        return self._prompt

    def to_critic(self, *, api_key: str | None = None, base_url: str | None = None) -> Critic:
        """The :class:`~cross_judge.core.Critic` this describes. ``base_url`` overrides the
        file's (a simulated critic needs the simulator's).

        Raises:
            ConfigError: as :class:`~cross_judge.core.Critic` does.
        """
        from .critic.critic import Critic

        kwargs: dict[str, Any] = {}
        if self._prompt is not None:
            kwargs["prompt"] = self._prompt
        if self.calibration is not None:
            kwargs["calibration"] = dict(self.calibration)
        return Critic(
            name=self.name,
            model=self.model_name,
            vendor="custom" if self.simulated else self.vendor,
            base_url=base_url or self.base_url,
            api_key=api_key,
            weight=self.weight,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            labels=list(self.labels) if self.labels is not None else None,
            timeout=self.timeout,
            max_retries=self.max_retries,
            samples=self.samples,
            **kwargs,
        )

    def to_persona(self, critic: Critic | None = None) -> Persona:
        """The simulator persona of a simulated critic; it answers in the critic's labels
        unless ``persona.labels`` says otherwise.

        Raises:
            ValueError: an invalid persona (``bias`` naming a label it does not use, ...).
        """
        from .testing import Persona

        spec = self.persona or PersonaSpec()
        critic = critic or self.to_critic(base_url=_PLACEHOLDER_URL)
        labels = spec.labels or (list(critic.labels) if critic.labels else None)
        kwargs: dict[str, Any] = {"labels": tuple(labels)} if labels else {}
        return Persona(
            self.model_name,
            accuracy=spec.accuracy,
            latency=spec.latency,
            jitter=spec.jitter,
            style=spec.style,
            seed=spec.seed,
            bias=spec.bias,
            fault_rate=spec.fault_rate,
            resample=self.samples > 1,
            **kwargs,
        )


_CALIBRATION_FIX = (
    "paste the calibration: line that cross-judge stats OUT.jsonl --gold GOLD.jsonl "
    "--fit-confidence temperature (or isotonic) prints for this critic, or remove calibration"
)


def _check_calibration(data: dict[str, Any]) -> None:
    """Raise :class:`_Problems` for each unknown key of a ``calibration:`` mapping (with a
    did-you-mean), else :class:`_Problem` for what
    :meth:`~cross_judge.reliability.ConfidenceCalibration.from_dict` refuses, at the key it
    names when it names one."""
    import dataclasses

    from .stats.confidence_calibration import ConfidenceCalibration

    known = [f.name for f in dataclasses.fields(ConfidenceCalibration)]
    unknown = []
    for key in data:
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if key not in known:
            unknown.append(
                _Problem((key,), f"is not a calibration field{hint}; known: {', '.join(known)}")
            )
    if unknown:
        raise _Problems(unknown)
    try:
        ConfidenceCalibration.from_dict(data)
    except ConfigError as exc:
        message = str(exc).replace("(use None)", "(remove it)")
        key, _, rest = message.partition(" ")
        if key in data and rest.startswith("must "):
            raise _Problem((key,), f"{rest}; {_CALIBRATION_FIX}") from None
        raise _Problem((), f"{message}; {_CALIBRATION_FIX}") from None


_ENSEMBLE_FIELDS = (
    "voting",
    "voting_kwargs",
    "early_stop",
    "min_valid",
    "deadline",
    "order",
    "on_flip",
)
_CASCADE_FIELDS = ("escalate", "final")


class _EnsembleFields(BaseModel):
    """The keys of one ensemble: a panel file with ``critics:``, or one of its ``tiers:``."""

    model_config = _MODEL_CONFIG

    voting: str = "majority"
    voting_kwargs: dict[str, Any] = Field(default_factory=dict)
    early_stop: bool | Literal["staged", "cancel"] = False
    min_valid: int | None = Field(default=None, ge=1)
    deadline: float | None = Field(default=None, gt=0.0)
    order: Literal["fixed", "random", "cyclic", "both"] = "fixed"
    on_flip: Literal["tie", "abstain"] = "tie"

    def _ensemble_kwargs(self) -> dict[str, Any]:
        return {
            "voting": self.voting,
            "voting_kwargs": dict(self.voting_kwargs),
            "min_valid": self.min_valid,
            "early_stop": self.early_stop,
            "deadline": self.deadline,
            "order": self.order,
            "on_flip": self.on_flip,
        }

    def _vote_problem(self, critics: Sequence[CriticSpec]) -> _Problem | None:
        """The first problem of this ensemble's vote with ``critics`` (paths relative to
        it), or ``None``."""
        from .ensemble import Ensemble
        from .voting import accepts_kwarg, supports_early_stop, validate_voting

        try:
            validate_voting(self.voting, {})
        except ConfigError as exc:
            return _Problem(("voting",), str(exc))
        try:
            validate_voting(self.voting, self.voting_kwargs)
        except ConfigError as exc:
            return _Problem(("voting_kwargs",), str(exc))
        if self.min_valid is not None:
            if self.min_valid > len(critics):
                return _Problem(
                    ("min_valid",),
                    f"is {self.min_valid}, but the panel has {len(critics)} critics; "
                    "it must be at most that",
                )
            if not accepts_kwarg(self.voting, "min_valid"):
                return _Problem(
                    ("min_valid",), f"voting {self.voting!r} takes no quorum; remove min_valid"
                )
        if self.early_stop and not supports_early_stop(self.voting):
            return _Problem(
                ("early_stop",),
                f"early stop works with voting majority or unanimous, not {self.voting!r}; "
                "set early_stop: false",
            )
        try:
            Ensemble(_placeholder_critics(critics), **self._ensemble_kwargs())
        except ConfigError as exc:
            return _Problem(("voting",), str(exc))
        return None


class TierSpec(_EnsembleFields):
    """One tier of a cascade panel file: the keys of an ensemble panel file (``voting``,
    ``voting_kwargs``, ``early_stop``, ``min_valid``, ``deadline``, ``critics``)."""

    critics: list[CriticSpec] = Field(min_length=1)


class EscalateSpec(BaseModel):
    """A cascade's ``escalate:`` mapping: the fields of :class:`~cross_judge.cascade.
    Escalation`. A threshold (on a tier's agreement, mean confidence or support) is a
    number in [0, 1] (``.inf``: always escalate) or a list with one per tier that can
    escalate (``null``: none at that tier)."""

    model_config = _MODEL_CONFIG

    agreement_below: Any = None
    confidence_below: Any = None
    support_below: Any = None
    on_error: bool = True
    on_fallback: bool = True

    @field_validator("agreement_below", "confidence_below", "support_below")
    @classmethod
    def _threshold(cls, value: Any, info: ValidationInfo) -> Any:
        from .cascade import Escalation

        if value is None:
            return None
        expected = (
            "expected a number in [0, 1] (.inf: always escalate), or a list of them with one "
            "per tier that can escalate (null for none at a tier)"
        )
        if isinstance(value, list):
            for index, entry in enumerate(value):
                if entry is not None and not _is_number(entry):
                    raise _Problem(
                        (index,), f"expected a number in [0, 1] or null, got {_yaml_type(entry)}"
                    )
        elif not _is_number(value):
            raise ValueError(f"{expected}, got {_yaml_type(value)}")
        name = str(info.field_name)
        try:
            Escalation(**{name: value})
        except ConfigError as exc:
            raise _escalation_problem(str(exc)) from None
        return value

    def to_escalation(self) -> Escalation:
        """The :class:`~cross_judge.cascade.Escalation` this describes."""
        from .cascade import Escalation

        return Escalation(
            agreement_below=self.agreement_below,
            confidence_below=self.confidence_below,
            support_below=self.support_below,
            on_error=self.on_error,
            on_fallback=self.on_fallback,
        )


class SimulatorSpec(BaseModel):
    """The ``simulator:`` mapping: settings of the :class:`~cross_judge.testing.VendorServer`
    that answers ``vendor: simulated`` critics."""

    model_config = _MODEL_CONFIG

    error_correlation: float = Field(default=0.0, ge=0.0, lt=1.0)
    difficulty_seed: int = 0


class PanelSpec(_EnsembleFields):
    """A checked panel file. Build it with :func:`load_panel` or :func:`parse_panel`
    (constructing it directly skips the line numbers and resolves relative prompt paths
    against the working directory).

    Attributes:
        voting: a registered voting strategy name.
        voting_kwargs: its arguments (``priority``, ``fallback``, ``errors``, ...).
        early_stop, min_valid, deadline, order, on_flip: as for
            :class:`~cross_judge.ensemble.Ensemble`.
        concurrency: items in flight at once; the CLI's default for ``--concurrency``.
        critics: the panel, in order (empty for a cascade: see ``tiers``).
        tiers: a cascade's tiers, cheapest first; ``None`` for one ensemble.
        escalate: a cascade's escalation rule (``None``: the default :class:`Escalation`).
        final: a cascade's ``final`` mode, ``"decide"`` or ``"abstain"``.
        simulator_config: the file's ``simulator:`` settings, for the simulator of
            ``vendor: simulated`` critics (see :meth:`simulator`).
    """

    concurrency: int | None = Field(default=None, ge=1)
    critics: list[CriticSpec] = Field(default_factory=list)
    tiers: list[TierSpec] | None = Field(default=None, min_length=1)
    escalate: EscalateSpec | None = None
    final: Literal["decide", "abstain"] = "decide"
    simulator_config: SimulatorSpec | None = Field(default=None, alias="simulator")

    _source: str = PrivateAttr(default="<panel>")
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _check_panel(self) -> PanelSpec:
        problems = _shape_problems(self.model_fields_set, self.tiers is not None, self.critics)
        if problems:
            raise _Problems(problems)
        seen: dict[str, tuple[str | int, ...]] = {}
        models: dict[str, tuple[str | int, ...]] = {}
        if self.tiers is None:
            problems = _ensemble_problems(self, self.critics, (), seen, models)
        else:
            for index, tier in enumerate(self.tiers):
                problems += _ensemble_problems(tier, tier.critics, ("tiers", index), seen, models)
            if not problems:
                problems = self._cascade_problems()
        if self.simulator_config is not None and not models:
            problems.append(
                _Problem(
                    ("simulator",),
                    "configures the simulator of vendor: simulated critics, and this panel "
                    "has none; remove it",
                )
            )
        if problems:
            raise _Problems(problems)
        return self

    def _cascade_problems(self) -> list[_Problem]:
        """Problems of the escalation against the tiers, then anything else the
        :class:`~cross_judge.cascade.Cascade` itself refuses."""
        from .cascade import Cascade
        from .ensemble import Ensemble

        tiers = self.tiers or []
        escalation = self.escalation()
        checked = len(tiers) - (self.final == "decide")
        try:
            escalation.check_tiers(checked)
        except ConfigError as exc:
            return [_escalation_problem(str(exc), field_prefix=("escalate",))]
        try:
            Cascade(
                [
                    Ensemble(_placeholder_critics(tier.critics), **tier._ensemble_kwargs())
                    for tier in tiers
                ],
                escalate=escalation,
                final=self.final,
            )
        except ConfigError as exc:
            return [_Problem(("escalate",) if self.escalate is not None else ("tiers",), str(exc))]
        return []

    # -- use ------------------------------------------------------------------------------

    @property
    def source(self) -> str:
        """Where the panel was read from (a path, or ``"<string>"``)."""
        return self._source

    @property
    def is_cascade(self) -> bool:
        """True for a panel with ``tiers:`` (a :class:`~cross_judge.cascade.Cascade`)."""
        return self.tiers is not None

    @property
    def all_critics(self) -> list[CriticSpec]:
        """Every critic: the panel's, or every tier's in tier order."""
        return [spec for _, spec in self._critic_paths()]

    @property
    def simulated_critics(self) -> list[str]:
        """Names of the ``vendor: simulated`` critics (of every tier), in panel order."""
        return [c.name for c in self.all_critics if c.simulated]

    def escalation(self) -> Escalation:
        """The cascade's :class:`~cross_judge.cascade.Escalation` (the default one when the
        file has no ``escalate:``)."""
        from .cascade import Escalation

        return self.escalate.to_escalation() if self.escalate is not None else Escalation()

    def personas(self) -> list[Persona]:
        """The simulator personas of the simulated critics (of every tier), in panel order."""
        return [c.to_persona() for c in self.all_critics if c.simulated]

    def simulator(self, **kwargs: Any) -> VendorServer:
        """A :class:`~cross_judge.testing.VendorServer` (not started) serving every
        simulated critic of every tier, with the file's ``simulator:`` settings;
        ``kwargs`` go to its constructor (and win over the file's). Start it (``with``),
        then :meth:`build` with its ``url``."""
        from .testing import VendorServer

        settings: dict[str, Any] = {}
        if self.simulator_config is not None:
            settings = {
                "error_correlation": self.simulator_config.error_correlation,
                "difficulty_seed": self.simulator_config.difficulty_seed,
            }
        return VendorServer(self.personas(), **{**settings, **kwargs})

    def build(
        self,
        *,
        simulator_url: str | None = None,
        environ: Mapping[str, str] | None = None,
        cache: ResponseCache | bool | str | os.PathLike[str] | None = None,
    ) -> Ensemble | Cascade:
        """The :class:`~cross_judge.ensemble.Ensemble` this panel describes, or for a panel
        with ``tiers:`` the :class:`~cross_judge.cascade.Cascade` (one ensemble per tier).

        Each critic's key is read now from the environment variable its ``api_key_env``
        names (else, at call time, from its vendor's own variable). A vendor that needs a
        key must have one now, so a run never starts only to fail every call.

        Args:
            simulator_url: the base URL of a running :meth:`simulator` for the simulated
                critics. Without it, a panel with simulated critics starts its own
                simulator (one for every tier), which lives as long as the returned
                ensemble or cascade: it is stopped when that is garbage collected, or at
                interpreter exit.
            environ: the environment to read keys from (default ``os.environ``).
            cache: a response cache for every critic (see :class:`~cross_judge.Ensemble`).

        Raises:
            PanelError: a key variable is unset or empty (the message names the variable,
                never a value); nothing is started then.
        """
        from .vendors import get_vendor

        env = os.environ if environ is None else environ
        problems: list[PanelProblem] = []
        keys: dict[str, str | None] = {}
        for path, spec in self._critic_paths():
            if spec.simulated:
                continue
            config = get_vendor(spec.vendor)
            var = spec.api_key_env or config.api_key_env
            key = (env.get(var) or "").strip() or None if var else None
            if key is None and config.requires_api_key:
                problems.append(self._missing_key(path, spec, var or ""))
            keys[spec.name] = key
        if problems:
            raise PanelError(self._source, problems)
        server: VendorServer | None = None
        if self.simulated_critics and not simulator_url:
            server = self.simulator().start()
            simulator_url = server.url
            logger.info(
                "panel %s: critics %s are simulated, answered by a VendorServer started at %s",
                self._source,
                ", ".join(self.simulated_critics),
                simulator_url,
            )

        def critic(spec: CriticSpec) -> Critic:
            if spec.simulated:
                return spec.to_critic(base_url=simulator_url)
            return spec.to_critic(api_key=keys[spec.name])

        panel: Ensemble | Cascade
        try:
            from .ensemble import Ensemble

            if self.tiers is None:
                panel = Ensemble(
                    [critic(s) for s in self.critics], cache=cache, **self._ensemble_kwargs()
                )
            else:
                from .cascade import Cascade

                panel = Cascade(
                    [
                        Ensemble(
                            [critic(s) for s in tier.critics],
                            cache=cache,
                            **tier._ensemble_kwargs(),
                        )
                        for tier in self.tiers
                    ],
                    escalate=self.escalation(),
                    final=self.final,
                )
        except BaseException:
            if server is not None:
                server.stop()
            raise
        if server is not None:
            # The panel owns the server: it is stopped with it (or at exit, since the
            # finalizer runs atexit), and never keeps the panel alive.
            weakref.finalize(panel, server.stop)
        return panel

    def _critic_paths(self) -> list[tuple[tuple[str | int, ...], CriticSpec]]:
        """Each critic with its path in the file (``critics[i]`` or ``tiers[t].critics[i]``)."""
        if self.tiers is None:
            return [(("critics", i), spec) for i, spec in enumerate(self.critics)]
        return [
            (("tiers", t, "critics", i), spec)
            for t, tier in enumerate(self.tiers)
            for i, spec in enumerate(tier.critics)
        ]

    def _missing_key(self, path: tuple[str | int, ...], spec: CriticSpec, var: str) -> PanelProblem:
        if spec.api_key_env is not None:
            return self._problem(
                (*path, "api_key_env"),
                f"the environment variable {var} is not set (or is empty); critic "
                f"{spec.name!r} on {spec.vendor} needs its API key there: export {var}=...",
            )
        return self._problem(
            path,
            f"critic {spec.name!r} on {spec.vendor} needs an API key and the environment "
            f"variable {var} is not set (or is empty): export {var}=..., or name another "
            "variable with api_key_env",
        )

    def _problem(self, path: tuple[str | int, ...], message: str) -> PanelProblem:
        return PanelProblem(_field_name(path), _line_of(self._lines, path), message)


def _shape_problems(given: Collection[str], cascade: bool, critics: object) -> list[_Problem]:
    """A panel is one ensemble (``critics:``) or a cascade (``tiers:``), never both nor
    neither; ``given`` are the top-level keys of the file."""
    problems: list[_Problem] = []
    if not cascade:
        if "critics" not in given:
            problems.append(
                _Problem(
                    ("critics",),
                    f"is required: {_MISSING_HINTS['critics']} (or tiers: [...] for a "
                    "cascade of ensembles)",
                )
            )
        elif critics == []:
            problems.append(_Problem(("critics",), "is empty; list at least one critic"))
        problems += [
            _Problem(
                (name,),
                f"is for a cascade (a panel with tiers:), and this panel is one ensemble "
                f"(critics:); remove {name}, or list the ensembles under tiers:",
            )
            for name in _CASCADE_FIELDS
            if name in given
        ]
        return problems
    if "critics" in given:
        problems.append(
            _Problem(
                ("critics",),
                "a panel has either critics: (one ensemble) or tiers: (a cascade), not "
                "both; move these critics into a tier: tiers: [{critics: [...]}, ...]",
            )
        )
    problems += [
        _Problem(
            (name,),
            "in a cascade each tier votes on its own; move it under each tier that "
            f"needs it (tiers[i].{name})",
        )
        for name in _ENSEMBLE_FIELDS
        if name in given
    ]
    return problems


def _ensemble_problems(
    fields: _EnsembleFields,
    critics: Sequence[CriticSpec],
    prefix: tuple[str | int, ...],
    seen: dict[str, tuple[str | int, ...]],
    models: dict[str, tuple[str | int, ...]],
) -> list[_Problem]:
    """Problems of one ensemble (the panel's, or the tier at ``prefix``): critic names
    and simulated models already in ``seen``/``models`` (which this fills), then its vote."""
    problems: list[_Problem] = []
    for index, critic in enumerate(critics):
        path = (*prefix, "critics", index)
        if critic.name in seen:
            problems.append(
                _Problem(
                    (*path, "name"),
                    f"critic name {critic.name!r} is also used by "
                    f"{_field_name(seen[critic.name])}; give each critic a unique name"
                    + (" (names key a cascade's results, across tiers)" if prefix else ""),
                )
            )
        else:
            seen[critic.name] = path
        if critic.simulated:
            if critic.model_name in models:
                problems.append(
                    _Problem(
                        (*path, "model"),
                        f"simulated critics are told apart by model, and {critic.model_name!r} "
                        f"is also the model of {_field_name(models[critic.model_name])}; give "
                        "each simulated critic its own model name",
                    )
                )
            else:
                models[critic.model_name] = path
    if problems:
        return problems
    vote = fields._vote_problem(critics)
    if vote is None:
        return []
    return [_Problem((*prefix, *vote.field), str(vote))]


def _placeholder_critics(critics: Sequence[CriticSpec]) -> list[Critic]:
    """The critics, for checks only: simulated ones pointed at an address never called."""
    return [c.to_critic(base_url=_PLACEHOLDER_URL if c.simulated else None) for c in critics]


_ESCALATION_MESSAGE = re.compile(r"^Escalation\.(\w+)(?:\[(\d+)\])? (.*)$", re.DOTALL)


def _escalation_problem(message: str, *, field_prefix: tuple[str, ...] = ()) -> _Problem:
    """An :class:`~cross_judge.cascade.Escalation` error (``"Escalation.<name>[i] ..."``)
    as a problem at the threshold it names: below ``field_prefix`` plus its name, or (no
    prefix: from the validator of that threshold) at its list entry; ``inf`` written as
    YAML writes it."""
    match = _ESCALATION_MESSAGE.match(message)
    path: tuple[str | int, ...] = field_prefix
    if match is not None:
        if field_prefix:
            path = (*field_prefix, match.group(1))
        if match.group(2) is not None:
            path = (*path, int(match.group(2)))
        message = match.group(3)
    message = message.replace("or inf to always", "or .inf to always")
    return _Problem(path, message)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- loading ------------------------------------------------------------------------------------


def load_panel(path: str | os.PathLike[str]) -> PanelSpec:
    """Read and check a panel file. Relative prompt paths resolve against its folder.

    Raises:
        PanelError: the file is missing, unreadable, not valid YAML (which includes a
            tagged value that cannot be read, nesting deeper than 64 levels and aliases
            expanding past 100,000 values), or any field is wrong; every problem is listed
            with its line.
    """
    source = os.fspath(path)
    try:
        raw = Path(source).read_bytes()
    except FileNotFoundError:
        raise PanelError(source, [PanelProblem("", None, "no such panel file")]) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise PanelError(source, [PanelProblem("", None, f"cannot read it ({reason})")]) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PanelError(
            source, [PanelProblem("", None, f"not UTF-8 text (byte {exc.start})")]
        ) from None
    return parse_panel(text, source=source, base_dir=Path(source).resolve().parent)


def parse_panel(
    text: str, *, source: str = "<string>", base_dir: str | os.PathLike[str] | None = None
) -> PanelSpec:
    """A :class:`PanelSpec` from YAML text. ``source`` names it in messages; relative
    prompt paths resolve against ``base_dir`` (default: the working directory).

    Raises:
        PanelError: as :func:`load_panel`.
    """
    data, lines = _read_yaml(text, source)
    folder = Path(base_dir) if base_dir is not None else Path.cwd()
    try:
        spec = PanelSpec.model_validate(data, context={"base_dir": folder})
    except ValidationError as exc:
        problems = _problems(exc, lines, data)
        # Checked on the file's keys too: a field that cannot be read stops the check of
        # the panel as a whole, and these are worth knowing at once.
        shape = _shape_problems(set(data), data.get("tiers") is not None, data.get("critics"))
        problems += [
            PanelProblem(_field_name(p.field), _line_of(lines, p.field), str(p)) for p in shape
        ]
        unique = {(p.field, p.line, p.message): p for p in problems}
        raise PanelError(source, sorted(unique.values(), key=lambda p: p.line or 0)) from None
    spec._source = source
    spec._lines = lines
    return spec


def _read_yaml(text: str, source: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    def fail(message: str, line: int | None = None, field: str = "") -> PanelError:
        return PanelError(source, [PanelProblem(field, line, message)])

    try:
        node, data = load_yaml(text)
    except YAMLSyntaxError as exc:
        column = f" (column {exc.column})" if exc.column is not None else ""
        raise fail(f"invalid YAML{column}: {exc.problem}", exc.line) from None
    expected = "expected a mapping with at least critics: [...] (or tiers: [...])"
    if data is None:
        raise fail(f"the panel is empty; {expected}")
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise fail(f"{expected}, got {_yaml_type(data)}", 1)
    lines: dict[tuple[str | int, ...], int] = {}
    problems: list[PanelProblem] = []
    _walk(node, (), lines, problems)
    if problems:
        raise PanelError(source, problems)
    return data, lines


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: dict[tuple[str | int, ...], int],
    problems: list[PanelProblem],
) -> None:
    """Record the line of every key and list item; report repeated and non-text keys."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or key_node.tag != "tag:yaml.org,2002:str":
                problems.append(PanelProblem(_field_name(path), line, "field names must be text"))
                continue
            child = (*path, key)
            if child in lines:
                problems.append(
                    PanelProblem(
                        _field_name(child),
                        line,
                        f"is given twice (also on line {lines[child]}); keep one",
                    )
                )
                continue
            lines[child] = line
            _walk(value_node, child, lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _walk(item, child, lines, problems)


def _load_prompt(ref: str, base_dir: Path) -> PromptSpec:
    """A critic's prompt: a path (relative to the panel's folder) or a packaged ref."""
    from .critic.prompts import list_prompts, load_prompt

    head, sep, pin = ref.rpartition("@")
    target = head if sep and _is_path(head, base_dir) else ref
    resolved = ref
    if _is_path(target, base_dir):
        try:
            path = Path(target).expanduser()
        except RuntimeError:  # "~someone/..." for an unknown user: taken as written
            path = Path(target)
        if not path.is_absolute():
            path = base_dir / path
        resolved = str(path) + (f"@{pin}" if target is head else "")
    try:
        return load_prompt(resolved)
    except PromptError as exc:
        message = str(exc)
        if resolved == ref and message.startswith("no packaged prompt"):
            refs = sorted({s.ref for s in list_prompts()} | {s.id for s in list_prompts()})
            close = difflib.get_close_matches(ref, refs, n=1)
            if close:
                message = f"{message} (did you mean {close[0]!r}?)"
        raise _Problem(("prompt",), message) from None


def _is_path(ref: str, base_dir: Path) -> bool:
    if ref.lower().endswith((".yaml", ".yml")) or "/" in ref or os.sep in ref:
        return True
    from .critic.prompts import is_file

    return is_file(base_dir / ref)


def _looks_like_key(value: str) -> bool:
    """Shaped like a vendor key (``sk-...``), or long and random rather than a NAME_LIKE_THIS."""
    lowered = value.lower()
    if lowered.startswith(("sk-", "sk_", "bearer ", "key-")):
        return True
    letters_and_digits = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return len(value) >= 24 and "_" not in value and letters_and_digits


def _without_critic_prefix(message: str, name: str) -> str:
    prefix = f"Critic {name!r}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


# -- messages -----------------------------------------------------------------------------------

_EXPECTED = {
    "float_type": "a number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "string_type": "text",
    "bool_type": "true or false",
    "dict_type": "a mapping",
    "list_type": "a list",
    "model_type": "a mapping of fields",
    "model_attributes_type": "a mapping of fields",
}

_MISSING_HINTS = {
    "name": "a unique name for the critic, e.g. strict-deepseek",
    "model": "the vendor's model id, e.g. deepseek-flash",
    "critics": "the list of critics, each with at least name and model",
}


def _problems(
    exc: ValidationError, lines: Mapping[tuple[str | int, ...], int], data: Any
) -> list[PanelProblem]:
    problems: list[PanelProblem] = []
    for error in exc.errors():
        loc: tuple[str | int, ...] = tuple(p for p in error["loc"] if p != "[key]")
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, _Problems):
            for each in cause.problems:
                path = (*loc, *each.field)
                problems.append(PanelProblem(_field_name(path), _line_of(lines, path), str(each)))
            continue
        if isinstance(cause, _Problem):
            loc = (*loc, *cause.field)
        message = _message(error, loc, cause, data)
        problems.append(PanelProblem(_field_name(loc), _line_of(lines, loc), message))
    return sorted(problems, key=lambda p: p.line or 0)


def _message(error: Any, loc: tuple[str | int, ...], cause: object, data: Any) -> str:
    kind: str = error["type"]
    field = loc[-1] if loc else ""
    if isinstance(cause, Exception):
        return str(cause)
    if kind == "missing":
        hint = _MISSING_HINTS.get(str(field))
        return "is required" + (f": {hint}" if hint else "")
    if kind == "extra_forbidden":
        return _unknown_field(str(field), loc, data)
    if kind in _EXPECTED:
        got = _yaml_type(error.get("input"))
        message = f"expected {_EXPECTED[kind]}, got {got}"
        if kind == "string_type" and got in ("a number", "true or false"):
            message += "; put it in quotes"
        return message
    if kind == "too_short" and field == "critics":
        return "is empty; list at least one critic"
    if kind == "too_short" and field == "tiers":
        return "is empty; list at least one tier (an ensemble: critics: [...]), cheapest first"
    message = str(error["msg"])
    message = re.sub(r"^Input should", "should", message)
    message = message[:1].lower() + message[1:]
    value = error.get("input")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        message += f", got {value!r}"
    return message


def _unknown_field(field: str, loc: tuple[str | int, ...], data: Any) -> str:
    parent = loc[:-1]
    model: type[BaseModel] = CriticSpec
    if parent == ():
        model = PanelSpec
    elif parent[-1] == "persona":
        model = PersonaSpec
    elif len(parent) == 2 and parent[0] == "tiers":
        model = TierSpec
    elif parent == ("escalate",):
        model = EscalateSpec
    elif parent == ("simulator",):
        model = SimulatorSpec
    known = [info.alias or name for name, info in model.model_fields.items()]
    normalized = field.lower().replace("-", "_")
    close = difflib.get_close_matches(normalized, known, n=1, cutoff=0.85)
    if _SECRET_FIELD.search(normalized) and not close:
        suggestion = _default_env_var(parent, data) or "DEEPSEEK_API_KEY"
        where = "" if "critics" in parent else " under each critic"
        return (
            "a literal key in a panel file is refused (the value is not shown): panel files "
            "get copied, shared and committed. Put the key in an environment variable and "
            f"name it{where} instead, e.g. api_key_env: {suggestion}"
        )
    close = close or difflib.get_close_matches(normalized, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"is not a known field{hint}; known fields: {', '.join(known)}"


def _default_env_var(parent: tuple[str | int, ...], data: Any) -> str | None:
    """The key variable of the vendor of the critic at ``parent``, if it has one."""
    from .vendors import all_vendors

    if len(parent) < 2 or parent[-2] != "critics" or not isinstance(data, dict):
        return None
    critics: Any = data
    for part in parent[:-1]:
        if isinstance(critics, dict) and isinstance(part, str):
            critics = critics.get(part)
        elif isinstance(critics, list) and isinstance(part, int) and part < len(critics):
            critics = critics[part]
        else:
            return None
    index = parent[-1]
    if not isinstance(critics, list) or not isinstance(index, int) or index >= len(critics):
        return None
    critic = critics[index]
    vendor = critic.get("vendor", "deepseek") if isinstance(critic, dict) else None
    config = all_vendors().get(vendor.strip().lower()) if isinstance(vendor, str) else None
    return config.api_key_env if config is not None else None


def _field_name(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _line_of(lines: Mapping[tuple[str | int, ...], int], path: tuple[str | int, ...]) -> int | None:
    """The line of ``path``, else of its nearest ancestor in the file."""
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return None


def _yaml_type(value: object) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return type(value).__name__
