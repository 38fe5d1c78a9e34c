"""Comparing two runs of the same judge on the same items: :func:`compare_runs`.

The baseline and the candidate are each a :class:`~cross_judge.batch.BatchResult`, a
results file (``cross-judge review --out``, read line by line into a lean table of what a
comparison needs, so two 100,000-item files compare in seconds and a few hundred MB), or a
:class:`~cross_judge.ranking.Ranking` (or its JSON file) for ranking runs.

In order, a comparison

1. pairs the items by id: ids only one run judged are refused (``allow_unmatched`` lists
   them in the result instead), never dropped in silence;
2. checks that the judge is the same: the two run manifests (prompt sha256, models,
   vendors, answer settings, voting, tiers; :func:`cross_judge.report._manifest.
   panel_changes`) and, in every case, what each verdict records (each critic's vendor,
   model and prompt sha256, the voting, cascade or not). A different judge is refused with
   the differences listed unless ``allow_panel_change``; a run without a manifest is
   refused unless ``allow_missing_manifest`` (the results' own record is then all that is
   compared, and the result says so);
3. measures the metric on each run over the paired items and tests the difference with a
   paired test (:mod:`cross_judge.stats._paired`): exact McNemar with an Agresti-Min
   interval for a label share or an accuracy against gold; the Wilcoxon signed-rank test
   with a paired-bootstrap interval for scores; for ranking runs, a paired bootstrap of
   the refitted ratings (:mod:`cross_judge.report._compare_ranking`);
4. does the same per consensus label, per critic and per rubric criterion, each family
   with Holm's correction, and lists the items that moved each way with their texts;
5. with ``noise`` (a second judgement of the baseline's outputs, an A/A run), measures the
   judge's own noise the same way.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._extensions import provide
from ..errors import ConfigError
from ..rubric import DEFAULT_SCALE
from ..stats import CompareMetric, Difference, FailOn, Flip, RunDiff
from ._compare_stats import (
    Metric,
    Options,
    compare_keys,
    criterion_rows,
    critic_rows,
    flips,
    label_rows,
    metric_of,
    paired_rows,
    yes,
)
from ._manifest import panel_changes
from ._run_table import RunTable, read_run

if TYPE_CHECKING:
    from ..verdict import EnsembleVerdict

# The result's types, re-exported: the report package's face names them from here.
__all__ = ["CompareMetric", "Difference", "FailOn", "Flip", "RunDiff", "compare_runs"]

_SHOWN_IDS = 5
"""The ids an error about unmatched items names, each way."""


# -- the judge ------------------------------------------------------------------------------


def _shown(what: str, value: str | None) -> str:
    """A value in a change line; a prompt's sha256 cut to 12 characters, as the
    manifest's changes show it."""
    if value is None:
        return "none"
    return value[:12] if what == "prompt sha256" else value


def _identity_changes(base: RunTable, cand: RunTable) -> list[str]:
    """How the judge differs by what the verdicts record: critics added or removed, a
    critic's vendor, model or prompt, the voting."""
    changes: list[str] = []
    added = [name for name in cand.critics if name not in base.critics]
    removed = [name for name in base.critics if name not in cand.critics]
    critics = [f"added {name!r}" for name in added] + [f"removed {name!r}" for name in removed]
    for name, now in cand.critics.items():
        was = base.critics.get(name)
        if was is None or was == now:
            continue
        differ = [
            f"{what} {_shown(what, before)} -> {_shown(what, after)}"
            for what, before, after in zip(
                ("vendor", "model", "prompt sha256"), was, now, strict=True
            )
            if before != after
        ]
        critics.append(f"{name!r} " + ", ".join(differ))
    if critics:
        changes.append("critics: " + "; ".join(critics))
    if list(base.voting) != list(cand.voting):
        changes.append(f"voting: {', '.join(base.voting)} -> {', '.join(cand.voting)}")
    return changes


def _judge_changes(
    base: RunTable, cand: RunTable, *, allow_missing_manifest: bool
) -> tuple[list[str], bool]:
    """The differences between the two judges, and whether the manifests were compared.

    Raises:
        ConfigError: a cascade's results against one ensemble's (unless the caller allows
            a panel change: the message says how), or a run without a manifest.
    """
    rankings = base.ranking is not None and cand.ranking is not None
    missing = [run for run in (base, cand) if not run.has_manifest]
    if missing and not allow_missing_manifest and not rankings:
        names = " and ".join(f"{run.name!r}" for run in missing)
        raise ConfigError(
            f"{names} {'has' if len(missing) == 1 else 'have'} no run manifest, so the "
            "judge's answer settings cannot be checked against the other run's. Keep the "
            "OUT.jsonl.manifest.json `cross-judge review` writes beside its results file, or "
            "pass allow_missing_manifest=True (--allow-missing-manifest) to compare the judge "
            "on what the results record only: each critic's vendor, model and prompt sha256, "
            "and the voting"
        )
    changes: list[str] = []
    compared = not missing
    if compared:
        for run in (base, cand):
            for earlier, later in zip(run.manifest_runs, run.manifest_runs[1:], strict=False):
                within = panel_changes(earlier, later)
                if within:
                    changes.append(
                        f"{run.name}: its runs used different panels ({'; '.join(within)})"
                    )
        changes += panel_changes(base.manifest_runs[-1], cand.manifest_runs[-1])
    if not any(change.startswith(("critics:", "voting:")) for change in changes):
        changes += _identity_changes(base, cand)
    if base.cascade != cand.cascade and not any(c.startswith("panel:") for c in changes):
        kind = {True: "a cascade", False: "one ensemble"}
        changes.insert(0, f"panel: {kind[base.cascade]} -> {kind[cand.cascade]}")
    return changes, compared


def _refuse_panel_change(base: RunTable, cand: RunTable, changes: Sequence[str]) -> ConfigError:
    if base.cascade != cand.cascade:
        which = (base, cand) if base.cascade else (cand, base)
        return ConfigError(
            f"{which[0].name!r} holds a cascade's results (each item decided by one tier) and "
            f"{which[1].name!r} one ensemble's: their consensus labels come from different "
            "decisions, so a difference would measure the panels, not the outputs. Compare "
            "a cascade's run with a run of the same cascade; to see what the cascade changes "
            "against the full panel anyway, pass allow_panel_change=True "
            "(--allow-panel-change). Differences: " + "; ".join(changes)
        )
    lines = "\n".join(f"  - {change}" for change in changes)
    return ConfigError(
        f"the judge differs between {base.name!r} and {cand.name!r}, so a difference would "
        f"mix the change you made with the judge's:\n{lines}\nJudge both with the same panel "
        "file and prompts, or pass allow_panel_change=True (--allow-panel-change) to "
        "compare anyway (the result then says the panel changed)"
    )


# -- pairing --------------------------------------------------------------------------------


def _pair(
    base: RunTable, cand: RunTable, *, allow_unmatched: bool
) -> tuple[list[str], list[str], list[str]]:
    """The ids both runs judged (the candidate's order), and those only one did.

    Raises:
        ConfigError: no id in common, or ids only one run judged unless allowed.
    """
    paired = [item_id for item_id in cand.rows if item_id in base.rows]
    base_only = [item_id for item_id in base.rows if item_id not in cand.rows]
    cand_only = [item_id for item_id in cand.rows if item_id not in base.rows]
    if not paired:
        raise ConfigError(
            f"{base.name!r} and {cand.name!r} share no item id ({len(base.rows)} and "
            f"{len(cand.rows)} items): a comparison pairs the items by id, so judge the same "
            "items file in both runs (the candidate's outputs under the baseline's ids)"
        )
    if (base_only or cand_only) and not allow_unmatched:

        def shown(ids: list[str]) -> str:
            more = f", ... {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else ""
            return ", ".join(repr(i) for i in ids[:_SHOWN_IDS]) + more

        parts = []
        if base_only:
            parts.append(f"{len(base_only)} only in {base.name!r} ({shown(base_only)})")
        if cand_only:
            parts.append(f"{len(cand_only)} only in {cand.name!r} ({shown(cand_only)})")
        raise ConfigError(
            f"the runs judged different items: {len(paired)} in both, "
            + "; ".join(parts)
            + ". Judge the same items in both runs (finish an interrupted run with "
            "`cross-judge review --resume`), or pass allow_unmatched=True "
            "(--allow-unmatched) to compare the shared items (the others are listed in "
            "the result)"
        )
    return paired, base_only, cand_only


# -- the comparison -------------------------------------------------------------------------


def _chosen_metric(metric: str, gold: object, base: RunTable, cand: RunTable) -> str:
    known = ("auto", "label_share", "accuracy", "score", "rating")
    if metric not in known:
        raise ConfigError(f"metric must be one of {', '.join(known)}, not {metric!r}")
    ranking = base.ranking is not None and cand.ranking is not None
    if metric == "auto":
        return "rating" if ranking else "accuracy" if gold is not None else "label_share"
    if metric == "rating" and not ranking:
        raise ConfigError(
            "metric='rating' compares ranking runs (results of `cross-judge rank` or "
            "cross_judge.ranking.rank); these are not: use label_share, accuracy or score"
        )
    if metric == "accuracy" and gold is None:
        raise ConfigError(
            "metric='accuracy' needs gold labels: pass gold={id: label} or a gold file "
            "(--gold labels.jsonl), or compare a label share (metric='label_share')"
        )
    return metric


def _chosen_label(label: str | None, paired: Sequence[str], base: RunTable, cand: RunTable) -> str:
    seen = dict.fromkeys(base.rows[i].consensus for i in paired)
    seen.update(dict.fromkeys(cand.rows[i].consensus for i in paired))
    if label is not None:
        if label not in seen:
            raise ConfigError(
                f"label {label!r} is no consensus of either run; their labels: " + ", ".join(seen)
            )
        return label
    if "PASS" in seen:
        return "PASS"
    raise ConfigError(
        "metric='label_share' measures the share of one label, and these runs have no PASS: "
        f"name it with label=... (--label); their labels: {', '.join(seen)}"
    )


def _checked_options(alpha: float, min_effect: float, confidence: float, resamples: int) -> None:
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be between 0 and 1 (e.g. 0.05), not {alpha!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (e.g. 0.95), not {confidence!r}")
    if not math.isfinite(min_effect) or min_effect < 0.0:
        raise ConfigError(
            f"min_effect must be 0 or more (a difference in the metric's units, e.g. 0.02 "
            f"for 2 points of a share), not {min_effect!r}"
        )
    if resamples < 100:
        raise ConfigError(f"resamples must be at least 100 (2000 is the default), not {resamples}")


def _noise_row(
    base: RunTable, noise: RunTable, metric: Metric, options: Options, allow_missing_manifest: bool
) -> Difference:
    """The A/A check: the baseline against a second judgement of its own outputs.

    Raises:
        ConfigError: the noise run is another judge's, or judged other outputs or items.
    """
    changes, _compared = _judge_changes(base, noise, allow_missing_manifest=allow_missing_manifest)
    if changes:
        raise ConfigError(
            f"the noise run {noise.name!r} is not the baseline's judge judging again: "
            + "; ".join(changes)
            + ". An A/A check judges the baseline's outputs a second time with the same "
            "panel (and no cache: `cross-judge review --cache` off)"
        )
    paired = [item_id for item_id in base.rows if item_id in noise.rows]
    if not paired:
        raise ConfigError(
            f"the noise run {noise.name!r} shares no item id with the baseline: judge the "
            "baseline's items file a second time"
        )
    before, again = paired_rows(paired, base), paired_rows(paired, noise)
    differ = sum(
        1
        for was, now in zip(before, again, strict=True)
        if was.text_key is not None and now.text_key is not None and was.text_key != now.text_key
    )
    if differ:
        raise ConfigError(
            f"the noise run {noise.name!r} judged other outputs than the baseline on {differ} "
            "of its items: an A/A check judges the baseline's own outputs a second time"
        )
    return compare_keys(
        "judge noise (A/A)",
        metric.item_keys(paired, before),
        metric.item_keys(paired, again),
        metric.value,
        metric.binary,
        options,
    )


def _rating_resamples(results: Sequence[EnsembleVerdict], asked: int, alpha: float) -> int:
    """The bootstrap resamples of a ranking's comparison: enough that Holm's correction
    over its candidates can reach ``alpha`` (the smallest bootstrap p is 1/(resamples + 1),
    times the candidates), at least 200, at most ``asked``."""
    candidates = {
        name
        for result in results
        if isinstance(rank := result.meta.get("rank"), Mapping)
        for name in (rank.get("a"), rank.get("b"))
    }
    return min(asked, max(200, math.ceil(2 * len(candidates) / alpha)))


@provide("compare")
def compare_runs(
    baseline: Any,
    candidate: Any,
    *,
    metric: CompareMetric = "auto",
    gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
    label: str | None = None,
    noise: Any = None,
    alpha: float = 0.05,
    min_effect: float = 0.0,
    confidence: float = 0.95,
    higher_is_better: bool = True,
    allow_panel_change: bool = False,
    allow_missing_manifest: bool = False,
    allow_unmatched: bool = False,
    resamples: int = 2000,
    seed: int = 0,
) -> RunDiff:
    """Compare ``candidate`` against ``baseline``: the same judge on the same items.

    ``baseline``, ``candidate`` and ``noise`` are each a
    :class:`~cross_judge.batch.BatchResult`, a :class:`~cross_judge.ranking.Ranking`, or
    the path of a results file (read leanly, with the manifest beside it) or of a
    ranking's JSON file.

    Args:
        metric: what to compare (:data:`~cross_judge.report.CompareMetric`); ``"auto"``
            picks ``rating`` for rankings, ``accuracy`` with ``gold``, else
            ``label_share``.
        gold: ``{id: label}`` or a gold file, for ``accuracy``.
        label: the label of ``label_share`` (default ``PASS``).
        noise: a second judgement of the baseline's outputs (an A/A run, no cache): the
            judge's own noise is measured the same way and reported beside.
        alpha: the significance level of every decision; ``min_effect`` the smallest
            difference (in the metric's units: 0.02 is 2 points of a share) a regression
            or change must exceed to count; ``confidence`` the intervals' level.
        higher_is_better: the metric's direction (False for, say, a FAIL share).
        allow_panel_change: compare even when the judge differs (the result lists how).
        allow_missing_manifest: compare a run without a manifest on what its results
            record (vendor, model, prompt sha256, voting).
        allow_unmatched: compare the shared items when the runs judged different ones
            (the others are listed in the result).
        resamples, seed: the paired bootstrap's.

    Raises:
        ConfigError: bad options; a missing or unreadable file; no shared item, or
            unmatched items (unless allowed); a different judge (unless allowed), a
            cascade's results against one ensemble's among them; a missing manifest
            (unless allowed); a label no run has; gold on none of the paired items.
    """
    _checked_options(alpha, min_effect, confidence, resamples)
    base = read_run(baseline, "baseline", text_keys=noise is not None)
    cand = read_run(candidate, "candidate")
    chosen = _chosen_metric(str(metric), gold, base, cand)
    changes, compared = _judge_changes(base, cand, allow_missing_manifest=allow_missing_manifest)
    if changes and not allow_panel_change:
        raise _refuse_panel_change(base, cand, changes)
    paired, base_only, cand_only = _pair(base, cand, allow_unmatched=allow_unmatched)
    options = Options(alpha, confidence, higher_is_better, resamples, seed)
    notes: list[str] = []
    if not compared:
        missing = " and ".join(run.name for run in (base, cand) if not run.has_manifest)
        notes.append(
            f"no run manifest for {missing}: the judge was compared on what the results "
            "record (vendor, model, prompt sha256, voting), not its answer settings"
        )
    common: dict[str, Any] = {
        "baseline_name": base.name,
        "candidate_name": cand.name,
        "n_paired": len(paired),
        "baseline_only": base_only,
        "candidate_only": cand_only,
        "alpha": alpha,
        "min_effect": min_effect,
        "confidence": confidence,
        "higher_is_better": higher_is_better,
        "panel_changes": changes,
        "panel_change_allowed": bool(changes),
        "manifests_compared": compared,
    }
    if chosen == "rating":
        from ._compare_ranking import rating_differences

        assert base.ranking is not None
        assert cand.ranking is not None
        ratings, rating_notes = rating_differences(
            base.ranking,
            cand.ranking,
            confidence=confidence,
            resamples=_rating_resamples(base.ranking, resamples, alpha),
            seed=seed,
        )
        decided = [
            [row.consensus in ("A", "B", "TIE") for row in paired_rows(paired, run)]
            for run in (base, cand)
        ]
        main = compare_keys("decided pairs", decided[0], decided[1], yes, True, options)
        return RunDiff(
            metric="rating", main=main, ratings=ratings, notes=notes + rating_notes, **common
        )
    gold_labels = None
    if chosen == "accuracy":
        from ..stats import load_gold

        gold_labels = load_gold(gold)  # type: ignore[arg-type]
        covered = sum(1 for i in paired if i in gold_labels)
        if not covered:
            raise ConfigError(
                f"no paired item has a gold label ({len(gold_labels)} labels, {len(paired)} "
                "paired items): the gold file's ids must be the results' item ids"
            )
        notes.append(f"accuracy on the {covered} of {len(paired)} paired items with a gold label")
    chosen_label = _chosen_label(label, paired, base, cand) if chosen == "label_share" else None
    measure = metric_of(chosen, chosen_label, gold_labels)
    rows = (paired_rows(paired, base), paired_rows(paired, cand))
    keys = (measure.item_keys(paired, rows[0]), measure.item_keys(paired, rows[1]))
    main = compare_keys(measure.name, keys[0], keys[1], measure.value, measure.binary, options)
    if chosen == "score" and main.n < len(paired):
        notes.append(f"{len(paired) - main.n} paired items have no score in a run: left out")
    noise_row = None
    if noise is not None:
        noise_row = _noise_row(
            base, read_run(noise, "noise", text_keys=True), measure, options, allow_missing_manifest
        )
    only = [n for n in (*base.critics, *cand.critics) if (n in base.critics) != (n in cand.critics)]
    if only:
        notes.append("critics only one run has, not compared: " + ", ".join(dict.fromkeys(only)))
    shared = [name for name in cand.critics if name in base.critics]
    # A label share's keys are the consensus labels themselves.
    labels = label_rows(keys, options) if chosen == "label_share" else []
    return RunDiff(
        metric=chosen,  # type: ignore[arg-type]
        label=chosen_label,
        main=main,
        labels=labels,
        critics=critic_rows(paired, rows, shared, measure, gold_labels, options),
        criteria=criterion_rows(rows, cand.scale or base.scale or DEFAULT_SCALE, options),
        flips=flips(paired, (base, cand), keys, measure, options),
        noise=noise_row,
        notes=notes,
        **common,
    )
