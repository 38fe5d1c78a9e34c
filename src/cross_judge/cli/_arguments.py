"""The value types of the ``cross-judge`` options: each turns one command-line word into a
value or raises :class:`argparse.ArgumentTypeError` with the message argparse prints.

It only converts words; the checks that need several options at once are the commands'.
"""

from __future__ import annotations

import argparse
import math

__all__ = [
    "dollars",
    "fraction",
    "non_negative",
    "positive_int",
    "seconds",
    "shard_spec",
    "vendor_names",
]


def positive_int(text: str) -> int:
    """``"4"`` -> ``4``: a whole number >= 1 (``--concurrency``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def dollars(text: str) -> float:
    """``"0.5"`` -> ``0.5``: US dollars, finite and >= 0 (``--budget-usd``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of US dollars, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of US dollars >= 0, got {text!r}")
    return value


def non_negative(text: str) -> float:
    """``"0.02"`` -> ``0.02``: a finite number >= 0 (``--min-effect``)."""
    return _at_least_zero(text, "a number")


def vendor_names(text: str) -> frozenset[str]:
    """``"OpenAI, custom"`` -> ``{"openai", "custom"}``: comma-separated vendor names,
    lower-cased, at least one (``--batch-vendors``)."""
    names = frozenset(n.strip().lower() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(
            f"expected vendor names such as openai,custom; got {text!r}"
        )
    return names


def seconds(text: str) -> float:
    """``"30"`` -> ``30.0``: seconds, finite and >= 0 (``--deadline``, ``--poll``)."""
    return _at_least_zero(text, "a number of seconds")


def _at_least_zero(text: str, noun: str) -> float:
    """``text`` as a finite number >= 0, else the error ``expected <noun> >= 0``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected {noun} >= 0, got {text!r}")
    return value


def shard_spec(text: str) -> tuple[int, int]:
    """``"i/N"`` -> ``(i, N)``, whole numbers with 1 <= i <= N."""
    fix = (
        "expected i/N, this machine's shard i of N (whole numbers, 1 <= i <= N), "
        f"e.g. --shard 2/8; got {text!r}"
    )
    index, slash, count = text.strip().partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(fix) from None
    if not slash or n < 1 or not 1 <= i <= n:
        raise argparse.ArgumentTypeError(fix)
    return i, n


def fraction(text: str) -> float:
    """``"0.9"`` -> ``0.9``: strictly between 0 and 1 (``--target``, ``--delta``, ``--ci``);
    a percent such as ``90`` is refused with a hint."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number between 0 and 1, got {text!r}"
        ) from None
    if not 0.0 < value < 1.0:
        hint = " (a fraction, not a percent)" if 1.0 < value <= 100.0 else ""
        raise argparse.ArgumentTypeError(
            f"expected a number strictly between 0 and 1{hint}, got {text!r}"
        )
    return value
