"""What every benchmark prints and writes: a table of measurements, then each target with
PASS or MISS, then ``bench/results/<name>.json`` (rows, checks and the machine).

Ratios are computed inside one run (a baseline measured in the same process, or a physical
limit), so a busy machine moves numerator and denominator together.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cross_judge

RESULTS = Path(__file__).parent / "results"


def machine() -> dict[str, Any]:
    """Where the numbers come from."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "platform": sys.platform,
        "cross_judge": cross_judge.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


@dataclass
class Check:
    """One target: ``value`` against ``target`` (``<=`` or ``>=``)."""

    name: str
    value: float | None
    op: str
    target: float
    unit: str = ""
    note: str = ""

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value <= self.target if self.op == "<=" else self.value >= self.target

    def line(self) -> str:
        shown = "n/a" if self.value is None else f"{self.value:.3g}{self.unit}"
        verdict = "PASS" if self.passed else "MISS"
        text = f"  {verdict}  {self.name}: {shown} (target {self.op} {self.target:g}{self.unit})"
        return text + (f"  [{self.note}]" if self.note else "")


class Report:
    """Collects one benchmark's rows and checks; :meth:`finish` prints and writes them."""

    def __init__(self, name: str, title: str, **params: Any) -> None:
        self.name = name
        self.title = title
        self.params = params
        self.rows: list[dict[str, Any]] = []
        self.checks: list[Check] = []
        self.notes: list[str] = []

    def row(self, **values: Any) -> None:
        self.rows.append(values)

    def check(
        self,
        name: str,
        value: float | None,
        *,
        at_most: float | None = None,
        at_least: float | None = None,
        unit: str = "",
        note: str = "",
    ) -> Check:
        if (at_most is None) == (at_least is None):
            raise ValueError("give exactly one of at_most / at_least")
        op, target = ("<=", at_most) if at_most is not None else (">=", at_least)
        assert target is not None
        item = Check(name, value, op, target, unit, note)
        self.checks.append(item)
        return item

    def note(self, text: str) -> None:
        self.notes.append(text)

    def finish(self, columns: list[tuple[str, str]] | None = None) -> int:
        """Print the table (``columns``: (key, heading) pairs; default every key) and the
        checks; write the JSON. Returns 0: a MISS is a finding, not a crash."""
        info = machine()
        print(f"\n== {self.title}")
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        print(
            f"   {params}; python {info['python']}, {info['cpus']} CPUs ({info['cpu']}), "
            f"cross-judge {info['cross_judge']}"
        )
        if self.rows:
            cols = columns or [(k, k) for k in self.rows[0]]
            cells = [[_fmt(r.get(k)) for k, _ in cols] for r in self.rows]
            widths = [max(len(h), *(len(c[i]) for c in cells)) for i, (_, h) in enumerate(cols)]
            print("   " + "  ".join(h.rjust(w) for (_, h), w in zip(cols, widths, strict=True)))
            for line in cells:
                print("   " + "  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
        for text in self.notes:
            print(f"   note: {text}")
        for item in self.checks:
            print(item.line())
        RESULTS.mkdir(exist_ok=True)
        out = RESULTS / f"{self.name}.json"
        document = {
            "benchmark": self.name,
            "title": self.title,
            "params": self.params,
            "machine": info,
            "rows": self.rows,
            "checks": [asdict(c) | {"passed": c.passed} for c in self.checks],
            "notes": self.notes,
        }
        out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"   wrote {out}")
        return 0


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)
