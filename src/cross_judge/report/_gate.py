"""A comparison as an assertion: :func:`assert_no_regression`, for tests and scripts (the
pytest plugin's ``judge_compare`` fixture uses it too)."""

from __future__ import annotations

from ..stats import FailOn, RunDiff

__all__ = ["assert_no_regression"]


def assert_no_regression(diff: RunDiff, *, fail_on: FailOn = "regression") -> None:
    """Raise :class:`AssertionError` with the readable comparison (``diff.to_text()``: the
    headline, the tables, the flipped items) when ``diff.failed(fail_on)``; return
    nothing otherwise. ``fail_on="change"`` fails on a significant change either way."""
    if diff.failed(fail_on):
        raise AssertionError(
            f"the candidate run fails the gate (fail_on={fail_on!r}):\n{diff.to_text()}"
        )
