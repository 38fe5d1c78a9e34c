"""What an alignment found and what it would write: :class:`AlignmentPlan`.

A plan holds each aligned critic's next prompt version (its examples and provenance), the
held-out figures before and after (:class:`~cross_judge.stats.AlignmentFigures`), what the
measuring calls cost, and the reasons it refuses to be written (:func:`refusals_of`): the
jury's kappa with gold not clearly better, or fewer effective votes than the unaligned
panel. :meth:`AlignmentPlan.write` writes the versions and a panel file that uses them,
never over an existing file, the same plan always to the same bytes.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .._extensions import provider
from .._yaml import load as load_yaml, read_file, repointed_path
from ..critic import PromptSpec, prompt_file_name, write_prompt
from ..errors import AlignmentRefused, ConfigError
from ..stats import AlignmentFigures, ExampleChoice, Figure, GoldSplit

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..ensemble import Ensemble
    from ..results import BatchResult

__all__ = [
    "PANEL_FILE_NAME",
    "RECORD_FILE_NAME",
    "RECORD_KIND",
    "AlignmentPlan",
    "figures_record",
    "refusals_of",
]

PANEL_FILE_NAME = "panel.yaml"
"""The name of the panel file :meth:`AlignmentPlan.write` writes beside the prompts."""

RECORD_FILE_NAME = "alignment.json"
"""The name of the record (:meth:`AlignmentPlan.record`) :meth:`AlignmentPlan.write` writes."""

RECORD_KIND = "cross-judge alignment"
"""The ``kind`` of an alignment record, by which ``cross-judge report`` knows one."""

_JURY_ROWS = (
    ("consensus_kappa", "jury: consensus kappa"),
    ("consensus_accuracy", "jury: consensus accuracy"),
    ("dawid_skene_accuracy", "jury: Dawid-Skene accuracy"),
    ("effective_votes", "jury: effective votes"),
)


def refusals_of(figures: AlignmentFigures) -> tuple[str, ...]:
    """Why a plan with these figures is not written unless forced: the consensus kappa's
    gain interval not wholly above 0 (or undefined), and fewer effective votes after than
    before."""
    reasons = []
    kappa = figures.jury["consensus_kappa"]
    if not kappa.significant:
        shown = "undefined" if kappa.gain_ci is None else _interval(kappa.gain_ci, signed=True)
        reasons.append(
            f"the jury's consensus kappa with gold gained {_number(kappa.gain, signed=True)} "
            f"on {figures.n_items} held-out items, interval {shown}, which does not exclude 0"
        )
    votes = figures.jury["effective_votes"]
    if votes.before is not None and votes.after is not None and votes.after < votes.before:
        reasons.append(
            f"the effective votes fell from {votes.before:.2f} to {votes.after:.2f}: the "
            "aligned critics err together more than the unaligned panel"
        )
    return tuple(reasons)


def _figure_record(figure: Figure) -> dict[str, Any]:
    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 4)

    def pair(ci: tuple[float, float] | None) -> list[float] | None:
        return None if ci is None else [round(ci[0], 4), round(ci[1], 4)]

    return {
        "before": rounded(figure.before),
        "after": rounded(figure.after),
        "gain_ci": pair(figure.gain_ci),
    }


def figures_record(figures: AlignmentFigures) -> dict[str, Any]:
    """The figures as plain data (rounded to 4 places), as a prompt's provenance keeps
    them."""
    return {
        "held_out_items": figures.n_items,
        "ci": figures.ci,
        "resamples": figures.resamples,
        "jury": {name: _figure_record(figures.jury[name]) for name, _ in _JURY_ROWS},
        "critics": {
            critic: {name: _figure_record(f) for name, f in rows.items()}
            for critic, rows in figures.critics.items()
        },
    }


@dataclass(frozen=True)
class AlignmentPlan:
    """The result of :func:`~cross_judge.alignment.align`.

    Attributes:
        method, k, holdout, seed, shared: how it was made.
        gold_sha256: the sha256 of the gold file (or of a mapping's labels).
        split: the labelled items it learned from and those it measured on.
        examples: each aligned critic's examples (:class:`~cross_judge.stats.ExampleChoice`).
        prompts: each aligned critic's next version, with its examples and provenance.
        figures: before and after on the held-out items, with intervals.
        spend_usd: what the measuring calls cost (``None``: a price unknown);
            ``estimate_usd`` what was expected beforehand, ``budget_usd`` the cap.
        refusals: why it would not be written (empty: it would); see :func:`refusals_of`.
        after: the held-out items judged by the aligned panel.
        aligned_panel: the panel with the new prompts (:meth:`panel`).
        panel_file: the panel file the panel came from, rewritten by :meth:`write`.
        instructions: each critic's instruction drafted by the editor and added to its
            system prompt (``method="instructions"`` or ``"both"``); ``notes`` says why a
            critic got none.
        base_specs: each aligned critic's prompt before (:attr:`base_prompts` names them,
            :attr:`diffs` compares them with the new versions).
    """

    method: str
    k: int
    holdout: float
    seed: int
    shared: bool
    gold_sha256: str
    split: GoldSplit
    examples: dict[str, ExampleChoice]
    base_specs: dict[str, PromptSpec] = field(repr=False)
    prompts: dict[str, PromptSpec]
    figures: AlignmentFigures
    spend_usd: float | None
    budget_usd: float | None
    estimate_usd: float | None
    refusals: tuple[str, ...]
    after: BatchResult
    aligned_panel: Ensemble
    panel_file: str | None = None
    instructions: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def base_prompts(self) -> dict[str, str]:
        """Each aligned critic's prompt before, as ``id@version``."""
        return {name: spec.ref for name, spec in self.base_specs.items()}

    @property
    def diffs(self) -> dict[str, str]:
        """Each aligned critic's change as a unified diff of its prompt's text (system
        prompt, then the template as sent, examples in place), old version to new."""
        out = {}
        for name, spec in self.prompts.items():
            old = self.base_specs[name]
            out[name] = "".join(
                difflib.unified_diff(
                    _prompt_text(old).splitlines(keepends=True),
                    _prompt_text(spec).splitlines(keepends=True),
                    fromfile=old.ref,
                    tofile=spec.ref,
                )
            )
        return out

    @property
    def accepted(self) -> bool:
        """Whether :meth:`write` writes without ``force``: no refusal."""
        return not self.refusals

    def panel(self) -> Ensemble:
        """The panel with each aligned critic on its new prompt version."""
        return self.aligned_panel

    def write(
        self,
        directory: str | os.PathLike[str],
        *,
        force: bool = False,
        panel_file: str | os.PathLike[str] | None = None,
    ) -> list[Path]:
        """Write each aligned critic's new prompt version to ``directory``
        (``<id>@<version>.yaml``), the plan's :meth:`record` (``alignment.json``) and,
        given the panel file the panel came from (here or to
        :func:`~cross_judge.alignment.align`), ``directory/panel.yaml``: that panel with the
        aligned critics' ``prompt`` pointing at the new files (other relative paths, of
        prompts and of the ``simulator:`` files, re-pointed from the new folder). Returns
        the paths written. Nothing is overwritten, and the same plan writes the same bytes.

        Raises:
            AlignmentRefused: the plan has refusals (:attr:`refusals`) and ``force`` is
                false; nothing is written.
            ConfigError: a file to write exists already (nothing is written).
        """
        if self.refusals and not force:
            raise AlignmentRefused(self.refusals)
        folder = Path(directory)
        source = panel_file if panel_file is not None else self.panel_file
        targets = [folder / prompt_file_name(spec) for spec in self.prompts.values()]
        targets.append(folder / RECORD_FILE_NAME)
        if source is not None:
            targets.append(folder / PANEL_FILE_NAME)
        existing = [str(path) for path in targets if path.exists()]
        if existing:
            raise ConfigError(
                f"{', '.join(existing)} exist already; an alignment never overwrites a file: "
                "write to another folder, or remove them if they are yours to replace"
            )
        panel_text = None if source is None else self._panel_yaml(Path(source), folder)
        written = [write_prompt(spec, folder) for spec in self.prompts.values()]
        record = folder / RECORD_FILE_NAME
        with open(record, "x", encoding="utf-8", newline="\n") as out:
            out.write(json.dumps(self.record(), indent=2, ensure_ascii=False) + "\n")
        written.append(record)
        if panel_text is not None:
            path = folder / PANEL_FILE_NAME
            with open(path, "x", encoding="utf-8", newline="\n") as out:
                out.write(panel_text)
            written.append(path)
        return written

    def _panel_yaml(self, source: Path, folder: Path) -> str:
        """The panel file at ``source`` with the aligned critics on their new prompts."""
        _, data = load_yaml(read_file(source).decode("utf-8"))
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: a panel file is a mapping")
        files = {name: prompt_file_name(spec) for name, spec in self.prompts.items()}
        simulator = data.get("simulator")
        if isinstance(simulator, dict):  # its files (items, gold, ...) seen from the new folder
            for key, value in simulator.items():
                if isinstance(value, str):
                    simulator[key] = repointed_path(value, source.parent, folder)
        groups = [data] + [t for t in data.get("tiers") or [] if isinstance(t, dict)]
        for group in groups:
            for critic in group.get("critics") or []:
                if not isinstance(critic, dict):
                    continue
                name = critic.get("name")
                if name in files:
                    critic["prompt"] = files[name]
                elif isinstance(critic.get("prompt"), str):
                    critic["prompt"] = repointed_path(critic["prompt"], source.parent, folder)
        header = (
            f"# {source.name} aligned with people's labels (gold sha256 "
            f"{self.gold_sha256[:12]}, seed {self.seed}): "
            + ", ".join(f"{n} -> {f}" for n, f in files.items())
            + "\n"
        )
        return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)

    def record(self) -> dict[str, Any]:
        """The plan as plain data (what ``alignment.json`` holds, what the report shows):
        ``kind`` (:data:`RECORD_KIND`), how it was made, the held-out ids, each critic's
        prompt before and after, its examples (``id``, ``label``, ``reason``), the spend
        and budget, the refusals, and the figures (:func:`figures_record`)."""
        return {
            "kind": RECORD_KIND,
            "method": self.method,
            "k": self.k,
            "holdout": self.holdout,
            "seed": self.seed,
            "shared": self.shared,
            "gold_sha256": self.gold_sha256,
            "held_out": list(self.split.held_out),
            "prompts": {name: spec.ref for name, spec in self.prompts.items()},
            "derived_from": dict(self.base_prompts),
            "examples": {
                name: [
                    {"id": example.id, "label": example.label, "reason": reason}
                    for example, reason in zip(
                        self.prompts[name].examples, choice.reasons, strict=True
                    )
                ]
                for name, choice in self.examples.items()
            },
            "spend_usd": self.spend_usd,
            "budget_usd": self.budget_usd,
            "instructions": dict(self.instructions),
            "notes": list(self.notes),
            "refusals": list(self.refusals),
            "figures": figures_record(self.figures),
        }

    # -- views ------------------------------------------------------------------------------

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """The summary table's rows: figure, before, after, gain, gain interval."""
        out = []
        for name, title in _JURY_ROWS:
            out.append(_row(title, self.figures.jury[name]))
        for critic, figures in self.figures.critics.items():
            for name in ("kappa", "accuracy"):
                out.append(_row(f"{critic}: {name}", figures[name]))
        return out

    def __rich__(self) -> RenderableType:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        figures = self.figures
        table = Table(
            title=(
                f"Alignment ({self.method}"
                + (
                    ""
                    if self.method == "instructions"
                    else f", k={self.k}, {'shared' if self.shared else 'disjoint'} examples"
                )
                + ") on "
                f"{figures.n_items} held-out items, {figures.ci:.0%} intervals"
            )
        )
        for column in ("figure", "before", "after", "gain", "gain interval"):
            table.add_column(column, justify="left" if column == "figure" else "right")
        for row in self.rows():
            table.add_row(*row)
        spend = "unknown" if self.spend_usd is None else f"${self.spend_usd:.4f}"
        budget = "" if self.budget_usd is None else f" of ${self.budget_usd:.4f}"
        lines = [Text(f"measuring calls cost {spend}{budget}")]
        lines += [Text(f"{name}'s instruction: {text}") for name, text in self.instructions.items()]
        lines += [Text(note) for note in (*figures.notes, *self.notes)]
        verdict = (
            Text("would write: " + ", ".join(prompt_file_name(s) for s in self.prompts.values()))
            if self.accepted
            else Text("refused: " + "; ".join(self.refusals), style="bold red")
        )
        return Group(table, *lines, verdict)

    def _repr_html_(self) -> str:
        """The before/after tables in a notebook
        (:func:`cross_judge.report.alignment_fragment` of :meth:`record`)."""
        html: str = provider("alignment_html")(self.record())
        return html

    def __str__(self) -> str:
        import io

        from rich.console import Console

        buffer = io.StringIO()
        Console(file=buffer, width=110, color_system=None, force_terminal=False).print(self)
        return buffer.getvalue().rstrip("\n")


def _prompt_text(spec: PromptSpec) -> str:
    """What a critic with ``spec`` sends, as one text: the system prompt, then the user
    template with its examples in place."""
    return f"{spec.system_prompt.rstrip()}\n\n{spec.template_text.rstrip()}\n"


def _number(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(ci: tuple[float, float] | None, *, signed: bool = False) -> str:
    if ci is None:
        return "-"
    return f"[{_number(ci[0], signed=signed)}, {_number(ci[1], signed=signed)}]"


def _row(title: str, figure: Figure) -> tuple[str, str, str, str, str]:
    return (
        title,
        _number(figure.before),
        _number(figure.after),
        _number(figure.gain, signed=True),
        _interval(figure.gain_ci, signed=True),
    )
