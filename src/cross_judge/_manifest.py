"""The run manifest ``cross-judge review`` writes next to its results: provenance for a
results file.

``<OUT>.manifest.json`` holds one entry per run (a resumed run adds one): when it started
and ended and how (``running`` while it runs, so a killed run shows as such), the package
and Python versions, the command line, the panel (its file's sha256 and every critic's
settings, without keys), each prompt's id, version and sha256, the options (concurrency,
budget, cache) and the totals (items judged, calls, cache hits, tokens, cost). It is
rewritten through a temporary file and an atomic rename, so it is always whole.

Nothing secret goes in: critics are written with :meth:`~cross_judge.core.Critic.
model_dump`, which leaves out the key and any ``user:password@`` of a URL, and keys live in
environment variables, never on the command line or in the panel file.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .ensemble import Ensemble

__all__ = ["RunManifest", "manifest_path"]

MANIFEST_VERSION = 1


def manifest_path(results: Path) -> Path:
    """``results.jsonl`` -> ``results.jsonl.manifest.json``."""
    return results.with_name(results.name + ".manifest.json")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class RunManifest:
    """One run's entry in the manifest of a results file. :meth:`start` writes it with
    status ``running``; :meth:`finish` records how it ended and the totals."""

    def __init__(self, results: Path, entry: dict[str, Any]) -> None:
        self.path = manifest_path(results)
        self._results = results
        self._entry = entry

    @classmethod
    def start(
        cls,
        results: Path,
        *,
        ensemble: Ensemble,
        argv: Sequence[str],
        items: Path,
        panel: Path,
        options: dict[str, Any],
    ) -> RunManifest:
        """Add a ``running`` entry for this run to the manifest of ``results``."""
        entry: dict[str, Any] = {
            "status": "running",
            "started_at": _now(),
            "ended_at": None,
            "cross_judge": __version__,
            "python": platform.python_version(),
            "platform": sys.platform,
            "command": ["cross-judge", *argv],
            "items": {"file": str(items)},
            "panel": {
                "file": str(panel),
                "sha256": _sha256(panel),
                "voting": str(getattr(ensemble.voting, "__name__", ensemble.voting)),
                "voting_kwargs": ensemble.voting_kwargs,
                "critics": [critic.model_dump() for critic in ensemble.critics],
            },
            "prompts": {
                critic.name: {
                    "id": critic._prompt_provenance()[0],
                    "version": critic._prompt_provenance()[1],
                    "sha256": critic.prompt_sha256,
                }
                for critic in ensemble.critics
            },
            "options": options,
            "totals": None,
        }
        manifest = cls(results, entry)
        manifest._write()
        return manifest

    def finish(self, status: str, totals: dict[str, Any]) -> None:
        """Record how the run ended (``done``, ``failed``, ``interrupted``) and its totals."""
        self._entry.update(status=status, ended_at=_now(), totals=totals)
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
