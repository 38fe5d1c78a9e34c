"""cross-judge 0.1's per-item statistics over one item's verdicts (no voting).

Kept as 0.1 had them; statistics over many items live in :mod:`cross_judge.agreement`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..verdict import Verdict, as_verdict

# -- 0.1 helpers and statistics (kept: 0.1 code imports _valid and label_counts) ---------


def valid_verdicts(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in map(as_verdict, verdicts) if v.error is None]


def label_counts(verdicts: Sequence[Verdict]) -> Counter[str]:
    """Votes per label among valid verdicts, in first-seen order."""
    return Counter(v.kind for v in map(as_verdict, verdicts) if v.error is None)


def agreement_pct(verdicts: Sequence[Verdict], consensus: str) -> float:
    """Fraction of valid verdicts whose label equals ``consensus`` (0.0 if none is valid);
    errors are not in the denominator: 1 valid vote of 3 critics that matches gives 1.0."""
    valid = valid_verdicts(verdicts)
    if not valid:
        return 0.0
    return sum(1 for v in valid if v.kind == consensus) / len(valid)


def krippendorff_alpha(verdicts: Sequence[Verdict]) -> float | None:
    """cross-judge 0.1's per-item "Krippendorff's alpha", kept for compatibility: on one
    item observed and expected disagreement come from the same counts, so it is ``None``
    (fewer than 2 valid verdicts), ``1.0`` (all agree) or ``0.0`` give or take ~4e-16 (any
    disagreement). An "all agree?" flag; for reliability use alpha over many items."""
    counts = label_counts(verdicts)
    n = sum(counts.values())
    if n < 2:
        return None
    # 0.1's arithmetic, kept operation for operation so results match it to the last bit
    # (rounding leaves +-4e-16 instead of an exact 0.0 on disagreement).
    total_pairs = n * (n - 1) // 2
    same_pairs = sum(c * (c - 1) // 2 for c in counts.values())
    d_observed = (total_pairs - same_pairs) / total_pairs
    d_expected = 1.0 - sum((c / n) * ((c - 1) / (n - 1)) for c in counts.values())
    if d_expected == 0.0:
        return 1.0 if d_observed == 0.0 else 0.0
    return max(-1.0, min(1.0, 1.0 - d_observed / d_expected))


# -- policies and ballots -----------------------------------------------------------------
