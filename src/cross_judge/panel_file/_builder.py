"""From a checked panel file to the objects it describes: critics, simulator personas, the
simulator, and the :class:`~cross_judge.ensemble.Ensemble` or
:class:`~cross_judge.cascade.Cascade` itself.

The methods users call live on the models of :mod:`cross_judge.panel_file._schema`
(``CriticSpec.to_critic``, ``PanelSpec.build``, ...); they call these functions. The checks
use them too: a panel file is checked by building what it describes against
:data:`PLACEHOLDER_URL`, so that a file is refused when loaded for what the
:class:`~cross_judge.critic._critic.Critic`, ensemble or cascade would refuse.

What it does not do: check a file (the schema does; this trusts what it is given), read API
keys from the environment (``PanelSpec.build`` does, and reports the missing ones), or call
a model.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..cascade import Cascade
from ..critic import Critic, ResponseCache
from ..ensemble import Ensemble
from ._simulation import rubric_settings

if TYPE_CHECKING:
    from ..testing import Persona, VendorServer
    from ._schema import CriticSpec, EnsembleFields, PanelSpec, PersonaSpec

__all__ = [
    "PLACEHOLDER_URL",
    "build_panel",
    "critic_from_spec",
    "ensemble_kwargs",
    "persona_from_spec",
    "placeholder_critics",
    "simulator_for",
]

logger = logging.getLogger("cross_judge")

PLACEHOLDER_URL = "http://127.0.0.1:9/v1"
"""Sent nowhere: simulated critics are checked at load time against this placeholder, and
built against the caller's server URL."""


def critic_from_spec(
    spec: CriticSpec, *, api_key: str | None = None, base_url: str | None = None
) -> Critic:
    """The :class:`~cross_judge.critic._critic.Critic` ``spec`` describes (see
    ``CriticSpec.to_critic``). ``base_url`` overrides the file's.

    Raises:
        ConfigError: as :class:`~cross_judge.critic._critic.Critic` does.
    """
    kwargs: dict[str, Any] = {}
    if spec.prompt_spec is not None:
        kwargs["prompt"] = spec.prompt_spec
    if spec.calibration is not None:
        kwargs["calibration"] = dict(spec.calibration)
    return Critic(
        name=spec.name,
        model=spec.model_name,
        vendor="custom" if spec.simulated else spec.vendor,
        base_url=base_url or spec.base_url,
        api_key=api_key,
        weight=spec.weight,
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        labels=list(spec.labels) if spec.labels is not None else None,
        timeout=spec.timeout,
        max_retries=spec.max_retries,
        samples=spec.samples,
        structured=spec.structured,
        effort=spec.effort,
        thinking_budget=spec.thinking_budget,
        confidence=spec.confidence,
        retry_truncated=spec.retry_truncated,
        family=spec.family,
        vision=spec.vision,
        **kwargs,
    )


def persona_from_spec(spec: CriticSpec, persona: PersonaSpec, critic: Critic | None) -> Persona:
    """The simulator persona of the simulated critic ``spec``, shaped by ``persona`` (its
    ``persona:`` or the defaults); it answers in the labels of ``critic`` (``None``: the
    critic ``spec`` describes) unless ``persona.labels`` says otherwise.

    Raises:
        ValueError: an invalid persona (``bias`` naming a label it does not use, ...).
    """
    # Imported here, not above: the simulator pulls in aiohttp's server (a fifth of a
    # second), which a panel of real vendors never needs.
    from ..testing import HiddenPolicy, Persona

    critic = critic or critic_from_spec(spec, base_url=PLACEHOLDER_URL)
    labels = persona.labels or (list(critic.labels) if critic.labels else None)
    kwargs: dict[str, Any] = {"labels": tuple(labels)} if labels else {}
    if persona.confidence is not None:
        kwargs["confidence"] = tuple(persona.confidence)
    return Persona(
        spec.model_name,
        accuracy=persona.accuracy,
        latency=persona.latency,
        jitter=persona.jitter,
        style=persona.style,
        seed=persona.seed,
        bias=persona.bias,
        fault_rate=persona.fault_rate,
        position_bias=persona.position_bias,
        resample=spec.samples > 1 if persona.resample is None else persona.resample,
        logprob_temperature=persona.logprob_temperature,
        thinking_tokens=persona.thinking_tokens,
        criteria_accuracy=persona.criteria_accuracy,
        forbidden_tools=tuple(persona.forbidden_tools or ()),
        fail_unhandled_errors=persona.fail_unhandled_errors,
        needs_context=persona.needs_context,
        fail_label=persona.fail_label,
        vision=persona.vision,
        policy=(
            None
            if persona.policy is None
            else HiddenPolicy(trigger=persona.policy.trigger, answer=persona.policy.answer)
        ),
        anchoring=persona.anchoring,
        **kwargs,
    )


def simulator_for(panel: PanelSpec, **kwargs: Any) -> VendorServer:
    """A :class:`~cross_judge.testing.VendorServer` (not started) for the simulated
    critics of ``panel`` (see ``PanelSpec.simulator``); ``kwargs`` win over the file's
    ``simulator:`` settings (a ``gold=`` replaces the file's gold labels, ...). A rubric's
    ``criteria`` and ``criteria_labels`` are the ``simulator:`` mapping's, else those of
    the simulated critics' rubric prompt (:func:`~._simulation.rubric_settings`)."""
    from ..testing import VendorServer  # here, not above: see persona_from_spec

    settings: dict[str, Any] = {}
    config = panel.simulator_config
    if config is not None:
        truth = config.truth
        settings = {
            "error_correlation": config.error_correlation,
            "difficulty_seed": config.difficulty_seed,
            "gold": truth.gold,
            "difficulty": truth.difficulty,
            "better": truth.better,
            "pair_better": truth.pair_better,
            "capacity": config.capacity,
            "batch_polls": config.batch_polls,
            "batch_failure_rate": config.batch_failure_rate,
            "batch_expiry_rate": config.batch_expiry_rate,
            "strengths": truth.strengths,
            "tie_rate": config.tie_rate,
            "max_request_bytes": config.max_request_bytes,
        }
    settings.update(rubric_settings(panel))  # criteria: the file's, else the rubric prompt's
    return VendorServer(panel.personas(), **{**settings, **kwargs})


def ensemble_kwargs(fields: EnsembleFields) -> dict[str, Any]:
    """The :class:`~cross_judge.ensemble.Ensemble` arguments of one ensemble's keys (the
    panel's, or a tier's), critics and cache aside."""
    return {
        "voting": fields.voting,
        "voting_kwargs": dict(fields.voting_kwargs),
        "min_valid": fields.min_valid,
        "early_stop": fields.early_stop,
        "deadline": fields.deadline,
        "order": fields.order,
        "on_flip": fields.on_flip,
        "pass_threshold": fields.pass_threshold,
    }


def placeholder_critics(critics: Sequence[CriticSpec]) -> list[Critic]:
    """The critics, for checks only: simulated ones pointed at an address never called."""
    return [critic_from_spec(c, base_url=PLACEHOLDER_URL if c.simulated else None) for c in critics]


def build_panel(
    panel: PanelSpec,
    keys: dict[str, str | None],
    *,
    simulator_url: str | None = None,
    cache: ResponseCache | bool | str | os.PathLike[str] | None = None,
) -> Ensemble | Cascade:
    """The ensemble or cascade ``panel`` describes (see ``PanelSpec.build``), each real
    critic with its key from ``keys`` (by critic name; ``None``: its vendor's variable at
    call time). Without ``simulator_url``, a panel with simulated critics starts its own
    simulator, stopped when the returned panel is garbage collected (or at exit).

    Raises:
        ConfigError: as the ensemble or cascade does (the simulator is stopped then).
    """
    server: VendorServer | None = None
    if panel.simulated_critics and not simulator_url:
        server = simulator_for(panel).start()
        simulator_url = server.url
        logger.info(
            "panel %s: critics %s are simulated, answered by a VendorServer started at %s",
            panel.source,
            ", ".join(panel.simulated_critics),
            simulator_url,
        )

    def critic(spec: CriticSpec) -> Critic:
        if spec.simulated:
            return critic_from_spec(spec, base_url=simulator_url)
        return critic_from_spec(spec, api_key=keys[spec.name])

    built: Ensemble | Cascade
    try:
        if panel.tiers is None:
            built = Ensemble(
                [critic(s) for s in panel.critics], cache=cache, **ensemble_kwargs(panel)
            )
        else:
            built = Cascade(
                [
                    Ensemble(
                        [critic(s) for s in tier.critics], cache=cache, **ensemble_kwargs(tier)
                    )
                    for tier in panel.tiers
                ],
                escalate=panel.escalation(),
                final=panel.final,
            )
    except BaseException:
        if server is not None:
            server.stop()
        raise
    if server is not None:
        # The panel owns the server: it is stopped with it (or at exit, since the
        # finalizer runs atexit), and never keeps the panel alive.
        weakref.finalize(built, server.stop)
    return built
