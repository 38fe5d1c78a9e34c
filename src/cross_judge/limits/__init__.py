"""Admission and pacing of calls per vendor (:mod:`~cross_judge.limits.gate`), and the limit
shared across processes and machines (public path :mod:`cross_judge.shared_limit`). This
package exports nothing itself.
"""

__all__: list[str] = []
