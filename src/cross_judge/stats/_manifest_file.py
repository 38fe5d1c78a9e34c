"""The run manifest beside a results file, read without ever raising: where it is, the
runs it records, and what they say about simulated critics.

:mod:`cross_judge.report._manifest` writes the manifest; this base-layer module only reads
it, for the result models (:meth:`cross_judge.batch.BatchResult.from_jsonl`) and the views.
A missing or unreadable manifest reads as no runs: a view then has nothing to say.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "manifest_path",
    "manifest_runs",
    "recorded_simulated_critics",
    "recorded_simulated_without_gold",
]


def manifest_path(results: str | os.PathLike[str]) -> Path:
    """The run manifest beside a results file: ``out.jsonl`` -> ``out.jsonl.manifest.json``
    (see :mod:`cross_judge.report._manifest`)."""
    path = Path(results)
    return path.with_name(path.name + ".manifest.json")


def manifest_runs(results: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The runs the manifest beside ``results`` records, oldest first; empty when there is
    no manifest or it cannot be read. Never raises."""
    try:
        with open(manifest_path(results), encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return []
    runs = document.get("runs") if isinstance(document, dict) else None
    return [run for run in runs if isinstance(run, dict)] if isinstance(runs, list) else []


def _run_options(run: dict[str, Any]) -> dict[str, Any]:
    options = run.get("options")
    return options if isinstance(options, dict) else {}


def recorded_simulated_critics(results: str | os.PathLike[str]) -> list[str]:
    """The critics the run manifest beside ``results`` records as simulated (each run's
    ``options.simulated_critics``, first-seen order): their answers came from the
    simulated vendor, not a language model. Empty when there is no manifest, or it cannot
    be read (a view then has nothing to say, and says nothing). Never raises."""
    names: dict[str, None] = {}
    for run in manifest_runs(results):
        listed = _run_options(run).get("simulated_critics")
        if isinstance(listed, list):
            names.update((str(name), None) for name in listed)
    return list(names)


def recorded_simulated_without_gold(results: str | os.PathLike[str]) -> list[str]:
    """The simulated critics of the runs whose simulator, as the manifest beside ``results``
    records it (``options.simulator``, written by ``cross-judge review`` for a panel file
    with simulated critics), was told no item's truth (``gold: false``): each item's truth
    was drawn from a hash of its text, so these critics' accuracy against the user's gold
    labels is chance agreement. First-seen order; empty for manifests that do not record
    the simulator (older runs, Python-built panels), or when there is no readable manifest.
    Never raises."""
    names: dict[str, None] = {}
    for run in manifest_runs(results):
        simulator = _run_options(run).get("simulator")
        if not isinstance(simulator, dict) or simulator.get("gold") is not False:
            continue
        listed = simulator.get("critics")
        if isinstance(listed, list):
            names.update((str(name), None) for name in listed)
    return list(names)
