"""Runs to compare, built in memory: a panel of three critics judging items, each item's
consensus and votes given, written to a results file with a manifest when a test needs one."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cross_judge.batch import BatchResult
from cross_judge.rubric import CriterionConsensus, Rubric
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

CRITICS = ("a", "b", "c")
SHA = "0" * 64


def verdict(critic: str, kind: str, *, score: float | None = None, sha: str = SHA) -> Verdict:
    failed = kind in ("ERROR", "PARSE_FAIL")
    return Verdict(
        kind=kind,
        critic_id=critic,
        vendor="openai",
        model=f"model-{critic}",
        prompt_id="review",
        prompt_version="1",
        prompt_sha256=sha,
        score=None if failed else score,
        error="failed" if failed else None,
    )


def result(
    item_id: str,
    consensus: str,
    votes: Sequence[str] | None = None,
    *,
    text: str | None = None,
    score: float | None = None,
    tier: int | None = None,
    criteria: Mapping[str, str] | None = None,
    voting: str = "majority",
    sha: str = SHA,
) -> EnsembleVerdict:
    """One item's result: ``votes`` per critic of :data:`CRITICS` (all the consensus by
    default); ``criteria`` gives each criterion's consensus (PASS/FAIL scale)."""
    kinds = list(votes) if votes is not None else [consensus] * len(CRITICS)
    fields: dict[str, Any] = {}
    if criteria is not None:
        fields["criteria"] = {
            cid: CriterionConsensus(consensus=label, score=1.0 if label == "PASS" else 0.0)
            for cid, label in criteria.items()
        }
        fields["rubric"] = Rubric.model_validate(
            {"criteria": [{"id": cid, "requirement": f"{cid} holds"} for cid in criteria]}
        )
    return EnsembleVerdict(
        query_id=item_id,
        verdicts=[verdict(c, k, score=score, sha=sha) for c, k in zip(CRITICS, kinds, strict=True)],
        consensus=consensus,
        voting=voting,
        score=score,
        tier=tier,
        item=ItemText(query=text if text is not None else f"the answer to {item_id}"),
        **fields,
    )


def batch(results: Sequence[EnsembleVerdict], *, manifest: bool = True) -> BatchResult:
    made = BatchResult.from_results(results)
    if manifest:
        made.manifest_runs = [manifest_entry()]
    return made


def labels_run(labels: Sequence[str], **options: Any) -> BatchResult:
    """Items ``i0, i1, ...`` whose consensus (and every vote) is the given label."""
    return batch([result(f"i{n}", label) for n, label in enumerate(labels)], **options)


def manifest_entry(**critic_settings: Any) -> dict[str, Any]:
    """A manifest run entry for the panel of :data:`CRITICS` (each critic's settings
    updated with ``critic_settings``)."""
    critics = [
        {
            "name": c,
            "vendor": "openai",
            "model": f"model-{c}",
            "temperature": 0.0,
            **critic_settings,
        }
        for c in CRITICS
    ]
    return {
        "status": "done",
        "started_at": "2026-12-01T00:00:00+00:00",
        "command": ["cross-judge", "review"],
        "panel": {
            "voting": "majority",
            "voting_kwargs": {},
            "min_valid": 1,
            "early_stop": False,
            "critics": critics,
        },
        "prompts": {c: {"id": "review", "version": "1", "sha256": SHA} for c in CRITICS},
        "options": {},
    }


def write_run(
    path: Path, run: BatchResult, *, entries: Sequence[dict[str, Any]] | None = None
) -> Path:
    """``run`` as a results file with a manifest of ``entries`` (the run's own by default;
    none written when there are none)."""
    run.to_jsonl(path)
    runs = list(entries) if entries is not None else run.manifest_runs
    if runs:
        manifest = path.with_name(path.name + ".manifest.json")
        manifest.write_text(json.dumps({"manifest_version": 1, "runs": runs}), encoding="utf-8")
    return path
