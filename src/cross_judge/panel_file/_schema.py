"""The schema of a panel file: its pydantic models, and every check made when it is loaded.

:class:`PanelSpec` (a file), :class:`TierSpec` (a cascade's tier), :class:`CriticSpec` (a
critic), :class:`PersonaSpec`, :class:`EscalateSpec` and :class:`SimulatorSpec` (defined in
:mod:`._simulator_spec`) are strict, frozen models; their validators check each field and
then the file as a whole (unknown vendors, prompts that do not load, duplicate names, the
vote and its arguments, the escalation against the tiers), raising a
:class:`~._problems.FieldProblem` at the field a problem belongs to. Checks across fields
build what the file describes (with :mod:`cross_judge.panel_file._builder`) and report what
that refuses, so a file that loads builds. The models' building methods (``to_critic``,
``simulator``, ``build``, ...) call the builder.

What it does not do: read YAML or turn pydantic's errors into messages with lines (the
loader, :mod:`cross_judge.panel_file._loader`), or build anything itself.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..cascade import Cascade, Escalation
from ..critic import (
    ConfidenceMode,
    Critic,
    Effort,
    PromptSpec,
    ResponseCache,
    Structured,
    is_file,
    list_prompts,
    load_prompt,
)
from ..ensemble import Ensemble
from ..errors import ConfigError, PanelError, PromptError
from ..stats import ConfidenceCalibration
from ..vendors import all_vendors, base_url_problem, get_vendor
from ..voting import accepts_kwarg, supports_early_stop, validate_voting
from ._builder import (
    PLACEHOLDER_URL,
    build_panel,
    critic_from_spec,
    ensemble_kwargs,
    persona_from_spec,
    placeholder_critics,
    simulator_for,
)
from ._problems import (
    MISSING_HINTS,
    SPEC_CONFIG,
    FieldProblem,
    FieldProblems,
    PanelProblem,
    field_name,
    is_number,
    line_of,
    yaml_type,
)
from ._simulation import (
    SimulatorTruth,
    pair_prompt,
    rubric_problems,
    simulator_record,
)
from ._simulator_spec import SimulatorSpec
from ._vote_labels import vote_label_problem

if TYPE_CHECKING:
    from ..testing import Persona, VendorServer

__all__ = [
    "SIMULATED_VENDOR",
    "CriticSpec",
    "EnsembleFields",
    "EscalateSpec",
    "PanelSpec",
    "PersonaSpec",
    "SimulatorSpec",
    "TierSpec",
    "shape_problems",
]

SIMULATED_VENDOR = "simulated"
"""The vendor name of critics answered by a local :class:`~cross_judge.testing.VendorServer`."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class PolicySpec(BaseModel):
    """A simulated critic's hidden policy (:class:`cross_judge.testing.HiddenPolicy`): it
    answers ``answer`` on every item whose text has the word ``trigger``, unless the prompt
    shows otherwise (an example of such an item labelled differently, or an instruction
    naming the word)."""

    model_config = SPEC_CONFIG

    trigger: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class PersonaSpec(BaseModel):
    """How a ``vendor: simulated`` critic answers: every field of
    :class:`cross_judge.testing.Persona` but its model (the critic's).

    ``labels`` defaults to the critic's labels (or its prompt's); ``confidence`` is
    ``[low, high]``; ``resample`` defaults to the critic's ``samples`` > 1.
    ``position_bias`` needs a prompt that shows a pair (checked by :class:`CriticSpec`)
    and a simulator that knows the pairs' better answers (checked by :class:`PanelSpec`).
    ``criteria_accuracy`` (``{criterion id: accuracy}``, for a rubric prompt) must name
    criteria the simulator knows (checked by :class:`PanelSpec`). The content rules
    (``forbidden_tools``, ``fail_unhandled_errors``, ``needs_context``) answer
    ``fail_label`` (default ``FAIL``), which must be one of the persona's labels (checked
    by :class:`CriticSpec`); ``vision`` is ``ignores``, ``sees`` or ``refuses``.
    ``policy`` (``{trigger, answer}``) and ``anchoring`` (a probability) are the hidden
    policy and the pull of shown examples that alignment is measured with (see
    ``docs/testing.md``).
    """

    model_config = SPEC_CONFIG

    accuracy: float = Field(default=0.9, ge=0.0, le=1.0)
    latency: float = Field(default=0.0, ge=0.0)
    jitter: float = Field(default=0.0, ge=0.0)
    style: Literal["json", "fenced", "think", "messy"] = "json"
    seed: int = 0
    bias: dict[str, float] | None = None
    labels: list[str] | None = None
    fault_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    confidence: list[float] | None = None
    position_bias: float = Field(default=0.0, ge=0.0, le=1.0)
    resample: bool | None = None
    logprob_temperature: float = Field(default=1.0, gt=0.0)
    thinking_tokens: int = Field(default=0, ge=0)
    criteria_accuracy: dict[str, float] | None = None
    forbidden_tools: list[str] | None = None
    fail_unhandled_errors: bool = False
    needs_context: bool = False
    fail_label: str = Field(default="FAIL", min_length=1)
    vision: Literal["ignores", "sees", "refuses"] = "ignores"
    policy: PolicySpec | None = None
    anchoring: float = Field(default=0.0, ge=0.0, le=1.0)

    @field_validator("forbidden_tools", mode="before")
    @classmethod
    def _forbidden_tools(cls, value: object) -> object:
        if value is None:
            return None
        if isinstance(value, list) and all(
            isinstance(t, str) and t and not any(c.isspace() or c == "(" for c in t) for t in value
        ):
            return value
        got = yaml_type(value) if not isinstance(value, list) else repr(value)
        raise ValueError(
            "expected a list of tool names as the trajectory's calls show them (no spaces or "
            f"parentheses), e.g. forbidden_tools: [delete_files, send_email], got {got}"
        )

    @property
    def judges_content(self) -> bool:
        """Whether a content rule that answers ``fail_label`` is on."""
        return bool(self.forbidden_tools or self.fail_unhandled_errors or self.needs_context)

    @field_validator("criteria_accuracy", mode="before")
    @classmethod
    def _criteria_accuracy(cls, value: object) -> object:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError(
                "expected a mapping {criterion id: accuracy in [0, 1]}, e.g. "
                f"criteria_accuracy: {{correct: 0.9, cites: 0.7}}, got {yaml_type(value)}"
            )
        for cid, accuracy in value.items():
            if not (is_number(accuracy) and 0.0 <= accuracy <= 1.0):
                got = repr(accuracy) if is_number(accuracy) else yaml_type(accuracy)
                raise FieldProblem(
                    (cid,), f"expected an accuracy in [0, 1] (0.9: right 9 times in 10), got {got}"
                )
        return {str(cid): float(accuracy) for cid, accuracy in value.items()}

    @field_validator("confidence", mode="before")
    @classmethod
    def _low_then_high(cls, value: object) -> object:
        if value is None:
            return None
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(is_number(v) for v in value)
            and 0.0 <= value[0] <= value[1] <= 1.0
        ):
            return [float(v) for v in value]
        got = f"[{', '.join(map(str, value))}]" if isinstance(value, list) else yaml_type(value)
        raise ValueError(
            "expected [low, high] with 0 <= low <= high <= 1, e.g. [0.6, 0.95] (right answers "
            f"state a confidence drawn from it, wrong ones from its lower half), got {got}"
        )


def _fail_like(labels: Sequence[str]) -> str:
    """The label most like a failure among ``labels`` (for a fix's example)."""
    for label in labels:
        if label.upper() in ("FAIL", "REJECT", "NO", "BAD", "WRONG", "INCORRECT"):
            return label
    return labels[-1]


class CriticSpec(BaseModel):
    """One critic of a panel file. :mod:`cross_judge.panel_file` describes the fields.

    ``calibration`` is kept as the file's mapping, checked when loaded: :meth:`to_critic`
    gives the critic the :class:`~cross_judge.reliability.ConfidenceCalibration` it holds.
    """

    model_config = SPEC_CONFIG

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
    structured: Structured | None = None
    effort: Effort | None = None
    thinking_budget: int | None = None
    confidence: ConfidenceMode = "stated"
    retry_truncated: bool = True
    family: str | None = Field(default=None, min_length=1)
    vision: bool | None = None

    _prompt: PromptSpec | None = PrivateAttr(default=None)

    @field_validator("structured", mode="before")
    @classmethod
    def _structured(cls, value: object) -> object:
        if value is False:  # YAML 1.1 reads a bare off (or no, false) as false
            return "off"
        if value is not None and value not in _STRUCTURED:
            raise ValueError(
                "must be auto (the strongest form the vendor takes), schema (a JSON schema the "
                "vendor enforces), tool (Anthropic: a forced tool), json (any JSON object) or "
                f"off (nothing); got {_shown(value)}; or leave it out to follow json_mode"
            )
        return value

    @field_validator("effort", mode="before")
    @classmethod
    def _effort(cls, value: object) -> object:
        if value is not None and value not in _EFFORTS:
            raise ValueError(
                f"must be low, medium or high (a reasoning model's effort); got {_shown(value)}; "
                "or leave it out for the vendor's default"
            )
        return value

    @field_validator("thinking_budget", mode="before")
    @classmethod
    def _thinking_budget(cls, value: object) -> object:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(
                f"expected a whole number of tokens a reasoning model may think, got "
                f"{yaml_type(value)}; e.g. thinking_budget: 2048, or leave it out"
            )
        if value < 1:
            raise ValueError(
                f"must be a number of tokens >= 1 (Anthropic takes 1024 at least), got {value}; "
                "or leave it out for no thinking budget"
            )
        return value

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: object) -> object:
        if value not in _CONFIDENCE_MODES:
            raise ValueError(
                "must be stated (the number the model writes), logprob (the label's token "
                "probability; needs labels and a vendor serving logprobs) or auto (logprob "
                f"where served, else stated); got {_shown(value)}"
            )
        return value

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
                f"bins: 10, ece_before: 0.21, ece_after: 0.04}}, got {yaml_type(value)}; "
                f"{_CALIBRATION_FIX}"
            )
        _check_calibration(value)
        return value

    @field_validator("vendor")
    @classmethod
    def _known_vendor(cls, value: str) -> str:
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
                    raise FieldProblem(
                        (field,),
                        "simulated critics are answered by a local simulator; remove "
                        f"{field}, or use a real vendor",
                    )
        else:
            if self.persona is not None:
                raise FieldProblem(
                    ("persona",),
                    f"persona shapes simulated critics only; set vendor: {SIMULATED_VENDOR} "
                    "or remove persona",
                )
            if self.model is None:
                raise FieldProblem(
                    ("model",), "is required: the vendor's model id, e.g. deepseek-flash"
                )
        if self.prompt is not None:
            self._prompt = _load_prompt(self.prompt, base_dir)
        try:
            critic = self.to_critic(base_url=PLACEHOLDER_URL if simulated else None)
        except ConfigError as exc:
            at = self._answer_setting_at_fault(PLACEHOLDER_URL if simulated else None)
            raise FieldProblem(at, _without_critic_prefix(str(exc), self.name)) from None
        if simulated:
            persona = self.persona
            labels = (persona.labels if persona is not None else None) or critic.labels
            if (
                persona is not None
                and persona.judges_content
                and labels
                and persona.fail_label not in labels
            ):
                raise FieldProblem(
                    ("persona", "fail_label"),
                    f"is {persona.fail_label!r}, the label the content rules (forbidden_tools, "
                    f"fail_unhandled_errors, needs_context) answer, and this critic answers "
                    f"{list(labels)}; set fail_label to the label meaning a failure, e.g. "
                    f"fail_label: {_fail_like(labels)}",
                )
            try:
                self.to_persona(critic)
            except ValueError as exc:
                raise FieldProblem(("persona",), str(exc)) from None
            biased = self.persona is not None and self.persona.position_bias > 0
            if biased and not pair_prompt(critic.prompt_template):
                prompt = self.prompt or "the default prompt"
                raise FieldProblem(
                    ("persona", "position_bias"),
                    f"leans towards the answer shown first in a pair, and {prompt} shows no "
                    "pair (the simulator reads one in <item>, <response_a> and <response_b> "
                    "fences); use prompt: pairwise, or remove position_bias",
                )
        return self

    def _answer_setting_at_fault(self, base_url: str | None) -> tuple[str, ...]:
        """The answer setting (``structured``, ``effort``, ...) a Critic refused, as a field
        path: the first one, in the order of ``_ANSWER_SETTINGS``, with which the
        critic cannot be built (for two settings that conflict, the later one); ``()``
        when the critic cannot be built without them either."""
        given = [name for name in _ANSWER_SETTINGS if name in self.model_fields_set]
        defaults = {name: CriticSpec.model_fields[name].default for name in given}
        for kept in range(len(given) + 1):
            trial = self.model_copy(update={name: defaults[name] for name in given[kept:]})
            try:
                trial.to_critic(base_url=base_url)
            except ConfigError:
                return (given[kept - 1],) if kept else ()
        return ()

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
        return critic_from_spec(self, api_key=api_key, base_url=base_url)

    def to_persona(self, critic: Critic | None = None) -> Persona:
        """The simulator persona of a simulated critic; it answers in the critic's labels
        unless ``persona.labels`` says otherwise.

        Raises:
            ValueError: an invalid persona (``bias`` naming a label it does not use, ...).
        """
        return persona_from_spec(self, self.persona or PersonaSpec(), critic)


_CALIBRATION_FIX = (
    "paste the calibration: line that cross-judge stats OUT.jsonl --gold GOLD.jsonl "
    "--fit-confidence temperature (or isotonic) prints for this critic, or remove calibration"
)


def _check_calibration(data: dict[str, Any]) -> None:
    """Raise :class:`FieldProblems` for each unknown key of a ``calibration:`` mapping (with a
    did-you-mean), else :class:`FieldProblem` for what
    :meth:`~cross_judge.reliability.ConfidenceCalibration.from_dict` refuses, at the key it
    names when it names one."""
    known = [f.name for f in dataclasses.fields(ConfidenceCalibration)]
    unknown = []
    for key in data:
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if key not in known:
            unknown.append(
                FieldProblem((key,), f"is not a calibration field{hint}; known: {', '.join(known)}")
            )
    if unknown:
        raise FieldProblems(unknown)
    try:
        ConfidenceCalibration.from_dict(data)
    except ConfigError as exc:
        message = str(exc).replace("(use None)", "(remove it)")
        key, _, rest = message.partition(" ")
        if key in data and rest.startswith("must "):
            raise FieldProblem((key,), f"{rest}; {_CALIBRATION_FIX}") from None
        raise FieldProblem((), f"{message}; {_CALIBRATION_FIX}") from None


_ENSEMBLE_FIELDS = (
    "voting",
    "voting_kwargs",
    "early_stop",
    "min_valid",
    "deadline",
    "order",
    "on_flip",
    "pass_threshold",
)
_CASCADE_FIELDS = ("escalate", "final")


class EnsembleFields(BaseModel):
    """The keys of one ensemble: a panel file with ``critics:``, or one of its ``tiers:``."""

    model_config = SPEC_CONFIG

    voting: str = "majority"
    voting_kwargs: dict[str, Any] = Field(default_factory=dict)
    early_stop: bool | Literal["staged", "cancel"] = False
    min_valid: int | None = Field(default=None, ge=1)
    deadline: float | None = Field(default=None, gt=0.0)
    order: Literal["fixed", "random", "cyclic", "both"] = "fixed"
    on_flip: Literal["tie", "abstain"] = "tie"
    pass_threshold: float | None = Field(default=None, ge=0.0, le=1.0)

    def _vote_problem(self, critics: Sequence[CriticSpec]) -> FieldProblem | None:
        """The first problem of this ensemble's vote with ``critics`` (paths relative to
        it), or ``None``."""
        try:
            validate_voting(self.voting, {})
        except ConfigError as exc:
            return FieldProblem(("voting",), str(exc))
        try:
            validate_voting(self.voting, self.voting_kwargs)
        except ConfigError as exc:
            return FieldProblem(("voting_kwargs",), str(exc))
        if self.min_valid is not None:
            if self.min_valid > len(critics):
                return FieldProblem(
                    ("min_valid",),
                    f"is {self.min_valid}, but the panel has {len(critics)} critics; "
                    "it must be at most that",
                )
            if not accepts_kwarg(self.voting, "min_valid"):
                return FieldProblem(
                    ("min_valid",), f"voting {self.voting!r} takes no quorum; remove min_valid"
                )
        if self.early_stop and not supports_early_stop(self.voting):
            return FieldProblem(
                ("early_stop",),
                f"early stop works with voting majority or unanimous, not {self.voting!r}; "
                "set early_stop: false",
            )
        try:
            built = placeholder_critics(critics)
            labels = vote_label_problem(self, built)  # at voting_kwargs.<keyword>, with its line
            if labels is not None:
                return labels
            Ensemble(built, **ensemble_kwargs(self))
        except ConfigError as exc:
            return FieldProblem(("voting",), str(exc))
        return None


class TierSpec(EnsembleFields):
    """One tier of a cascade panel file: the keys of an ensemble panel file (``voting``,
    ``voting_kwargs``, ``early_stop``, ``min_valid``, ``deadline``, ``critics``)."""

    critics: list[CriticSpec] = Field(min_length=1)


class EscalateSpec(BaseModel):
    """A cascade's ``escalate:`` mapping: the fields of :class:`~cross_judge.cascade.
    Escalation`. A threshold (on a tier's agreement, mean confidence or support) is a
    number in [0, 1] (``.inf``: always escalate) or a list with one per tier that can
    escalate (``null``: none at that tier); in a cascade of rubric panels also a mapping
    from criterion id to either (``support_below: {correct: 0.9}``). ``on_dispute``: a
    criterion (or, set true, an item) whose valid answers disagree goes on; by default
    on for rubric cascades only."""

    model_config = SPEC_CONFIG

    agreement_below: Any = None
    confidence_below: Any = None
    support_below: Any = None
    on_error: bool = True
    on_fallback: bool = True
    on_dispute: bool | None = None

    @field_validator("agreement_below", "confidence_below", "support_below")
    @classmethod
    def _threshold(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        expected = (
            "expected a number in [0, 1] (.inf: always escalate), a list of them with one "
            "per tier that can escalate (null for none at a tier), or, for a rubric, a "
            "mapping from criterion id to either"
        )
        entries = value.items() if isinstance(value, dict) else [(None, value)]
        for key, entry in entries:
            where: tuple[Any, ...] = () if key is None else (key,)
            if key is not None and not isinstance(key, str):
                raise FieldProblem(where, f"a criterion id must be text, got {yaml_type(key)}")
            if isinstance(entry, list):
                for index, item in enumerate(entry):
                    if item is not None and not is_number(item):
                        raise FieldProblem(
                            (*where, index),
                            f"expected a number in [0, 1] or null, got {yaml_type(item)}",
                        )
            elif not is_number(entry) and not (key is not None and entry is None):
                raise FieldProblem(where, f"{expected}, got {yaml_type(entry)}")
        name = str(info.field_name)
        try:
            Escalation(**{name: value})
        except ConfigError as exc:
            raise _escalation_problem(str(exc)) from None
        return value

    def to_escalation(self) -> Escalation:
        """The :class:`~cross_judge.cascade.Escalation` this describes."""
        return Escalation(
            agreement_below=self.agreement_below,
            confidence_below=self.confidence_below,
            support_below=self.support_below,
            on_error=self.on_error,
            on_fallback=self.on_fallback,
            on_dispute=self.on_dispute,
        )


class PanelSpec(EnsembleFields):
    """A checked panel file. Build it with :func:`load_panel` or :func:`parse_panel`
    (constructing it directly skips the line numbers and resolves relative prompt paths
    against the working directory).

    Attributes:
        voting: a registered voting strategy name.
        voting_kwargs: its arguments (``priority``, ``fallback``, ``errors``, ...).
        early_stop, min_valid, deadline, order, on_flip, pass_threshold: as for
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
    def _remember_origin(self, info: ValidationInfo) -> PanelSpec:
        # Where the file was read from and the line of each field, for the problems found
        # later (a missing key): the loader passes them in the validation context.
        context = info.context if isinstance(info.context, Mapping) else {}
        if "source" in context:
            self._source = str(context["source"])
        if "lines" in context:
            self._lines = dict(context["lines"])
        return self

    @model_validator(mode="after")
    def _check_panel(self) -> PanelSpec:
        problems = shape_problems(self.model_fields_set, self.tiers is not None, self.critics)
        if problems:
            raise FieldProblems(problems)
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
                FieldProblem(
                    ("simulator",),
                    "configures the simulator of vendor: simulated critics, and this panel "
                    "has none; remove it",
                )
            )
        if not problems:
            problems = self._simulator_problems()
        if problems:
            raise FieldProblems(problems)
        return self

    def _simulator_problems(self) -> list[FieldProblem]:
        """What the simulated critics would do with what the simulator is told: position
        bias with no pair's better answer known, gold labels a critic does not answer."""
        config = self.simulator_config
        truth = config.truth if config is not None else SimulatorTruth()
        problems: list[FieldProblem] = []
        for path, spec in self._critic_paths():
            if not spec.simulated:
                continue
            if (
                spec.persona is not None
                and spec.persona.position_bias > 0
                and not truth.knows_pairs
            ):
                problems.append(
                    FieldProblem(
                        (*path, "persona", "position_bias"),
                        "shows only on pairs whose better answer the simulator knows, and it "
                        "knows no pair's better answer (each pair would get one label in both "
                        "orders); give simulator: {items: ITEMS.jsonl, gold: GOLD.jsonl} (the "
                        "pairs' gold labels: A, B or TIE) or simulator: {better: {QUERY: "
                        "BETTER ANSWER}} or simulator: {strengths: {CANDIDATE: STRENGTH}}",
                    )
                )
            critic = spec.to_critic(base_url=PLACEHOLDER_URL)
            if not truth.gold or not critic.labels or pair_prompt(critic.prompt_template):
                continue
            # Exactly as written: stats --gold compares labels as written too.
            outside = sorted(set(truth.gold.values()) - set(critic.labels))
            if outside:
                shown = ", ".join(repr(g) for g in outside[:3]) + (
                    ", ..." if len(outside) > 3 else ""
                )
                these = "gold label" if len(outside) == 1 else "gold labels"
                verb = "is not a label" if len(outside) == 1 else "are not labels"
                problems.append(
                    FieldProblem(
                        ("simulator", "gold"),
                        f"{these} {shown} {verb} of simulated critic {spec.name!r} "
                        f"({', '.join(critic.labels)}): right answers would be refused as "
                        "outside its labels; correct the gold file, or give the critic "
                        "labels: [...] that include them",
                    )
                )
        return problems + rubric_problems(self, self._critic_paths())

    def _cascade_problems(self) -> list[FieldProblem]:
        """Problems of the escalation against the tiers, then anything else the
        :class:`~cross_judge.cascade.Cascade` itself refuses."""
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
                    Ensemble(placeholder_critics(tier.critics), **ensemble_kwargs(tier))
                    for tier in tiers
                ],
                escalate=escalation,
                final=self.final,
            )
        except ConfigError as exc:
            return [
                FieldProblem(("escalate",) if self.escalate is not None else ("tiers",), str(exc))
            ]
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
        return self.escalate.to_escalation() if self.escalate is not None else Escalation()

    def simulator_record(self) -> dict[str, Any] | None:
        """What the simulator of this panel's simulated critics knows, JSON-ready, as a
        run records it (``cross-judge review`` writes it to the manifest's
        ``options.simulator``); ``None`` without simulated critics. Its ``gold`` is
        ``False`` when the simulator was told no item's truth: the critics' accuracy
        against the user's gold labels then measures nothing. See
        :func:`cross_judge.panel_file._simulation.simulator_record` for every key."""
        return simulator_record(self)

    def personas(self) -> list[Persona]:
        """The simulator personas of the simulated critics (of every tier), in panel order."""
        return [c.to_persona() for c in self.all_critics if c.simulated]

    def simulator(self, **kwargs: Any) -> VendorServer:
        """A :class:`~cross_judge.testing.VendorServer` (not started) serving every
        simulated critic of every tier, with the file's ``simulator:`` settings;
        ``kwargs`` go to its constructor (and win over the file's). Start it (``with``),
        then :meth:`build` with its ``url``."""
        return simulator_for(self, **kwargs)

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
        keys = self._api_keys(os.environ if environ is None else environ)
        return build_panel(self, keys, simulator_url=simulator_url, cache=cache)

    def _api_keys(self, env: Mapping[str, str]) -> dict[str, str | None]:
        """The key of each real critic, by name, read from ``env`` (``None``: none set, and
        its vendor needs none).

        Raises:
            PanelError: a vendor that needs a key has none (every such critic is listed).
        """
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
        return keys

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
        return PanelProblem(field_name(path), line_of(self._lines, path), message)


def shape_problems(given: Collection[str], cascade: bool, critics: object) -> list[FieldProblem]:
    """A panel is one ensemble (``critics:``) or a cascade (``tiers:``), never both nor
    neither; ``given`` are the top-level keys of the file."""
    problems: list[FieldProblem] = []
    if not cascade:
        if "critics" not in given:
            problems.append(
                FieldProblem(
                    ("critics",),
                    f"is required: {MISSING_HINTS['critics']} (or tiers: [...] for a "
                    "cascade of ensembles)",
                )
            )
        elif critics == []:
            problems.append(FieldProblem(("critics",), "is empty; list at least one critic"))
        problems += [
            FieldProblem(
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
            FieldProblem(
                ("critics",),
                "a panel has either critics: (one ensemble) or tiers: (a cascade), not "
                "both; move these critics into a tier: tiers: [{critics: [...]}, ...]",
            )
        )
    problems += [
        FieldProblem(
            (name,),
            "in a cascade each tier votes on its own; move it under each tier that "
            f"needs it (tiers[i].{name})",
        )
        for name in _ENSEMBLE_FIELDS
        if name in given
    ]
    return problems


def _ensemble_problems(
    fields: EnsembleFields,
    critics: Sequence[CriticSpec],
    prefix: tuple[str | int, ...],
    seen: dict[str, tuple[str | int, ...]],
    models: dict[str, tuple[str | int, ...]],
) -> list[FieldProblem]:
    """Problems of one ensemble (the panel's, or the tier at ``prefix``): critic names
    and simulated models already in ``seen``/``models`` (which this fills), then its vote."""
    problems: list[FieldProblem] = []
    for index, critic in enumerate(critics):
        path = (*prefix, "critics", index)
        if critic.name in seen:
            problems.append(
                FieldProblem(
                    (*path, "name"),
                    f"critic name {critic.name!r} is also used by "
                    f"{field_name(seen[critic.name])}; give each critic a unique name"
                    + (" (names key a cascade's results, across tiers)" if prefix else ""),
                )
            )
        else:
            seen[critic.name] = path
        if critic.simulated:
            if critic.model_name in models:
                problems.append(
                    FieldProblem(
                        (*path, "model"),
                        f"simulated critics are told apart by model, and {critic.model_name!r} "
                        f"is also the model of {field_name(models[critic.model_name])}; give "
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
    return [FieldProblem((*prefix, *vote.field), str(vote))]


_ESCALATION_MESSAGE = re.compile(r"^Escalation\.(\w+)(?:\[(\d+)\])? (.*)$", re.DOTALL)


def _escalation_problem(message: str, *, field_prefix: tuple[str, ...] = ()) -> FieldProblem:
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
    return FieldProblem(path, message)


def _load_prompt(ref: str, base_dir: Path) -> PromptSpec:
    """A critic's prompt: a path (relative to the panel's folder) or a packaged ref."""
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
        raise FieldProblem(("prompt",), message) from None


def _is_path(ref: str, base_dir: Path) -> bool:
    if ref.lower().endswith((".yaml", ".yml")) or "/" in ref or os.sep in ref:
        return True
    return is_file(base_dir / ref)


def _looks_like_key(value: str) -> bool:
    """Shaped like a vendor key (``sk-...``), or long and random rather than a NAME_LIKE_THIS."""
    lowered = value.lower()
    if lowered.startswith(("sk-", "sk_", "bearer ", "key-")):
        return True
    letters_and_digits = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return len(value) >= 24 and "_" not in value and letters_and_digits


_ANSWER_SETTINGS = ("structured", "effort", "thinking_budget", "confidence", "retry_truncated")
"""A critic's answer settings, in the order a refused one is looked for."""
_STRUCTURED = get_args(Structured)
_EFFORTS = get_args(Effort)
_CONFIDENCE_MODES = get_args(ConfidenceMode)


def _shown(value: object) -> str:
    """A refused setting as a message shows it: text quoted, anything else by its type."""
    return repr(value) if isinstance(value, str) else yaml_type(value)


def _without_critic_prefix(message: str, name: str) -> str:
    prefix = f"Critic {name!r}: "
    return message[len(prefix) :] if message.startswith(prefix) else message
