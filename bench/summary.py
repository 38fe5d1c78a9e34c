"""Every target of the last benchmark runs, as one Markdown table (docs/performance.md's).

Reads ``bench/results/*.json``; prints the machine, then one row per check: benchmark,
what is measured, value, target and PASS/MISS; then the ratios reported without a target.
Exit status 1 if any check missed or a benchmark has no results yet, so ``nox -s bench``
ends red on a MISS.

    python bench/summary.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ORDER = (
    "fanout",
    "throughput",
    "transport",
    "cpu",
    "coldstart",
    "loop_stall",
    "redaction",
    "memory",
    "savings",
    "cascade",
    "units",
    "content",
    "confidence_sources",
    "reliability",
    "bias",
    "batch",
    "images",
    "ray",
    "otel",
    "stats",
    "stats_memory",
    "import",
    "label_queue",
    "journal",
    "ranking",
    "rank_scale",
    "rank_votes",
    "rank_design",
    "align",
    "select_panel",
    "dawid_skene",
    "revote",
    "estimates",
    "compare",
    "vs_01",
)


def _value(check: dict[str, Any]) -> str:
    value, unit = check["value"], check["unit"]
    if value is None:
        return "n/a"
    return f"{value:.3g}{unit}" if abs(value) >= 1e-3 or value == 0 else f"{value:.1e}{unit}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main() -> int:
    documents = []
    missing = []
    for name in ORDER:
        path = RESULTS / f"{name}.json"
        if path.exists():
            documents.append(json.loads(path.read_text(encoding="utf-8")))
        else:
            missing.append(name)
    if not documents:
        print(f"no results in {RESULTS}: run nox -s bench first")
        return 1
    info = documents[0]["machine"]
    print(
        f"{info['cpus']} CPUs ({info['cpu']}), Python {info['python']}, cross-judge "
        f"{info['cross_judge']}, {info['date'][:10]}\n"
    )
    print("| benchmark | measure | value | target | |")
    print("|---|---|---:|---:|---|")
    missed = 0
    for document in documents:
        for check in document["checks"]:
            result = "PASS" if check["passed"] else "MISS"
            missed += not check["passed"]
            print(
                f"| {document['benchmark']} | {_cell(check['name'])} | {_value(check)} | "
                f"{check['op']} {check['target']:g}{check['unit']} | {result} |"
            )
    for name in missing:
        print(f"| {name} | no results: run bench/bench_{name}.py | | | MISS |")
    reported = [
        (document["benchmark"], note)
        for document in documents
        for note in document.get("notes", [])
        if "reported, no target" in note
    ]
    if reported:
        print("\nReported without a target:\n")
        for benchmark, note in reported:
            print(f"- {benchmark}: {note}")
    return 1 if missed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
