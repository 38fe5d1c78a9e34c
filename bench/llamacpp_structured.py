"""Structured answers on a real llama.cpp server: parse failures with and without an
enforced schema, and stated vs token-probability confidence (issue 27).

Judges 20 short code-review items with known answers (10 PASS, 10 FAIL) with the packaged
``pass-fail@2`` prompt and a ``llamacpp`` critic, once per mode:

* ``json``: ``structured="json"`` (what ``json_mode=True`` sends: ``{"type":
  "json_object"}``, no schema);
* ``schema``: ``structured="schema"`` (the preset's dialect: ``{"type": "json_object",
  "schema": {...}}``, enforced by llama.cpp with a grammar), ``confidence="logprob"``;
* ``auto``: ``structured="auto"``, ``confidence="auto"``.

Per mode it prints the PARSE_FAILs of 20, the labels given, the accuracy against the gold
labels (over all 20 items: a verdict without a label counts as wrong), and, where the
verdicts carry both, the expected calibration error (10 bins) of the stated and of the
token-probability confidence. Issue 27 expects: json 20 PARSE_FAILs in 20, schema a
label on >= 19 of 20.

Not run in CI: it needs a llama-cpp-python server, e.g.::

    python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8080 \\
        --n_ctx 2048 --n_threads 1
    python bench/llamacpp_structured.py [--base-url http://127.0.0.1:8080/v1]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from cross_judge import Critic, Verdict
from cross_judge.stats._confidence_calibration import expected_calibration_error

ITEMS: list[tuple[str, str]] = [
    ("Task: return the sum of two ints.\ndef add(a, b):\n    return a + b", "PASS"),
    ("Task: return the sum of two ints.\ndef add(a, b):\n    return a - b", "FAIL"),
    ("Task: return the larger of a and b.\ndef biggest(a, b):\n    return max(a, b)", "PASS"),
    ("Task: return the larger of a and b.\ndef biggest(a, b):\n    return min(a, b)", "FAIL"),
    ("Task: reverse a string.\ndef rev(s):\n    return s[::-1]", "PASS"),
    ("Task: reverse a string.\ndef rev(s):\n    return s", "FAIL"),
    ("Task: is n even?\ndef even(n):\n    return n % 2 == 0", "PASS"),
    ("Task: is n even?\ndef even(n):\n    return n % 2 == 1", "FAIL"),
    ("Task: length of a list.\ndef size(xs):\n    return len(xs)", "PASS"),
    ("Task: length of a list.\ndef size(xs):\n    return len(xs) + 1", "FAIL"),
    ("Task: square a number.\ndef square(x):\n    return x * x", "PASS"),
    ("Task: square a number.\ndef square(x):\n    return x * 2", "FAIL"),
    ("Task: first element of a non-empty list.\ndef head(xs):\n    return xs[0]", "PASS"),
    ("Task: first element of a non-empty list.\ndef head(xs):\n    return xs[-1]", "FAIL"),
    ("Task: absolute value.\ndef absolute(x):\n    return x if x >= 0 else -x", "PASS"),
    ("Task: absolute value.\ndef absolute(x):\n    return -x", "FAIL"),
    ("Task: upper-case a string.\ndef shout(s):\n    return s.upper()", "PASS"),
    ("Task: upper-case a string.\ndef shout(s):\n    return s.lower()", "FAIL"),
    ("Task: sum of a list.\ndef total(xs):\n    return sum(xs)", "PASS"),
    ("Task: sum of a list.\ndef total(xs):\n    return sum(xs[1:])", "FAIL"),
]


@dataclass(frozen=True)
class Mode:
    name: str
    options: dict[str, Any]


MODES = (
    Mode("json", {"structured": "json"}),
    Mode("schema", {"structured": "schema", "confidence": "logprob"}),
    Mode("auto", {"structured": "auto", "confidence": "auto"}),
)


def ece(confidences: list[float], correct: list[bool]) -> float | None:
    return expected_calibration_error(confidences, correct) if confidences else None


def summarise(mode: Mode, verdicts: list[Verdict], seconds: float) -> dict[str, Any]:
    gold = [g for _, g in ITEMS]
    labels = collections.Counter(v.kind for v in verdicts)
    right = [v.kind == g for v, g in zip(verdicts, gold, strict=True)]
    valid = [(v, ok) for v, ok in zip(verdicts, right, strict=True) if v.is_valid]
    stated = [(v.stated_confidence, ok) for v, ok in valid if v.stated_confidence is not None]
    stated += [(v.confidence, ok) for v, ok in valid if v.confidence_source == "stated"]
    logprob = [(v.confidence, ok) for v, ok in valid if v.confidence_source == "logprob"]
    return {
        "mode": mode.name,
        "options": mode.options,
        "parse_fail": labels.get("PARSE_FAIL", 0),
        "errors": sum(1 for v in verdicts if v.kind == "ERROR"),
        "labelled": sum(1 for v in verdicts if v.kind in ("PASS", "FAIL")),
        "labels": dict(labels),
        "accuracy": sum(right) / len(right),
        "sources": dict(collections.Counter(v.confidence_source for v in verdicts)),
        "structured": dict(collections.Counter(str(v.structured) for v in verdicts)),
        "ece_stated": ece([c for c, _ in stated], [ok for _, ok in stated]),
        "ece_logprob": ece([c for c, _ in logprob], [ok for _, ok in logprob]),
        "n_stated": len(stated),
        "n_logprob": len(logprob),
        "seconds": round(seconds, 1),
        "first_raw": next((v.raw_response for v in verdicts if v.raw_response), None),
    }


async def run_mode(mode: Mode, base_url: str, timeout: float, max_tokens: int) -> dict[str, Any]:
    critic = Critic(
        name=f"smol-{mode.name}",
        model="local",
        vendor="llamacpp",
        base_url=base_url,
        prompt="pass-fail@2",
        temperature=0.0,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=1,
        **mode.options,
    )
    started = time.perf_counter()
    verdicts = [await critic.judge(item) for item, _ in ITEMS]  # one at a time: one CPU
    return summarise(mode, verdicts, time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--modes", default=",".join(m.name for m in MODES))
    parser.add_argument("--json", action="store_true", help="print one JSON line per mode")
    args = parser.parse_args()
    wanted = set(args.modes.split(","))
    for mode in MODES:
        if mode.name not in wanted:
            continue
        row = await run_mode(mode, args.base_url, args.timeout, args.max_tokens)
        if args.json:
            print(json.dumps(row), flush=True)
            continue

        def fmt(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        print(
            f"{row['mode']:>6}: PARSE_FAIL {row['parse_fail']}/20, ERROR {row['errors']}, "
            f"labelled {row['labelled']}/20, labels {row['labels']}, "
            f"accuracy {row['accuracy']:.2f}, confidence {row['sources']}, "
            f"structured {row['structured']}, ECE stated {fmt(row['ece_stated'])} "
            f"(n={row['n_stated']}), ECE logprob {fmt(row['ece_logprob'])} "
            f"(n={row['n_logprob']}), {row['seconds']} s",
            flush=True,
        )
        print(f"        first answer: {row['first_raw']!r}"[:300], flush=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
