"""Look-alike labels in a vote: a label spelt with Cyrillic or Greek letters that look like
Latin ones, or padded with invisible characters, never counts as a label of its own."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings, strategies as st

from cross_judge import Verdict
from cross_judge.ensemble import revote
from cross_judge.verdict import EnsembleVerdict
from cross_judge.voting import majority_vote, outcome_is_decided, reconcile_labels, unanimous

KEEP_CYRILLIC = "\u041a\u0415\u0415\u0420"  # КЕЕР: every letter Cyrillic
KEEP_MIXED = "\u041aEEP"  # КEEP: a Cyrillic К
KEEP_PADDED = "KE\u200bEP"
NO_RUSSIAN = "\u041d\u0415\u0422"  # НЕТ, drawn like Latin HET


def votes(*labels: str) -> list[Verdict]:
    return [
        Verdict(kind=label, confidence=0.9, critic_id=f"c{i}") for i, label in enumerate(labels)
    ]


def aggregate(labels: Sequence[str], voting: str = "majority", **kwargs: object) -> EnsembleVerdict:
    stored = EnsembleVerdict(query_id="q", verdicts=votes(*labels), consensus="", voting="")
    return revote(stored, voting, **kwargs)


def test_a_look_alike_majority_cannot_be_split_off_its_label() -> None:
    # Counted apart, REJECT (2) would beat KEEP (1) and КЕЕР (2) by critic order.
    labels = ("REJECT", KEEP_CYRILLIC, "REJECT", KEEP_CYRILLIC, "KEEP")
    assert majority_vote(votes(*labels)) == ("KEEP", True)


def test_a_look_alike_never_wins_under_its_own_spelling() -> None:
    result = aggregate([KEEP_CYRILLIC, KEEP_CYRILLIC, "KEEP"])
    assert result.consensus == "KEEP"
    assert (result.agreement_pct, result.dissenters, result.disagreement) == (1.0, [], False)


def test_each_relabelled_verdict_records_what_it_wrote() -> None:
    result = aggregate([KEEP_MIXED, "KEEP", KEEP_PADDED])
    assert [(v.kind, v.written_label) for v in result.verdicts] == [
        ("KEEP", KEEP_MIXED),
        ("KEEP", None),
        ("KEEP", KEEP_PADDED),
    ]


def test_the_printed_result_flags_the_look_alike() -> None:
    result = aggregate([KEEP_CYRILLIC, "KEEP", "KEEP"])
    assert f"look-alike label: c0 wrote {KEEP_CYRILLIC!r}, counted as KEEP" in str(result)
    assert "look-alike" in result._repr_html_()


def test_a_look_alike_of_a_label_the_vote_names_is_counted_as_that_label() -> None:
    result = aggregate([KEEP_CYRILLIC, KEEP_CYRILLIC], priority=["REJECT", "KEEP"])
    assert result.consensus == "KEEP"


def test_a_foreign_word_no_other_label_imitates_is_left_alone() -> None:
    result = aggregate([NO_RUSSIAN, NO_RUSSIAN, "DA"])
    assert result.consensus == NO_RUSSIAN
    assert all(v.written_label is None for v in result.verdicts)


def test_the_latin_look_alike_of_a_named_foreign_label_joins_it() -> None:
    result = aggregate([NO_RUSSIAN, "HET", "\u0414\u0410"], priority=[NO_RUSSIAN])
    assert (result.consensus, result.agreement_pct) == (NO_RUSSIAN, 2 / 3)


def test_unanimity_is_not_broken_by_a_look_alike() -> None:
    assert unanimous(votes("KEEP", KEEP_CYRILLIC)) == ("KEEP", False)


def test_early_stop_does_not_read_a_look_alike_as_a_dissent() -> None:
    assert not outcome_is_decided("unanimous", votes("KEEP", KEEP_CYRILLIC), 1, {})


def test_case_still_makes_a_different_label_in_a_vote() -> None:
    assert majority_vote(votes("keep", "KEEP", "REJECT", "REJECT")) == ("REJECT", True)


def test_reconciling_plain_labels_returns_the_same_verdicts() -> None:
    given = votes("KEEP", "REJECT")
    assert reconcile_labels(given, {}) == given


# -- invariants -------------------------------------------------------------------------------

LOOK_ALIKE = {"K": "\u041a\u039a", "E": "\u0415\u0395", "P": "\u0420\u03a1", "T": "\u0422"}
INVISIBLE = ["\u200b", "\u2060", "\ufeff", "\u00ad"]


@st.composite
def spelling_of_keep(draw: st.DrawFn) -> str:
    """KEEP, or KEEP with look-alike letters and invisible characters mixed in."""
    out = []
    for char in "KEEP":
        out.append(draw(st.sampled_from([char, *LOOK_ALIKE[char]])))
        if draw(st.integers(0, 4)) == 0:
            out.append(draw(st.sampled_from(INVISIBLE)))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(spelling_of_keep() | st.sampled_from(["REJECT", "SPLIT"]), min_size=1, max_size=7))
def test_spellings_of_one_label_never_count_as_different_labels(labels: list[str]) -> None:
    result = aggregate(labels)
    is_keep = [label not in ("REJECT", "SPLIT") for label in labels]
    kinds = [v.kind for v in result.verdicts]
    keep_kinds = {kind for kind, keep in zip(kinds, is_keep, strict=True) if keep}
    assert len(keep_kinds) <= 1  # every spelling of KEEP is counted as one label
    if "KEEP" in labels:
        assert keep_kinds == {"KEEP"}  # and a look-alike never displaces the Latin one
    assert [kind for kind, keep in zip(kinds, is_keep, strict=True) if not keep] == [
        label for label, keep in zip(labels, is_keep, strict=True) if not keep
    ]
    assert (result.consensus, result.disagreement) == tuple(majority_vote(votes(*kinds)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(spelling_of_keep() | st.text(max_size=6), max_size=6),
    st.lists(st.sampled_from(["KEEP", "REJECT", "\u041d\u0415\u0422"]), max_size=2),
)
def test_reconciling_reconciled_labels_changes_nothing(
    labels: list[str], priority: list[str]
) -> None:
    once = reconcile_labels(votes(*labels), {"priority": priority})
    assert reconcile_labels(once, {"priority": priority}) == once
