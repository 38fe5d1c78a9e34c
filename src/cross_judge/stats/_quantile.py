"""The quantile of sorted values that every bootstrap and percentile interval here reads."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["linear_quantile"]


def linear_quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (``0 <= q <= 1``) of the sorted, non-empty ``ordered``,
    interpolating linearly between order statistics (numpy's default
    ``method='linear'``)."""
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])
