"""What choosing a panel found: :class:`PanelPlan` (one ranked option) and
:class:`PanelPlans` (all of them, best first).

A plan holds its critics (two tiers for a cascade), its voting, its figures replayed on the
pilot (:class:`~cross_judge.stats.PanelFigures`) and why it ranks above the next.
:meth:`PanelPlan.panel` builds it from the pilot's critics; :meth:`PanelPlan.write` writes a
panel file from the pilot's, keeping each chosen critic's entry as it was.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import yaml

from .._yaml import load as load_yaml, read_file, repointed_path
from ..errors import ConfigError
from ..stats import Comparison, PanelFigures, Reference

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..cascade import Cascade, Escalation
    from ..critic import Critic
    from ..ensemble import Ensemble

__all__ = ["RECORD_KIND", "PanelPlan", "PanelPlans"]

RECORD_KIND = "cross-judge panel plans"
"""The ``kind`` of :meth:`PanelPlans.record`."""

# Panel-file keys that belong to one kind of panel and are replaced by the plan's.
_ENSEMBLE_KEYS = ("critics", "voting", "voting_kwargs", "early_stop", "min_valid", "weights")
_CASCADE_KEYS = ("tiers", "escalate", "final")


@dataclass(frozen=True)
class PanelPlan:
    """One option for the panel, as replayed on the pilot's stored verdicts.

    ``rank`` is 1 for the best. ``figures`` holds the numbers (:attr:`accuracy` and
    :attr:`interval` on held-out items, :attr:`selection_accuracy` on the items it was
    ranked on, :attr:`cost_per_item`, :attr:`effective_votes`); ``reference`` says what
    accuracy is measured against (``"gold"``, or ``"dawid_skene"``: estimated from the
    votes by the model, not measured). A cascade has ``escalation`` (its threshold, chosen
    by :func:`~cross_judge.cascade_calibration.calibrate_cascade` on the selection items)
    and ``guarantee``, the calibration's statement. ``reason`` says why it ranks above the
    next plan, ``versus_next`` the held-out comparison behind it (``None`` for the last).
    """

    rank: int
    figures: PanelFigures
    reference: Reference
    reason: str
    versus_next: Comparison | None = None
    escalation: Escalation | None = field(default=None, repr=False)
    guarantee: str | None = field(default=None, repr=False)

    @property
    def critics(self) -> tuple[str, ...]:
        """Every critic the plan asks, first tier first."""
        return self.figures.critics

    @property
    def tiers(self) -> tuple[tuple[str, ...], ...]:
        """The critics of each tier (one tier for a plain panel)."""
        return tuple(tier.critics for tier in self.figures.tiers)

    @property
    def is_cascade(self) -> bool:
        """Whether the plan is a cascade (a cheap tier, then a strong one)."""
        return len(self.figures.tiers) > 1

    @property
    def voting(self) -> str:
        """How the deciding tier votes: ``majority``, ``weighted`` or ``dawid_skene``
        (the batch re-decided by ``batch.revote("dawid_skene")`` once judged)."""
        return self.figures.tiers[-1].voting

    @property
    def weights(self) -> Mapping[str, float] | None:
        """The ``weighted`` vote's weight per critic (of the deciding tier), else ``None``."""
        return self.figures.tiers[-1].weights

    @property
    def accuracy(self) -> float:
        """Accuracy on the held-out items (expected accuracy without gold)."""
        return self.figures.accuracy

    @property
    def interval(self) -> tuple[float, float] | None:
        """95% interval of :attr:`accuracy`."""
        return self.figures.interval

    @property
    def selection_accuracy(self) -> float:
        """Accuracy on the items the plans were ranked on."""
        return self.figures.selection_accuracy

    @property
    def cost_per_item(self) -> float:
        """Expected USD per item (a cascade's second tier on the share it is asked)."""
        return self.figures.cost_per_item

    @property
    def effective_votes(self) -> float | None:
        """How many independent votes the plan's critics are worth together."""
        return self.figures.effective_votes

    def describe(self) -> str:
        """The plan in a few words: ``a + b + c, weighted`` or ``a + b, majority -> c``."""
        if not self.is_cascade:
            return f"{' + '.join(self.critics)}, {self.voting}"
        first, second = self.figures.tiers
        threshold = self.figures.agreement_below
        shown = "" if threshold is None else f" (agreement below {threshold:g})"
        return (
            f"{' + '.join(first.critics)}, {first.voting} -> "
            f"{' + '.join(second.critics)}, {second.voting}{shown}"
        )

    # -- building it --------------------------------------------------------------------------

    def panel(
        self, source: Ensemble | Cascade | Sequence[Critic] | None = None
    ) -> Ensemble | Cascade:
        """The plan as an :class:`~cross_judge.ensemble.Ensemble` (or a two-tier
        :class:`~cross_judge.cascade.Cascade`), built from the critics of ``source``: the
        panel that judged the pilot (an Ensemble, a Cascade or its critics). A
        ``dawid_skene`` plan's panel votes by majority per item: re-decide its results with
        ``batch.revote("dawid_skene")`` to get the figures replayed here.

        Raises:
            ConfigError: no ``source`` (here or given to ``select_panel(panel=...)``), or
                one without a critic of the plan.
        """
        from ..cascade import Cascade
        from ..ensemble import Ensemble

        if source is None:
            raise ConfigError(
                "plan.panel() needs the critics that judged the pilot: pass the panel, "
                "plan.panel(ensemble), or select_panel(..., panel=ensemble)"
            )
        critics = list(source.critics) if isinstance(source, (Ensemble, Cascade)) else list(source)
        by_name = {critic.name: critic for critic in critics}
        missing = [name for name in self.critics if name not in by_name]
        if missing:
            raise ConfigError(
                f"the panel given has no critic {missing} of this plan (it has "
                f"{sorted(by_name)}): pass the panel that judged the pilot"
            )
        tiers = [
            Ensemble(
                [by_name[name] for name in tier.critics],
                voting="weighted" if tier.voting == "weighted" else "majority",
                weights=None if tier.weights is None else dict(tier.weights),
                voting_kwargs={"use_confidence": False} if tier.voting == "weighted" else {},
            )
            for tier in self.figures.tiers
        ]
        if len(tiers) == 1 or self.escalation is None:
            return tiers[0]
        return Cascade(tiers, escalate=self.escalation)

    def panel_data(self, panel_file: str | os.PathLike[str], folder: Path) -> dict[str, Any]:
        """The panel file at ``panel_file`` (the pilot's) as this plan: only the chosen
        critics, each entry kept as written, with the plan's voting (and weights, as each
        critic's ``weight``) or its tiers and ``escalate:`` block; relative paths re-pointed
        to be read from ``folder``. The pilot's ``voting_kwargs`` are not kept: the plan
        was replayed with each strategy's defaults."""
        source = Path(panel_file)
        _, data = load_yaml(read_file(source).decode("utf-8"))
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: a panel file is a mapping")
        groups = [data] + [t for t in data.get("tiers") or [] if isinstance(t, dict)]
        entries: dict[str, dict[str, Any]] = {}
        for group in groups:
            for critic in group.get("critics") or []:
                if isinstance(critic, dict) and isinstance(critic.get("name"), str):
                    entries.setdefault(critic["name"], dict(critic))
        missing = [name for name in self.critics if name not in entries]
        if missing:
            raise ConfigError(
                f"{source} has no critic {missing}: give the panel file that judged the pilot"
            )
        for entry in entries.values():
            if isinstance(entry.get("prompt"), str):
                entry["prompt"] = repointed_path(entry["prompt"], source.parent, folder)
        simulator = data.get("simulator")
        if isinstance(simulator, dict):
            for key, value in simulator.items():
                if isinstance(value, str):
                    simulator[key] = repointed_path(value, source.parent, folder)
        out = {k: v for k, v in data.items() if k not in _ENSEMBLE_KEYS + _CASCADE_KEYS}
        groups_out = [
            self._group(tier.critics, tier.voting, tier.weights, entries)
            for tier in self.figures.tiers
        ]
        if len(groups_out) == 1:
            out.update(groups_out[0])
            return out
        out["tiers"] = groups_out
        assert self.escalation is not None
        out["escalate"] = {
            "agreement_below": self.escalation.agreement_below,
            "on_error": self.escalation.on_error,
            "on_fallback": self.escalation.on_fallback,
        }
        out["final"] = "decide"
        return out

    @staticmethod
    def _group(
        critics: Sequence[str],
        voting: str,
        weights: Mapping[str, float] | None,
        entries: Mapping[str, dict[str, Any]],
    ) -> dict[str, Any]:
        chosen = []
        for name in critics:
            entry = dict(entries[name])
            if weights is not None:
                entry["weight"] = round(float(weights[name]), 6)
            else:
                entry.pop("weight", None)
            chosen.append(entry)
        group: dict[str, Any] = {"voting": "weighted" if voting == "weighted" else "majority"}
        if voting == "weighted":
            group["voting_kwargs"] = {"use_confidence": False}
        group["critics"] = chosen
        return group

    def panel_yaml(self, panel_file: str | os.PathLike[str], folder: Path) -> str:
        """:meth:`panel_data` as the text of a panel file, under a comment saying where it
        came from and what it is worth."""
        against = "against gold" if self.reference == "gold" else "(Dawid-Skene estimate, no gold)"
        lines = [
            f"# Chosen by cross-judge plan-panel from the pilot judged with "
            f"{Path(panel_file).name}: plan #{self.rank}, {self.describe()}.",
            f"# Held-out accuracy {_share(self.accuracy)} {_interval(self.interval)} {against};"
            f" ${self.cost_per_item:.3g} per item; effective votes "
            f"{_number(self.effective_votes)}.",
        ]
        if self.voting == "dawid_skene":
            lines.append(
                "# Votes by majority per item: re-decide the results with "
                "cross-judge revote RESULTS --voting dawid_skene."
            )
        if self.guarantee:
            lines.append(f"# {self.guarantee}")
        text = yaml.safe_dump(
            self.panel_data(panel_file, folder), sort_keys=False, allow_unicode=True, width=100
        )
        return "\n".join(lines) + "\n" + text

    def write(self, path: str | os.PathLike[str], *, panel_file: str | os.PathLike[str]) -> Path:
        """Write :meth:`panel_yaml` to ``path`` (never over an existing file) and return it.

        Raises:
            ConfigError: ``path`` exists; ``panel_file`` lacks a critic of the plan.
        """
        target = Path(path)
        if target.exists():
            raise ConfigError(
                f"{target} exists already; a plan never overwrites a file: write to another path"
            )
        text = self.panel_yaml(panel_file, target.parent)
        with open(target, "x", encoding="utf-8", newline="\n") as out:
            out.write(text)
        return target

    def record(self) -> dict[str, Any]:
        """The plan as plain data (what the report and ``--json`` show)."""
        f = self.figures
        return {
            "rank": self.rank,
            "plan": self.describe(),
            "tiers": [
                {
                    "critics": list(t.critics),
                    "voting": t.voting,
                    "weights": None if t.weights is None else dict(t.weights),
                }
                for t in f.tiers
            ],
            "agreement_below": f.agreement_below,
            "accuracy": f.accuracy,
            "interval": None if f.interval is None else list(f.interval),
            "selection_accuracy": f.selection_accuracy,
            "cost_per_item": f.cost_per_item,
            "escalated": f.escalated,
            "effective_votes": f.effective_votes,
            "reason": self.reason,
            "guarantee": self.guarantee,
        }


@dataclass(frozen=True)
class PanelPlans(Sequence[PanelPlan]):
    """The ranked plans :func:`~cross_judge.panel_choice.select_panel` found, best first.

    ``reference`` is what accuracy is measured against (``"gold"`` or ``"dawid_skene"``),
    ``search`` how the panels were found (``"exhaustive"``: every subset; ``"greedy"``),
    ``candidates`` how many were replayed; ``n_selection``/``n_held_out`` the items of each
    part and ``left_out`` the items some critic did not judge. ``notes`` are what the
    choice could not do or what to watch (fewer than 2 effective votes, no cascade without
    gold). Indexing, ``len`` and iteration go over :attr:`plans`.
    """

    plans: tuple[PanelPlan, ...]
    reference: Reference
    budget_per_item: float | None
    size: int | None
    search: str
    candidates: int
    n_selection: int
    n_held_out: int
    left_out: int
    holdout: float
    seed: int
    notes: tuple[str, ...] = ()
    source: Ensemble | Cascade | None = field(default=None, repr=False, compare=False)

    @overload
    def __getitem__(self, index: int) -> PanelPlan: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[PanelPlan]: ...
    def __getitem__(self, index: int | slice) -> PanelPlan | Sequence[PanelPlan]:
        return self.plans[index]

    def __len__(self) -> int:
        return len(self.plans)

    def __iter__(self) -> Iterator[PanelPlan]:
        return iter(self.plans)

    @property
    def best(self) -> PanelPlan:
        """The first plan."""
        return self.plans[0]

    def panel(
        self, source: Ensemble | Cascade | Sequence[Critic] | None = None
    ) -> Ensemble | Cascade:
        """The best plan's panel (:meth:`PanelPlan.panel`), from ``source`` or the panel
        given to ``select_panel``."""
        return self.best.panel(source if source is not None else self.source)

    def write(self, path: str | os.PathLike[str], *, panel_file: str | os.PathLike[str]) -> Path:
        """The best plan's panel file (:meth:`PanelPlan.write`)."""
        return self.best.write(path, panel_file=panel_file)

    def record(self) -> dict[str, Any]:
        """Every plan and how they were found, as plain data."""
        return {
            "kind": RECORD_KIND,
            "reference": self.reference,
            "budget_per_item": self.budget_per_item,
            "size": self.size,
            "search": self.search,
            "candidates": self.candidates,
            "n_selection": self.n_selection,
            "n_held_out": self.n_held_out,
            "left_out": self.left_out,
            "holdout": self.holdout,
            "seed": self.seed,
            "notes": list(self.notes),
            "plans": [plan.record() for plan in self.plans],
        }

    def heading(self) -> str:
        """One line: what was searched and what accuracy means here."""
        budget = (
            "no budget" if self.budget_per_item is None else f"${self.budget_per_item:.6g} per item"
        )
        against = (
            "held-out accuracy against gold"
            if self.reference == "gold"
            else "held-out accuracy ESTIMATED by Dawid-Skene from the votes (no gold)"
        )
        return (
            f"{self.candidates} panels replayed ({self.search}), {budget}; ranked on "
            f"{self.n_selection} items, {against} on {self.n_held_out} others"
        )

    def rows(self) -> list[list[str]]:
        """The table's rows: rank, plan, held-out accuracy and interval, selection
        accuracy, cost per item, effective votes, why it beats the next."""
        return [
            [
                str(plan.rank),
                plan.describe(),
                f"{_share(plan.accuracy)} {_interval(plan.interval)}",
                _share(plan.selection_accuracy),
                f"${plan.cost_per_item:.3g}",
                _number(plan.effective_votes),
                plan.reason,
            ]
            for plan in self.plans
        ]

    HEADERS = ("#", "panel", "held-out accuracy", "ranked on", "cost/item", "eff. votes", "why")

    def summary(self) -> RenderableType:
        """A rich table of the plans, under :meth:`heading` and above the notes."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(title="Which panel", title_justify="left")
        for header in self.HEADERS:
            table.add_column(header, overflow="fold")
        for row in self.rows():
            table.add_row(*row)
        parts: list[RenderableType] = [Text(self.heading()), table]
        parts.extend(Text(f"note: {note}") for note in self.notes)
        return Group(*parts)

    def __rich__(self) -> RenderableType:
        return self.summary()

    def __str__(self) -> str:
        from ..results import plain_text

        return plain_text(self.summary())

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.HEADERS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self.rows()
        )
        notes = "".join(f"<p>note: {html.escape(n)}</p>" for n in self.notes)
        return (
            f"<div><p><b>Which panel</b>: {html.escape(self.heading())}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}</div>"
        )


def _share(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _interval(interval: tuple[float, float] | None) -> str:
    if interval is None:
        return ""
    return f"[{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
