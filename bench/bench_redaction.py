"""Redaction time per MiB of text: error bodies and answers, with and without a key in them.

Every verdict's texts pass through :class:`cross_judge.transport._redaction.Redactor` on
the event loop, so its cost on a large body (a vendor may send up to 8 MiB) is a loop
stall. Texts of 1 MiB: English prose, an HTML error page full of percent-escapes, a base64
blob, prose in other scripts, then the same prose with the key echoed in each form the
redactor looks for (whole, base64 inside a blob, zero-width characters between its
characters) and a hostile text packed with 8-character pieces of the key. Each is redacted
as an answer (``hide(text)``) and as an error message (``hide.error(text)``), with the
secrets a critic has (an API key, and a base URL's password, ``user:password`` and its
Basic header); the median of ``--repeats`` runs is reported.

Targets: text without a key at most 60 ms per MiB; looking for the key's base64 readings
(:func:`~cross_judge.transport._redaction.base64_forms`, 6 more strings per secret) costs
at most 1.5x the search for the plain secrets alone (``Redactor(..., encodings=False)``,
measured in the same run).

    python bench/bench_redaction.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge.transport._redaction import Redactor, secrets_of

MIB = 1 << 20
TARGET_MS_PER_MIB = 60.0
TARGET_ENCODINGS_RATIO = 1.5


def texts(key: str) -> dict[str, str]:
    """The 1 MiB texts, by name."""
    rng = random.Random(25)
    words = [
        *["the", "model", "could", "not", "complete", "the", "request", "because"],
        *["upstream", "returned", "an", "error", "please", "retry", "later", "or"],
        *["contact", "support", "with", "the", "request", "id", "shown", "below"],
    ]
    prose = " ".join(rng.choice(words) for _ in range(MIB // 4))[:MIB]
    link = '<a href="https://status.example/incident?id=%2F42%20a&amp;q=caf%C3%A9">status</a> '
    html = ("<p>" + " ".join(rng.choice(words) for _ in range(12)) + "</p>" + link) * (MIB // 150)
    blob = base64.b64encode(rng.randbytes(MIB * 3 // 4)).decode()
    other = ("Le modèle a échoué; 上游服务返回错误，请稍后重试。 Ошибка сервера. " * MIB)[:MIB]
    middle = len(prose) // 2
    token = base64.b64encode(b'{"key":"' + key.encode() + b'"}').decode()
    pieces = " ".join(key[i : i + 8] for i in range(0, len(key) - 8, 3))
    return {
        "prose": prose,
        "html with escapes": html[:MIB],
        "base64 blob": blob[:MIB],
        "other scripts": other,
        "prose + key": prose[:middle] + key + prose[middle:],
        "prose + key in base64": prose[:middle] + token + prose[middle:],
        "prose + key with zero-width": prose[:middle] + "\u200b".join(key) + prose[middle:],
        "hostile: key pieces": ((pieces + " ") * (MIB // len(pieces)))[:MIB],
    }


def median_ms(fn: Callable[[str], str], text: str, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn(text)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples) * MIB / len(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    rng = random.Random(14)
    key = "sk-proj-" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(48))
    secrets = secrets_of("https://user:hunter2-correct-horse@proxy.example/v1", key)
    hide = Redactor(secrets)
    plain = Redactor(secrets, encodings=False)
    report = Report("redaction", "Redaction time per MiB (median)", repeats=args.repeats)
    worst_clean = 0.0
    ratios = []
    for name, text in texts(key).items():
        answer = median_ms(hide, text, args.repeats)
        error = median_ms(hide.error, text, args.repeats)
        baseline = median_ms(plain, text, args.repeats)
        report.row(
            text=name,
            answer_ms=answer,
            error_ms=error,
            plain_only_ms=baseline,
            hidden=hide(text) != text,
        )
        if "key" not in name:
            worst_clean = max(worst_clean, answer, error)
            ratios.append(answer / baseline)
    report.check(
        "text without a key, slowest (answer or error)",
        worst_clean,
        at_most=TARGET_MS_PER_MIB,
        unit=" ms/MiB",
    )
    report.check(
        "with base64 readings / plain secrets only (worst, texts without a key)",
        max(ratios),
        at_most=TARGET_ENCODINGS_RATIO,
        unit="x",
    )
    return report.finish(
        [
            ("text", "text"),
            ("answer_ms", "answer ms/MiB"),
            ("error_ms", "error ms/MiB"),
            ("plain_only_ms", "plain secrets only ms/MiB"),
            ("hidden", "key hidden"),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
