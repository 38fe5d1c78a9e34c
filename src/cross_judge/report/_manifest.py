"""The run manifest ``cross-judge review`` writes next to its results: provenance for a
results file.

``<OUT>.manifest.json`` holds one entry per run (a resumed run adds one): when it started
and ended and how (``running`` while it runs, so a killed run shows as such), the package
and Python versions, the command line, the panel (its file's sha256 and every critic's
settings, without keys), each prompt's id, version and sha256, the options (concurrency,
budget, cache) and the totals (items judged, calls, cache hits, tokens, cost). It is
rewritten through a temporary file and an atomic rename, so it is always whole.

A cascade's panel also records ``tiers`` (each tier's voting, its arguments, quorum,
early stop, deadline and critic names), ``escalate`` (the thresholds, ``"inf"`` for
always, and the error and fallback rules; a custom rule by its name), ``final`` and
``all_tiers`` (whether every tier was asked on every item).

A run of one shard (``review --shard i/N``) records ``shard: {"index": i, "count": N}``
(``null`` for the whole file; an entry without the key is from before ``--shard`` and
judged the whole file); :meth:`RunManifest.shard_change` says when a resumed run asks for
another shard.

Nothing secret goes in: critics are written with :meth:`~cross_judge.core.Critic.
model_dump`, which leaves out the key and any ``user:password@`` of a URL, and keys live in
environment variables, never on the command line or in the panel file.

Each critic's record says what its requests carry, beside what it was configured with:
``sent`` holds the settings actually put on the wire
(:meth:`~cross_judge.transport.ChatRequest.sent_settings`) and ``not_sent`` those its
protocol drops (an Anthropic critic sends ``max_tokens`` only: its ``temperature`` and
``seed`` are listed there, and had no effect on its answers). ``sent`` follows the vendor's
dialects: a llama.cpp critic's schema shows as ``{"type": "json_object", "schema": ...}``,
a Qwen critic's thinking budget as ``enable_thinking`` and ``thinking_budget``.

The answer settings are in each critic's record: ``structured`` (the setting,
``None`` when the critic follows ``json_mode``), ``structured_form`` (the shape its requests
ask for when the run starts: ``schema``, ``tool``, ``json`` or ``off``), ``schema`` (the
name and sha256 of the JSON schema sent with ``schema`` / ``tool``, else ``None``),
``effort``, ``thinking_budget``, ``confidence`` and ``retry_truncated``. The run's end
records ``stepdowns``: every step down ``structured="auto"`` (or ``confidence="auto"``,
dropping token probabilities) took for an endpoint and model of this panel in this process,
each as ``{vendor, endpoint, model, asked, now, reason}`` (the vendor's refusal, cut, with
anything shaped like a key hidden).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..results import manifest_path

if TYPE_CHECKING:
    from ..cascade import Cascade, EscalateRule, Escalation
    from ..critic import Critic
    from ..ensemble import Ensemble

__all__ = ["RunManifest", "manifest_path", "panel_changes", "stepdowns"]

MANIFEST_VERSION = 1


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class RunManifest:
    """One run's entry in the manifest of a results file. :meth:`prepare` makes it,
    :meth:`begin` writes it with status ``running``; :meth:`finish` records how it ended
    and the totals."""

    def __init__(
        self,
        results: Path,
        entry: dict[str, Any],
        where: frozenset[tuple[str, str, str]] | None = None,
    ) -> None:
        self.path = manifest_path(results)
        self._results = results
        self._entry = entry
        # (vendor, endpoint, model) of the panel's critics, whose step downs finish()
        # records (None: every one of the process)
        self._where = where

    @classmethod
    def prepare(
        cls,
        results: Path,
        *,
        ensemble: Ensemble | Cascade,
        argv: Sequence[str],
        items: Path,
        panel: Path,
        options: dict[str, Any],
        all_tiers: bool = False,
        shard: tuple[int, int] | None = None,
    ) -> RunManifest:
        """This run's entry, not written yet (:meth:`begin` writes it), so that it can be
        compared with the runs before (:meth:`panel_changes`, :meth:`shard_change`) first.
        ``ensemble`` is the run's ensemble or cascade; ``all_tiers`` (a cascade's) says
        every tier judged every item; ``shard`` is ``(i, N)`` for a run that judges shard
        ``i`` of ``N`` only, ``None`` for the whole file."""
        entry: dict[str, Any] = {
            "status": "running",
            "started_at": _now(),
            "ended_at": None,
            "cross_judge": __version__,
            "python": platform.python_version(),
            "platform": sys.platform,
            "command": ["cross-judge", *argv],
            "items": {"file": str(items)},
            "shard": None if shard is None else {"index": shard[0], "count": shard[1]},
            "panel": {
                "file": str(panel),
                "sha256": _sha256(panel),
                **_panel_record(ensemble, all_tiers),
            },
            "prompts": {critic.name: _prompt_record(critic) for critic in ensemble.critics},
            "options": options,
            "totals": None,
        }
        from ..critic import endpoint_key

        where = frozenset(endpoint_key(c.endpoint(), c.model) for c in ensemble.critics)
        return cls(results, entry, where)

    def begin(self) -> None:
        """Write this run's entry, with status ``running``."""
        self._write()

    def previous_run(self) -> dict[str, Any] | None:
        """The latest run recorded in the manifest (call it before :meth:`begin`), or
        ``None`` (no manifest, an unreadable one, or no run in it)."""
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        runs = loaded.get("runs") if isinstance(loaded, dict) else None
        if not isinstance(runs, list):
            return None
        earlier = [r for r in runs if isinstance(r, dict)]
        return earlier[-1] if earlier else None

    def panel_changes(self, previous: dict[str, Any]) -> list[str]:
        """How this run's panel differs from the one of ``previous`` (a manifest entry),
        one line per aspect that changed (``voting``, ``panel``, ``tiers``, ``escalate``,
        ``final``, ``all_tiers``, ``critics``, ``prompts``); empty when the panel judges as
        it did.

        Compared: the strategy and its arguments (with the quorum and early stop); for a
        cascade, the same for each tier, the critics of each tier, the escalation rule,
        the final mode and whether every tier was asked (``--all-tiers``), and a switch
        between one ensemble and a cascade; each critic by name with its vendor, model,
        endpoint, sampling settings, labels and weight; each critic's prompt by the
        sha256 of its text. Not compared: what does not change an answer (timeouts, a
        tier's deadline, retries, cache, concurrency, the panel file's comments) and the
        endpoint of simulated critics (a new local port each run). Settings one of the
        two entries did not record (an older version's) are skipped.
        """
        return panel_changes(previous, self._entry)

    def shard_change(self, previous: dict[str, Any]) -> str | None:
        """How this run's shard differs from the one of ``previous`` (a manifest entry),
        as ``"shard 2/8 -> 3/8"`` (``none (the whole file)`` for no shard), or ``None`` when
        both judge the same items. An entry without ``shard`` (written before ``--shard``
        existed) judged the whole file; one whose ``shard`` is unreadable counts as a
        change, since its items cannot be known."""
        before, after = previous.get("shard"), self._entry.get("shard")
        if before == after:
            return None
        return f"shard {_shard_shown(before)} -> {_shard_shown(after)}"

    def finish(self, status: str, totals: dict[str, Any]) -> None:
        """Record how the run ended (``done``, ``failed``, ``interrupted``), its totals,
        and the step downs its critics' endpoints took (:func:`stepdowns`)."""
        self._entry.update(
            status=status,
            ended_at=_now(),
            totals=totals,
            stepdowns=stepdowns(self._where),
        )
        self._write()

    def _write(self) -> None:
        document = self._read()
        runs: list[dict[str, Any]] = document.setdefault("runs", [])
        started = self._entry["started_at"]
        for index, run in enumerate(runs):
            if run.get("started_at") == started and run.get("command") == self._entry["command"]:
                runs[index] = self._entry
                break
        else:
            runs.append(self._entry)
        document["manifest_version"] = MANIFEST_VERSION
        document["results"] = self._results.name
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        if isinstance(loaded, dict):
            return loaded
        # Unreadable: keep it beside the new one rather than fail the run or lose it.
        os.replace(self.path, self.path.with_name(f"{self.path.name}.unreadable-{os.getpid()}"))
        return {}


def _shard_shown(shard: object) -> str:
    if shard is None:
        return "none (the whole file)"
    if isinstance(shard, dict) and {"index", "count"} <= shard.keys():
        return f"{shard['index']}/{shard['count']}"
    return repr(shard)


# Critic settings that change what a critic answers; the rest (timeouts, retries, cache)
# only change how it is asked.
_ANSWER_SETTINGS = (
    "vendor",
    "model",
    "base_url",
    "temperature",
    "max_tokens",
    "seed",
    "json_mode",
    "labels",
    "calibration",
    "weight",
    "samples",
    "structured",
    "schema",
    "effort",
    "thinking_budget",
    "confidence",
)


def panel_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """How the panel of the manifest entry ``after`` differs from that of ``before``, one
    line per aspect (see :meth:`RunManifest.panel_changes`, which says what is compared);
    empty when it judges as it did."""
    old_panel, new_panel = before.get("panel") or {}, after.get("panel") or {}
    changes: list[str] = []

    # Two cascades: their "voting" names every tier's strategy, compared tier by tier below.
    both_cascades = isinstance(old_panel.get("tiers"), list) and isinstance(
        new_panel.get("tiers"), list
    )
    voting = _vote_changes(old_panel, new_panel, strategy=not both_cascades)
    if voting:
        changes.append("voting: " + "; ".join(voting))
    changes += _cascade_changes(old_panel, new_panel)

    old_critics = _critics(before)
    new_critics = _critics(after)
    critics = [f"added {name!r}" for name in new_critics if name not in old_critics]
    critics += [f"removed {name!r}" for name in old_critics if name not in new_critics]
    for name, settings in new_critics.items():
        was = old_critics.get(name)
        if was is None:
            continue
        differ = [
            f"{key} {_shown(was[key])} -> {_shown(settings[key])}"
            for key in _ANSWER_SETTINGS
            if key in was and key in settings and was[key] != settings[key]
        ]
        if differ:
            critics.append(f"{name!r} " + ", ".join(differ))
    if critics:
        changes.append("critics: " + "; ".join(critics))

    old_prompts = before.get("prompts") or {}
    new_prompts = after.get("prompts") or {}
    prompts = [
        f"{name!r} {_prompt(old_prompts[name])} -> {_prompt(new_prompts[name])}"
        for name in new_prompts
        if isinstance(old_prompts.get(name), dict)
        and isinstance(new_prompts[name], dict)
        and (old_prompts[name].get("sha256"), old_prompts[name].get("rubric_sha256"))
        != (new_prompts[name].get("sha256"), new_prompts[name].get("rubric_sha256"))
    ]
    if prompts:
        changes.append("prompts: " + "; ".join(prompts))
    return changes


def _vote_changes(old: dict[str, Any], new: dict[str, Any], *, strategy: bool = True) -> list[str]:
    """How the vote of one ensemble (a panel's or a tier's record) changed."""
    keys = [
        ("voting", "strategy"),
        ("voting_kwargs", "arguments"),
        ("min_valid", "min_valid"),
        ("early_stop", "early_stop"),
    ]
    changes = [
        f"{name} {_shown(old[key])} -> {_shown(new[key])}"
        for key, name in keys[0 if strategy else 1 :]
        if key in old and key in new and old[key] != new[key]
    ]
    # How pairs are shown changes their answers; a record from before these keys used
    # the defaults.
    for key, default in (("order", "fixed"), ("on_flip", "tie")):
        before, after = old.get(key, default), new.get(key, default)
        if before != after:
            changes.append(f"{key} {_shown(before)} -> {_shown(after)}")
    return changes


def _cascade_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """How a cascade's tiers, escalation, final mode and ``all_tiers`` changed, or that
    one panel is a cascade and the other is not."""
    old_tiers, new_tiers = old.get("tiers"), new.get("tiers")
    if not isinstance(old_tiers, list) or not isinstance(new_tiers, list):
        if old and new and isinstance(old_tiers, list) != isinstance(new_tiers, list):
            return [f"panel: {_kind(old_tiers)} -> {_kind(new_tiers)}"]
        return []
    changes: list[str] = []
    tiers: list[str] = []
    if len(old_tiers) != len(new_tiers):
        tiers.append(f"{len(old_tiers)} -> {len(new_tiers)} tiers")
    for index, (was, now) in enumerate(zip(old_tiers, new_tiers, strict=False)):
        if not isinstance(was, dict) or not isinstance(now, dict):
            continue
        differ = _vote_changes(was, now)
        if "critics" in was and "critics" in now and was["critics"] != now["critics"]:
            differ.append(f"critics {_shown(was['critics'])} -> {_shown(now['critics'])}")
        if differ:
            tiers.append(f"tiers[{index}] " + ", ".join(differ))
    if tiers:
        changes.append("tiers: " + "; ".join(tiers))
    old_rule, new_rule = old.get("escalate"), new.get("escalate")
    if isinstance(old_rule, dict) and isinstance(new_rule, dict) and old_rule != new_rule:
        differ = [
            f"{key} {_shown(old_rule.get(key))} -> {_shown(new_rule.get(key))}"
            for key in dict.fromkeys([*old_rule, *new_rule])
            if old_rule.get(key) != new_rule.get(key)
        ]
        changes.append("escalate: " + ", ".join(differ))
    for key in ("final", "all_tiers"):
        if key in old and key in new and old[key] != new[key]:
            changes.append(f"{key}: {_shown(old[key])} -> {_shown(new[key])}")
    return changes


def _kind(tiers: object) -> str:
    if isinstance(tiers, list):
        return f"a cascade of {len(tiers)} tier" + ("" if len(tiers) == 1 else "s")
    return "one ensemble"


def _panel_record(panel: Ensemble | Cascade, all_tiers: bool) -> dict[str, Any]:
    """How ``panel`` votes, and its critics' settings; a cascade's tiers and rules too."""
    from ..cascade import Cascade

    if not isinstance(panel, Cascade):
        return {
            **_vote_record(panel),
            "critics": [_critic_record(critic) for critic in panel.critics],
        }
    return {
        "voting": panel.voting,
        "critics": [_critic_record(critic) for critic in panel.critics],
        "tiers": [
            {
                **_vote_record(tier),
                "deadline": tier.deadline,
                "critics": [critic.name for critic in tier.critics],
            }
            for tier in panel.tiers
        ],
        "escalate": _escalate_record(panel.escalate),
        "final": panel.final,
        "all_tiers": all_tiers,
    }


def _vote_record(ensemble: Ensemble) -> dict[str, Any]:
    return {
        "voting": str(getattr(ensemble.voting, "__name__", ensemble.voting)),
        "voting_kwargs": ensemble.voting_kwargs,
        "min_valid": ensemble.min_valid,
        "early_stop": ensemble.early_stop,
        "order": ensemble.order,
        "on_flip": ensemble.on_flip,
    }


def _escalate_record(rule: Escalation | EscalateRule) -> dict[str, Any]:
    """An escalation's settings (thresholds as numbers, lists, ``"inf"`` or ``None``), or
    a custom rule's name."""
    from ..cascade import Escalation

    if not isinstance(rule, Escalation):
        return {"rule": getattr(rule, "__qualname__", type(rule).__qualname__)}

    def threshold(value: object) -> Any:
        if isinstance(value, dict):
            return {key: threshold(v) for key, v in value.items()}
        if isinstance(value, (tuple, list)):
            return [threshold(v) for v in value]
        if isinstance(value, float) and value == float("inf"):
            return "inf"
        return value

    thresholds = {
        f.name: threshold(getattr(rule, f.name))
        for f in dataclasses.fields(rule)
        if f.name.endswith("_below")
    }
    record = {**thresholds, "on_error": rule.on_error, "on_fallback": rule.on_fallback}
    if rule.on_dispute is not None:  # written only when set: older records stay equal
        record["on_dispute"] = rule.on_dispute
    return record


def _critics(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each critic's answer-changing settings by name; no endpoint for simulated ones."""
    simulated = set((entry.get("options") or {}).get("simulated_critics") or ())
    out: dict[str, dict[str, Any]] = {}
    for critic in (entry.get("panel") or {}).get("critics") or ():
        if not isinstance(critic, dict) or "name" not in critic:
            continue
        settings = {k: critic[k] for k in _ANSWER_SETTINGS if k in critic}
        if critic["name"] in simulated:
            settings.pop("base_url", None)
        out[str(critic["name"])] = settings
    return out


def _prompt_record(critic: Critic) -> dict[str, Any]:
    """A critic's prompt in the manifest: id, version, sha256 of its text and, for a rubric
    prompt, its criteria, scale, threshold and mode with their sha256 (the criteria are not
    in the text's sha256, so a changed weight is a changed prompt)."""
    prompt_id, version = critic.prompt_provenance()
    record: dict[str, Any] = {"id": prompt_id, "version": version, "sha256": critic.prompt_sha256}
    rubric = critic.rubric
    if rubric is not None:
        dumped = rubric.model_dump(mode="json")
        text = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
        record["rubric"] = dumped
        record["rubric_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    return record


def _prompt(record: dict[str, Any]) -> str:
    ref = f"{record['id']}@{record['version']}" if record.get("id") else "unnamed prompt"
    sha = str(record.get("sha256") or "?")[:12]
    return f"{ref} (sha256 {sha})"


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value


def _critic_record(critic: Critic) -> dict[str, Any]:
    """The critic's settings (:meth:`~cross_judge.core.Critic.model_dump`), with
    ``structured_form`` (the answer shape its requests ask for now), ``schema`` (the name
    and sha256 of the schema they send, or ``None``), ``sent``: the settings its requests
    carry, in its vendor's dialects, and ``not_sent``: the names of those its protocol
    drops."""
    from ..transport import ChatRequest

    config = critic.endpoint()
    form = critic.structured_form(config)
    schema = critic.answer_schema() if form in ("schema", "tool") else None
    settings = ChatRequest(
        model=critic.model,
        system="",
        user="",
        temperature=critic.temperature,
        max_tokens=critic.max_tokens,
        seed=critic.seed,
        structured=form,
        schema=schema,
        effort=critic.effort,
        thinking_budget=critic.thinking_budget,
        logprobs=critic.logprobs_asked(config),
    )
    record = critic.model_dump()
    record["structured_form"] = form
    record["schema"] = (
        None
        if schema is None
        else {"name": schema.name, "sha256": hashlib.sha256(schema.text.encode()).hexdigest()}
    )
    record["sent"] = settings.sent_settings(config)
    record["not_sent"] = sorted(settings.unsent_settings(config))
    return record


def stepdowns(where: frozenset[tuple[str, str, str]] | None = None) -> list[dict[str, str]]:
    """The step downs ``structured="auto"`` and ``confidence="auto"`` took in this process
    (:func:`cross_judge.critic._stepdown.steps_taken`), oldest first, as plain dicts
    (``vendor``, ``endpoint``, ``model``, ``asked``, ``now``, ``reason``), only those of
    the ``(vendor, endpoint, model)`` triples in ``where`` (``None``: all). The vendor's
    ``reason`` has anything shaped like an API key or a bearer token hidden."""
    from ..critic import steps_taken
    from ..transport import redact

    return [
        {**dataclasses.asdict(step), "reason": redact(step.reason)}
        for step in steps_taken()
        if where is None or (step.vendor, step.endpoint, step.model) in where
    ]
