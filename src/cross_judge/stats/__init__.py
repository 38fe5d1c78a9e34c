"""Statistics over stored verdicts: pure functions, no vendor calls.

:mod:`~cross_judge.stats._agreement` (Krippendorff's alpha, kappas), :mod:`~cross_judge.stats._gold`
(metrics against gold labels), :mod:`~cross_judge.stats._dawid_skene` and
:mod:`~cross_judge.stats._dawid_skene_correlated` (on the EM core in :mod:`~cross_judge.stats._em`),
:mod:`~cross_judge.stats._confidence_calibration`, :mod:`~cross_judge.stats._bias` and
:mod:`~cross_judge.stats._reliability` (learned weights and trust), and
:mod:`~cross_judge.stats._paired` (paired tests and intervals: a baseline run against a
candidate on the same items), :mod:`~cross_judge.stats._gold_paired` (Wilson intervals for
accuracies and paired tests between rows against the same gold). The users' paths for them
are :mod:`cross_judge.agreement`, :mod:`cross_judge.bias` and :mod:`cross_judge.reliability`
(and the result models' methods).

This package's names are its face for the layers above (results, report, batch, ranking,
the command line): each is imported lazily from the private module that defines it, so
importing the package imports no statistic. Two names differ from their module's:
:func:`dawid_skene_matrix` is the fit on an items x critics label matrix (``_dawid_skene``),
where :func:`dawid_skene` fits a batch's results; :func:`effective_votes_matrix` likewise
(``_gold``) beside :func:`effective_votes` (``_reliability``).
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports

__all__ = [
    "CONSENSUS",
    "LENGTH_BINS",
    "MIN_HELD_OUT",
    "AlignmentFigures",
    "CalibrationMethod",
    "CompareMetric",
    "ConfidenceCalibration",
    "CriteriaVotes",
    "CriterionAgreement",
    "CriterionDawidSkene",
    "DawidSkeneResult",
    "Difference",
    "EffectiveVotes",
    "ExampleChoice",
    "FailOn",
    "Figure",
    "Flip",
    "GoldComparison",
    "GoldFile",
    "GoldReport",
    "GoldSplit",
    "LengthBias",
    "LengthBin",
    "Level",
    "PairVote",
    "PositionBias",
    "PositionStats",
    "Prefer",
    "Results",
    "RunDiff",
    "SelfStats",
    "VoteFit",
    "WeightsFit",
    "accuracy_cell",
    "agreement_table",
    "alpha_interval",
    "alpha_of_votes",
    "apply_calibration",
    "bootstrap_intervals",
    "calibrate_confidence",
    "choose_examples",
    "cohen_kappa",
    "collection_paused",
    "compares_labels",
    "criteria_agreement",
    "criteria_gold_metrics",
    "dawid_skene",
    "dawid_skene_matrix",
    "effective_votes",
    "effective_votes_matrix",
    "elo",
    "fisher_group_limit",
    "fisher_intervals",
    "fit_bradley_terry",
    "fit_votes",
    "fit_votes_bradley_terry",
    "fleiss_kappa",
    "gold_labels",
    "gold_metrics",
    "gold_report",
    "gold_table",
    "holm",
    "id_values",
    "jury_shown_note",
    "learn_weights",
    "length_bias",
    "linear_quantile",
    "load_criteria_gold",
    "load_gold",
    "manifest_path",
    "manifest_runs",
    "matrix_from_labels",
    "mcnemar_exact",
    "mcnemar_mde",
    "mean_difference_mde",
    "measure_alignment",
    "mle_exists",
    "numpy_available",
    "paired_bootstrap_interval",
    "paired_proportion_interval",
    "pairwise_agreement",
    "position_bias",
    "read_gold",
    "read_gold_file",
    "read_gold_labels",
    "recorded_simulated_critics",
    "recorded_simulated_without_gold",
    "reliability_alpha",
    "revote_dawid_skene",
    "self_consistency",
    "split_gold",
    "vote_bootstrap_intervals",
    "vote_fisher_intervals",
    "votes_worth",
    "wilcoxon_signed_rank",
    "wilson_interval",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._agreement import (
        Level,
        alpha_of_votes,
        cohen_kappa,
        compares_labels,
        fleiss_kappa,
        matrix_from_labels,
        pairwise_agreement,
        reliability_alpha,
    )
    from ._alignment import (
        MIN_HELD_OUT,
        AlignmentFigures,
        ExampleChoice,
        Figure,
        GoldSplit,
        Prefer,
        choose_examples,
        measure_alignment,
        split_gold,
    )
    from ._bias import (
        LENGTH_BINS,
        LengthBias,
        LengthBin,
        PositionBias,
        PositionStats,
        Results,
        SelfStats,
        length_bias,
        position_bias,
        self_consistency,
    )
    from ._bt_votes import (
        PairVote,
        VoteFit,
        fit_votes_bradley_terry,
        vote_bootstrap_intervals,
        vote_fisher_intervals,
    )
    from ._collector import collection_paused
    from ._confidence_calibration import CalibrationMethod, ConfidenceCalibration
    from ._criteria import (
        CriteriaVotes,
        CriterionAgreement,
        CriterionDawidSkene,
        agreement_table,
        criteria_agreement,
        criteria_gold_metrics,
        gold_table,
        load_criteria_gold,
        read_gold_file,
    )
    from ._dawid_skene import dawid_skene as dawid_skene_matrix, fit_votes, numpy_available
    from ._gold import (
        CONSENSUS,
        EffectiveVotes,
        GoldReport,
        effective_votes as effective_votes_matrix,
        gold_metrics,
        id_values,
        load_gold,
        votes_worth,
    )
    from ._gold_file import GoldFile, gold_labels, jury_shown_note, read_gold, read_gold_labels
    from ._gold_paired import GoldComparison, accuracy_cell, wilson_interval
    from ._manifest_file import (
        manifest_path,
        manifest_runs,
        recorded_simulated_critics,
        recorded_simulated_without_gold,
    )
    from ._paired import (
        holm,
        mcnemar_exact,
        mcnemar_mde,
        mean_difference_mde,
        paired_bootstrap_interval,
        paired_proportion_interval,
        wilcoxon_signed_rank,
    )
    from ._quantile import linear_quantile
    from ._reliability import (
        DawidSkeneResult,
        WeightsFit,
        alpha_interval,
        apply_calibration,
        calibrate_confidence,
        dawid_skene,
        effective_votes,
        gold_report,
        learn_weights,
        revote_dawid_skene,
    )
    from ._run_diff import CompareMetric, Difference, FailOn, Flip, RunDiff
    from .bradley_terry import (
        bootstrap_intervals,
        elo,
        fisher_group_limit,
        fisher_intervals,
        fit_bradley_terry,
        mle_exists,
    )

_exports = LazyExports(
    __name__,
    {
        "CONSENSUS": "._gold",
        "collection_paused": "._collector",
        "linear_quantile": "._quantile",
        **dict.fromkeys(["CompareMetric", "Difference", "FailOn", "Flip", "RunDiff"], "._run_diff"),
        **dict.fromkeys(
            [
                "manifest_path",
                "manifest_runs",
                "recorded_simulated_critics",
                "recorded_simulated_without_gold",
            ],
            "._manifest_file",
        ),
        **dict.fromkeys(
            [
                "holm",
                "mcnemar_exact",
                "mcnemar_mde",
                "mean_difference_mde",
                "paired_bootstrap_interval",
                "paired_proportion_interval",
                "wilcoxon_signed_rank",
            ],
            "._paired",
        ),
        "CalibrationMethod": "._confidence_calibration",
        "ConfidenceCalibration": "._confidence_calibration",
        "CriteriaVotes": "._criteria",
        "CriterionAgreement": "._criteria",
        "CriterionDawidSkene": "._criteria",
        "DawidSkeneResult": "._reliability",
        "EffectiveVotes": "._gold",
        "GoldComparison": "._gold_paired",
        "GoldFile": "._gold_file",
        "GoldReport": "._gold",
        "LENGTH_BINS": "._bias",
        "LengthBias": "._bias",
        "LengthBin": "._bias",
        "Level": "._agreement",
        "PositionBias": "._bias",
        "PositionStats": "._bias",
        "Results": "._bias",
        "SelfStats": "._bias",
        "WeightsFit": "._reliability",
        "accuracy_cell": "._gold_paired",
        "agreement_table": "._criteria",
        "alpha_interval": "._reliability",
        "alpha_of_votes": "._agreement",
        "apply_calibration": "._reliability",
        "bootstrap_intervals": ".bradley_terry",
        "calibrate_confidence": "._reliability",
        "cohen_kappa": "._agreement",
        "compares_labels": "._agreement",
        "criteria_agreement": "._criteria",
        "criteria_gold_metrics": "._criteria",
        "dawid_skene": "._reliability",
        "dawid_skene_matrix": "._dawid_skene:dawid_skene",
        "effective_votes": "._reliability",
        "effective_votes_matrix": "._gold:effective_votes",
        "elo": ".bradley_terry",
        "fit_votes": "._dawid_skene",
        "fisher_group_limit": ".bradley_terry",
        "fisher_intervals": ".bradley_terry",
        "fit_bradley_terry": ".bradley_terry",
        **dict.fromkeys(
            [
                "PairVote",
                "VoteFit",
                "fit_votes_bradley_terry",
                "vote_bootstrap_intervals",
                "vote_fisher_intervals",
            ],
            "._bt_votes",
        ),
        "fleiss_kappa": "._agreement",
        "gold_metrics": "._gold",
        "gold_report": "._reliability",
        "gold_labels": "._gold_file",
        "gold_table": "._criteria",
        "id_values": "._gold",
        "jury_shown_note": "._gold_file",
        "learn_weights": "._reliability",
        "length_bias": "._bias",
        "load_criteria_gold": "._criteria",
        "load_gold": "._gold",
        "matrix_from_labels": "._agreement",
        "mle_exists": ".bradley_terry",
        "numpy_available": "._dawid_skene",
        "pairwise_agreement": "._agreement",
        "position_bias": "._bias",
        "read_gold": "._gold_file",
        "MIN_HELD_OUT": "._alignment",
        "AlignmentFigures": "._alignment",
        "ExampleChoice": "._alignment",
        "Figure": "._alignment",
        "GoldSplit": "._alignment",
        "choose_examples": "._alignment",
        "measure_alignment": "._alignment",
        "split_gold": "._alignment",
        "Prefer": "._alignment",
        "read_gold_file": "._criteria",
        "read_gold_labels": "._gold_file",
        "reliability_alpha": "._agreement",
        "revote_dawid_skene": "._reliability",
        "self_consistency": "._bias",
        "votes_worth": "._gold",
        "wilson_interval": "._gold_paired",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
