"""Statistics over stored verdicts: pure functions, no vendor calls (agreement, gold
metrics, Dawid-Skene, calibration, bias, learned weights)."""
