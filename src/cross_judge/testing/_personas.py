"""Who the simulated vendor's critics are: :class:`Persona`, and the pairwise rates
one produces (:func:`pairwise_rates`).

A persona is configuration only: accuracy, vocabulary, bias, confidence, latency, text
style, faults, position bias, resampling, content rules, a hidden policy and anchoring,
all validated when it is built. This module does not draw answers (that is
:mod:`._decisions`, and :mod:`._policy` for the sway) and speaks no HTTP (:mod:`._server`).
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ._policy import HiddenPolicy, check_trigger

__all__ = [
    "LOGPROB_CONCENTRATION",
    "STYLES",
    "VISIONS",
    "PairwiseRates",
    "Persona",
    "Style",
    "Vision",
    "check_latency",
    "checked_criteria_accuracy",
    "pairwise_rates",
]

Style = Literal["json", "fenced", "think", "messy"]
STYLES: frozenset[str] = frozenset({"json", "fenced", "think", "messy"})
"""The names of :data:`Style`, for validation and the command line's choices."""

Vision = Literal["ignores", "sees", "refuses"]
VISIONS: frozenset[str] = frozenset({"ignores", "sees", "refuses"})
"""The names of :data:`Vision`: what a persona does with a request's images."""

LOGPROB_CONCENTRATION = 4.0
"""``k`` of :attr:`Persona.logprob_temperature`'s law: the prior of the served label
probability is ``Beta(k a, k (1 - a))``; larger spreads it less around the accuracy."""


def check_latency(name: str, value: float) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a finite number of
    seconds >= 0 (a latency, jitter, interval or ``Retry-After``)."""
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


@dataclass(frozen=True)
class Persona:
    """A simulated critic, selected by the request's ``model`` field.

    * ``accuracy``: probability that the answer equals the item's truth. With the
      server's ``error_correlation`` > 0 this holds on average over items (of uniform
      difficulty); hard items are answered right less often, easy ones more.
    * ``labels``: the vocabulary it answers in. A gold label outside it is still answered
      when the persona is right.
    * ``bias``: when wrong, relative weights for picking the wrong label (keys must be in
      ``labels``; missing keys weigh 0). ``None``, or all-zero weights over the candidates,
      means uniform among the labels other than the truth. With the server's
      ``error_correlation`` rho > 0, a wrong answer is first the item's shared distractor
      with probability rho, and only otherwise drawn this way.
    * ``confidence``: ``(low, high)``; right answers draw uniformly from it, wrong answers
      from its lower half, so confidence carries some signal as with real models.
    * ``latency`` + uniform ``[0, jitter]`` seconds pass before each answer (faults too).
    * ``style``, the shape of the answer text: ``"json"`` is strict JSON
      ``{"kind", "confidence", "reasoning"}``; ``"fenced"`` a sentence, a ```json fence
      holding that object, a closing sentence; ``"think"`` a ``<think>...</think>`` block
      whose text contains braces, then the JSON; ``"messy"`` the object with a trailing
      comma before ``}`` and the confidence as a percent string (``"87%"``).
    * ``fault_rate``: probability that a request gets a random fault instead of an
      answer: a 429 with ``Retry-After: 0``, a 500, a 503, or a 200 with truncated JSON.
    * ``position_bias``: for pairwise requests only (two candidates, judged by content;
      see :class:`VendorServer`). With probability ``1 - accuracy`` the persona is unsure
      of a pair; then it answers ``"A"``, the candidate shown first, with probability
      ``position_bias``, else a label other than the truth drawn uniformly from ``A``,
      ``B``, ``TIE``. 0 (the default) favours neither position; 1 with accuracy 0 always
      answers ``"A"``. Unsure answers, right by chance or not, draw their confidence from
      the lower half of ``confidence``. :func:`pairwise_rates` gives the rates this
      produces. ``labels``, ``bias`` and ``error_correlation`` do not apply to pairwise
      requests.
    * ``resample``: answer repeated requests as a sampling model does. By default the
      same request always gets the same answer. With ``resample=True``, a request whose
      ``temperature`` is > 0 (or absent: vendors then sample at their default, 1) is
      answered as a fresh draw: the ``k``-th answer this persona gives for an item (a
      pair: for that order of its candidates) is drawn with ``k`` in the seed, and the
      first (``k = 0``) is the answer it gives without ``resample``. Faulted requests
      use up no draw, so ``n`` samples of an item are draws ``0..n-1`` whatever the
      retries. The counts live as long as the server (not reset by ``reset_stats``).
      Temperature 0 requests are answered as without it.
    * ``logprob_temperature`` (T > 0): how the token probabilities it serves (to a chat
      request with ``logprobs: true``) are distorted. The probability ``c`` of the chosen
      label is drawn so that it is calibrated by construction: with the prior
      ``g = Beta(k a, k (1 - a))`` (``a`` = ``accuracy``, clamped into [0.01, 0.99];
      ``k`` = :data:`LOGPROB_CONCENTRATION`, 4), a right answer draws ``c`` from
      ``Beta(k a + 1, k (1 - a))`` and a wrong one from ``Beta(k a, k (1 - a) + 1)``, so by
      Bayes ``P(right | c) = c g(c) / (c g(c) + (1 - c) g(c)) = c`` whenever the persona is
      right with probability ``a`` (label requests, any ``error_correlation``; pairwise
      requests only roughly, as position bias moves their accuracy). The label's
      probability served is ``c_T = c^(1/T) / (c^(1/T) + (1 - c)^(1/T))``: T = 1 (the
      default) is calibrated, T < 1 over-confident, T > 1 under-confident. The stated
      ``confidence`` is drawn as before and does not depend on it; ``c`` comes from its
      own seeded stream, so answers do not change.
    * ``criteria_accuracy``: for rubric requests (see :class:`VendorServer`'s
      ``criteria``), the accuracy on each criterion, by criterion id; a criterion not in
      it is answered at ``accuracy`` (:meth:`accuracy_for`). Each value is a probability
      in [0, 1], like ``accuracy``, and holds the same way (on average over items with
      ``error_correlation`` > 0).
    * ``thinking_tokens``: the tokens it spends reasoning, at effort ``"high"``, when a
      request asks for reasoning (``reasoning_effort``, ``thinking``, ``enable_thinking``,
      ``reasoning``, Anthropic's ``thinking`` or ``output_config.effort``); ``"medium"``
      spends half, ``"low"`` a quarter, and a budget in the request caps it. 0 (the
      default): not a reasoning model; reasoning fields are accepted and change nothing.
      Requests without them get no reasoning, whatever this is.

    Judging by content (see ``docs/testing.md``, "Conversations, agents and images"): the
    persona reads what the prompt shows of a conversation or trajectory in the form
    ``cross_judge.content`` renders it (``[step N] call NAME(...) -> ...``, ``[turn N]
    ROLE: ...`` with an assistant's calls on indented ``call NAME(...)`` lines), and the
    images the request carries. A rule that applies sets the truth it answers at its
    ``accuracy`` (in place of the gold label; difficulty, correlation, bias and the draw
    are as for any item); when none applies, or the prompt shows no such lines (a judge
    shown only the final answer), it answers as without the rules. They apply to
    whole-item verdicts (not pairs, not rubric criteria), first match wins:

    * ``forbidden_tools``: tool names; a prompt showing a call of one (a ``[step N] call
      NAME(`` line, or an indented ``call NAME(`` line under an assistant turn) has the
      truth ``fail_label``.
    * ``fail_unhandled_errors``: a prompt showing a failed call (``-> ERROR:``) then a
      final answer (the last ``final answer`` step, else the last assistant turn) that
      claims success has the truth ``fail_label``. Claiming success: no later call of
      the same tool succeeded before the answer (a retry handles an error), and the
      answer admits no failure (none of ``error``, ``fail(ed)``, ``could not``,
      ``cannot``, ``unable``, ``sorry``, ``unfortunately``, ...).
    * ``needs_context``: a prompt whose last user turn is a bare follow-up reply (1 to
      3 words starting with ``yes``, ``no``, ``sure``, ``ok``, ``please``, ...) and
      whose entry just before it is not an assistant turn (the turn it answers is not
      shown) has the truth ``fail_label``: the judge cannot tell what was agreed to, as
      a single-turn judge shown ``user: Yes`` cannot. Shown the assistant turn it
      answers, it judges as without the rule.
    * ``vision``: ``"ignores"`` (the default) answers as if the request's images were
      absent; ``"sees"`` reads them: the first image carrying a truth (a PNG from
      :func:`~cross_judge.testing.truth_image`) gives its label as the truth, and its
      draws are seeded with the images' digests too, so one question about many images
      is many items; ``"refuses"`` is a text-only model: a request holding an image
      part gets the vendor's 400 before any answer (see :class:`VendorServer`).

    ``fail_label`` (default ``"FAIL"``) must be one of ``labels`` when a rule that
    answers it is on.

    Swayed by the prompt (see ``docs/testing.md``, "Hidden policies and anchoring"), for
    whole-item verdicts only, after the decision above is drawn:

    * ``policy``: a :class:`~cross_judge.testing.HiddenPolicy` ``(trigger, answer)``: an
      item whose text holds the word ``trigger`` (whole word, any case) is answered
      ``answer`` (one of ``labels``), unless the prompt shows otherwise: an ``<example>``
      block holding the trigger with another label, or instructions (system prompt, or
      the user message outside the item and the examples) holding the trigger.
    * ``anchoring``: the probability, in [0, 1], of copying the label of the first shown
      example on the item's topic (its first word) when that label differs from the
      decision and the policy did not answer. 0 (the default): examples change nothing.

    Their draws have seeds of their own, so every answer they leave alone is the one a
    persona without them gives.

    Invalid values raise ``ValueError`` at construction. ``labels`` and ``confidence`` are
    stored as tuples and ``bias`` and ``criteria_accuracy`` as read-only copies, so a
    persona never changes after it is built.
    """

    model: str
    accuracy: float = 0.9
    labels: tuple[str, ...] = ("KEEP", "REJECT", "SPLIT", "MERGE")
    # Excluded from the hash: a mapping is not hashable, and the other fields suffice.
    bias: Mapping[str, float] | None = field(default=None, hash=False)
    confidence: tuple[float, float] = (0.6, 0.95)
    latency: float = 0.0
    jitter: float = 0.0
    style: Style = "json"
    seed: int = 0
    fault_rate: float = 0.0
    position_bias: float = 0.0
    resample: bool = False
    logprob_temperature: float = 1.0
    thinking_tokens: int = 0
    # Excluded from the hash, like bias.
    criteria_accuracy: Mapping[str, float] | None = field(default=None, hash=False)
    forbidden_tools: tuple[str, ...] = ()
    fail_unhandled_errors: bool = False
    needs_context: bool = False
    fail_label: str = "FAIL"
    vision: Vision = "ignores"
    policy: HiddenPolicy | None = None
    anchoring: float = 0.0

    def accuracy_for(self, criterion_id: str) -> float:
        """The accuracy on the rubric criterion ``criterion_id``: its entry in
        ``criteria_accuracy``, else ``accuracy``."""
        if self.criteria_accuracy is not None and criterion_id in self.criteria_accuracy:
            return self.criteria_accuracy[criterion_id]
        return self.accuracy

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("Persona.model must be a non-empty string (the model name to serve)")
        for name in ("accuracy", "fault_rate", "position_bias"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Persona.{name} must be a probability in [0, 1], got {value!r}")
        check_latency("Persona.latency", self.latency)
        check_latency("Persona.jitter", self.jitter)
        labels = tuple(self.labels)
        if not labels or not all(isinstance(x, str) and x for x in labels):
            raise ValueError("Persona.labels must be a non-empty sequence of non-empty strings")
        if len(set(labels)) != len(labels):
            raise ValueError(f"Persona.labels has duplicates: {labels!r}; list each label once")
        object.__setattr__(self, "labels", labels)
        conf = tuple(self.confidence)
        if len(conf) != 2 or not 0.0 <= conf[0] <= conf[1] <= 1.0:
            raise ValueError(
                "Persona.confidence must be (low, high) with 0 <= low <= high <= 1, "
                f"got {self.confidence!r}"
            )
        object.__setattr__(self, "confidence", (float(conf[0]), float(conf[1])))
        if self.bias is not None:
            unknown = sorted(set(self.bias) - set(labels))
            if unknown:
                raise ValueError(
                    f"Persona.bias has labels not in Persona.labels: {unknown}; "
                    "add them to labels or remove them from bias"
                )
            if not all(math.isfinite(w) and w >= 0 for w in self.bias.values()):
                raise ValueError("Persona.bias weights must be finite numbers >= 0")
            object.__setattr__(self, "bias", types.MappingProxyType(dict(self.bias)))
        if self.style not in STYLES:
            raise ValueError(f"Persona.style must be one of {sorted(STYLES)}, got {self.style!r}")
        temperature = self.logprob_temperature
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not (math.isfinite(temperature) and temperature > 0)
        ):
            raise ValueError(
                f"Persona.logprob_temperature must be a finite number > 0 (1: calibrated), "
                f"got {temperature!r}"
            )
        thinking = self.thinking_tokens
        if isinstance(thinking, bool) or not isinstance(thinking, int) or thinking < 0:
            raise ValueError(f"Persona.thinking_tokens must be an int >= 0, got {thinking!r}")
        if self.criteria_accuracy is not None:
            object.__setattr__(
                self, "criteria_accuracy", checked_criteria_accuracy(self.criteria_accuracy)
            )
        self._check_content_rules(labels)
        self._check_sway(labels)

    def _check_sway(self, labels: tuple[str, ...]) -> None:
        """Validate ``policy`` and ``anchoring`` (see the class docstring)."""
        policy = self.policy
        if policy is not None:
            if not isinstance(policy, HiddenPolicy):
                raise ValueError(
                    "Persona.policy must be a HiddenPolicy(trigger=..., answer=...) or None, "
                    f"got {type(policy).__name__}"
                )
            check_trigger(policy.trigger)
            if policy.answer not in labels:
                raise ValueError(
                    f"Persona.policy.answer {policy.answer!r} is not among Persona.labels "
                    f"{labels!r}; give labels that include it, or a policy answering one "
                    "of them"
                )
        anchoring = self.anchoring
        if (
            isinstance(anchoring, bool)
            or not isinstance(anchoring, (int, float))
            or not 0.0 <= anchoring <= 1.0
        ):
            raise ValueError(
                "Persona.anchoring must be a probability in [0, 1] (0: examples do not "
                f"sway it), got {anchoring!r}"
            )
        object.__setattr__(self, "anchoring", float(anchoring))

    def _check_content_rules(self, labels: tuple[str, ...]) -> None:
        """Validate and normalise the content-rule fields (see the class docstring)."""
        given: object = self.forbidden_tools  # any iterable a caller passed
        if isinstance(given, (str, bytes)):
            raise ValueError(
                "Persona.forbidden_tools must be a sequence of tool names, got the string "
                f"{given!r}; e.g. forbidden_tools=({given!r},)"
            )
        tools = tuple(self.forbidden_tools)
        if not all(
            isinstance(t, str) and t and not any(c.isspace() or c == "(" for c in t) for t in tools
        ):
            raise ValueError(
                "Persona.forbidden_tools must hold tool names as calls show them (non-empty, "
                f"no spaces or parentheses), got {tools!r}"
            )
        object.__setattr__(self, "forbidden_tools", tools)
        for name in ("fail_unhandled_errors", "needs_context"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"Persona.{name} must be True or False, got {value!r}")
        if self.vision not in VISIONS:
            raise ValueError(
                f"Persona.vision must be one of {sorted(VISIONS)} (ignores: answers as if "
                f"images were absent), got {self.vision!r}"
            )
        if not isinstance(self.fail_label, str) or not self.fail_label:
            raise ValueError(
                f"Persona.fail_label must be a non-empty label, got {self.fail_label!r}"
            )
        if (tools or self.fail_unhandled_errors or self.needs_context) and (
            self.fail_label not in labels
        ):
            raise ValueError(
                f"Persona.fail_label {self.fail_label!r} is not among Persona.labels {labels!r}, "
                "and the content rules (forbidden_tools, fail_unhandled_errors, needs_context) "
                "answer it; give labels that include it, e.g. labels=('PASS', 'FAIL'), or set "
                "fail_label to the label meaning a failure"
            )


def checked_criteria_accuracy(given: object) -> Mapping[str, float]:
    """A read-only copy of a :attr:`Persona.criteria_accuracy` mapping; ``ValueError``
    unless it maps non-empty criterion ids to probabilities in [0, 1] (not bools)."""
    if not isinstance(given, Mapping):
        raise ValueError(
            "Persona.criteria_accuracy must be a mapping {criterion id: accuracy in [0, 1]}, "
            f"got {type(given).__name__}"
        )
    checked: dict[str, float] = {}
    for cid, value in given.items():
        if not isinstance(cid, str) or not cid:
            raise ValueError(
                f"Persona.criteria_accuracy keys must be criterion ids (non-empty text), "
                f"got {cid!r}"
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0.0 <= value <= 1.0
        ):
            raise ValueError(
                f"Persona.criteria_accuracy[{cid!r}] must be a probability in [0, 1], got {value!r}"
            )
        checked[cid] = float(value)
    return types.MappingProxyType(checked)


@dataclass(frozen=True)
class PairwiseRates:
    """What a persona is expected to do over a batch of pairs; see :func:`pairwise_rates`.

    ``first_position``: share of ``"A"`` among its decisive answers (``A`` or ``B``) in
    the order shown, 0.5 without position bias; ``None`` when it gives no decisive answer
    at all (accuracy 1 on a batch of ties only). ``flip``: probability that the two
    orders of one pair get answers that differ once the swapped one is mapped back
    (``A`` <-> ``B``, ``TIE`` unchanged). ``accuracy``: expected share of right answers.
    """

    first_position: float | None
    flip: float
    accuracy: float


def pairwise_rates(persona: Persona, *, tie_share: float = 0.0) -> PairwiseRates:
    """The exact expected pairwise rates of ``persona`` over a balanced batch of pairs.

    The batch: a share ``tie_share`` (in [0, 1], else ``ValueError``) of the pairs are
    ties; in the others one candidate is better and is shown first half the time. Each
    pair is judged in both orders by independent draws (as :class:`VendorServer` does).
    Measured rates converge to these as the batch grows; ``persona.labels``, ``bias``
    and the server's ``error_correlation`` do not enter.

    Derivation, with ``a = accuracy``, ``p = position_bias``, ``u = 1 - a`` (unsure) and
    ``r = (1 - p) / 2`` (an unsure answer's chance of each of the two labels other than
    the truth, when it does not take ``A`` by position). Given the truth, the answer's
    probabilities, in the order shown, are::

        truth A (better first):  A: a + u p       B: u r   TIE: u r
        truth B (better second): A: u (p + r)     B: a     TIE: u r
        truth TIE:               A: u (p + r)     B: u r   TIE: a

    With ``t = tie_share``, truth is A for ``(1 - t) / 2`` of the answers, B for as many
    and TIE for ``t``:

    * ``accuracy = (1 - t) / 2 (a + u p + a) + t a = a + (1 - t) u p / 2``: position bias
      helps exactly when the better candidate is shown first.
    * ``first_position = P(A) / (P(A) + P(B))`` with
      ``P(A) = (1 - t) / 2 (a + u p + u (p + r)) + t u (p + r)`` and
      ``P(B) = (1 - t) / 2 (u r + a) + t u r``; ``None`` when both are 0.
    * ``flip``: a decisive pair is seen once as truth A and once as truth B; the second
      answer mapped back (A <-> B) is A with ``a``, B with ``u (p + r)``, TIE with
      ``u r``, so the two agree with probability
      ``g = (a + u p) a + u r u (p + r) + (u r)^2``. A tie pair is truth TIE in both
      orders; mapped back the second is A with ``u r``, B with ``u (p + r)``, TIE with
      ``a``, so they agree with ``h = 2 u^2 r (p + r) + a^2``.
      ``flip = (1 - t)(1 - g) + t (1 - h)``.

    For example accuracy 0.6, position_bias 0.5, no ties: accuracy 0.7,
    first_position 0.55 / 0.9 = 0.611, flip 0.48.
    """
    if not (isinstance(tie_share, (int, float)) and 0.0 <= tie_share <= 1.0):
        raise ValueError(f"tie_share must be a share in [0, 1], got {tie_share!r}")
    a, p, t = persona.accuracy, persona.position_bias, float(tie_share)
    u = 1.0 - a
    r = (1.0 - p) / 2.0
    decisive = (1.0 - t) / 2.0  # the share of answers whose truth is A, and of those B
    p_a = decisive * (a + u * p + u * (p + r)) + t * u * (p + r)
    p_b = decisive * (u * r + a) + t * u * r
    agree_decisive = (a + u * p) * a + u * r * u * (p + r) + (u * r) ** 2
    agree_tie = 2.0 * u * u * r * (p + r) + a * a
    return PairwiseRates(
        first_position=p_a / (p_a + p_b) if p_a + p_b > 0 else None,
        flip=(1.0 - t) * (1.0 - agree_decisive) + t * (1.0 - agree_tie),
        accuracy=a + (1.0 - t) * u * p / 2.0,
    )
