"""Statistics over stored verdicts: pure functions, no vendor calls.

:mod:`~cross_judge.stats.agreement` (Krippendorff's alpha, kappas), :mod:`~cross_judge.stats.gold`
(metrics against gold labels), :mod:`~cross_judge.stats.dawid_skene` and
:mod:`~cross_judge.stats.dawid_skene_correlated` (on the EM core in :mod:`~cross_judge.stats.em`),
:mod:`~cross_judge.stats.confidence_calibration`, :mod:`~cross_judge.stats.bias` and
:mod:`~cross_judge.stats.reliability` (learned weights and trust). Their public paths are
:mod:`cross_judge.agreement`, :mod:`cross_judge.bias` and :mod:`cross_judge.reliability`; this
package exports nothing itself.
"""

__all__: list[str] = []
