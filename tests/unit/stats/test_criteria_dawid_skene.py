"""Dawid-Skene per criterion: one model per criterion, fitted on the critics' answers on it;
``batch.revote("dawid_skene")`` on a rubric batch re-decides each criterion by its fit."""

from __future__ import annotations

import random
import warnings

import pytest

from cross_judge.batch import BatchResult
from cross_judge.errors import ConfigError, StatisticsWarning
from cross_judge.stats._criteria import CriteriaVotes, criteria_dawid_skene
from cross_judge.stats._dawid_skene import dawid_skene

from .criteria_batches import FIVE_POINT, batch

N = 60


def truth(i: int, cid: str) -> str:
    return "PASS" if (i + (cid == "cites")) % 3 else "FAIL"


def experts_and_crowd(seed: int = 0) -> tuple[BatchResult, list[dict[str, str]]]:
    """Two experts always right on "correct" and random on "cites"; three crowd critics
    right 60% of the time on "correct" and always right on "cites"."""
    rng = random.Random(seed)
    flip = {"PASS": "FAIL", "FAIL": "PASS"}
    items = []
    truths = []
    for i in range(N):
        t = {cid: truth(i, cid) for cid in ("correct", "cites")}
        truths.append(t)
        answers = {}
        for name in ("e1", "e2"):
            answers[name] = {"correct": t["correct"], "cites": rng.choice(["PASS", "FAIL"])}
        for name in ("c1", "c2", "c3"):
            right = rng.random() < 0.6
            answers[name] = {
                "correct": t["correct"] if right else flip[t["correct"]],
                "cites": t["cites"],
            }
        items.append(answers)
    return batch(items), truths


def quiet_fit(data: BatchResult) -> dict[str, object]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticsWarning)
        return dict(criteria_dawid_skene(data))


def test_each_criterion_learns_its_own_critic_accuracies() -> None:
    data, _ = experts_and_crowd()
    fits = data.criteria_dawid_skene()
    correct, cites = fits["correct"], fits["cites"]
    assert min(correct.accuracy["e1"] or 0, correct.accuracy["e2"] or 0) > 0.9
    assert max(correct.accuracy[c] or 1 for c in ("c1", "c2", "c3")) < 0.8
    assert min(cites.accuracy[c] or 0 for c in ("c1", "c2", "c3")) > 0.9
    assert max(cites.accuracy["e1"] or 1, cites.accuracy["e2"] or 1) < 0.8


def test_posterior_labels_follow_the_reliable_critics_of_each_criterion() -> None:
    data, truths = experts_and_crowd()
    fits = data.criteria_dawid_skene()
    majority_wrong = sum(
        1
        for r, t in zip(data.verdicts, truths, strict=True)
        if r.criteria and r.criteria["correct"].consensus != t["correct"]
    )
    assert majority_wrong > 0  # the crowd outvotes the experts on some items
    for cid in ("correct", "cites"):
        assert fits[cid].labels == {str(i): t[cid] for i, t in enumerate(truths)}


def test_a_criterions_fit_is_dawid_skene_on_that_criterions_matrix() -> None:
    data, _ = experts_and_crowd(seed=4)
    votes = CriteriaVotes.of(data)
    for cid, ours in data.criteria_dawid_skene().items():
        items_by_critics = [list(col) for col in zip(*votes.matrix(cid), strict=True)]
        direct = dawid_skene(items_by_critics, classes=("FAIL", "PASS"))
        assert ours.fit.labels == direct.labels
        flat = [p for row in ours.fit.posteriors for p in row]
        assert flat == pytest.approx([p for row in direct.posteriors for p in row], abs=1e-12)


def test_confusion_per_critic_is_by_true_then_answered_label() -> None:
    data, _ = experts_and_crowd()
    confusion = data.criteria_dawid_skene()["correct"].confusion["e1"]
    assert set(confusion) == {"FAIL", "PASS"}
    assert confusion["PASS"]["PASS"] > 0.9 and sum(confusion["PASS"].values()) == pytest.approx(1)


def test_the_scale_fixes_the_classes_of_an_ordinal_criterion() -> None:
    items = [{"a": {"clarity": "2", "depth": "4"}, "b": {"clarity": "2", "depth": "5"}}] * 3
    fits = quiet_fit(batch(items, FIVE_POINT))
    fit = fits["clarity"]
    assert fit.fit.classes == ("1", "2", "3", "4", "5")  # type: ignore[attr-defined]


def test_an_item_nobody_answered_has_no_posterior_label() -> None:
    items = [
        {"a": {"correct": "PASS", "cites": "PASS"}, "b": {"correct": "PASS", "cites": "PASS"}},
        {"a": {"correct": None, "cites": "FAIL"}, "b": {"correct": None, "cites": "FAIL"}},
    ]
    fits = quiet_fit(batch(items))
    assert fits["correct"].labels == {"0": "PASS"}  # type: ignore[attr-defined]
    assert set(fits["cites"].labels) == {"0", "1"}  # type: ignore[attr-defined]


# -- revote ---------------------------------------------------------------------------------------


def test_revote_dawid_skene_re_decides_each_criterion_of_a_rubric_batch() -> None:
    data, truths = experts_and_crowd()
    revoted = data.revote("dawid_skene")
    assert revoted.voting == "dawid_skene"
    for r, t in zip(revoted.verdicts, truths, strict=True):
        assert r.criteria is not None
        assert {cid: c.consensus for cid, c in r.criteria.items()} == t


def test_revote_recomputes_the_items_total_and_consensus_from_the_criteria() -> None:
    data, truths = experts_and_crowd()
    revoted = data.revote("dawid_skene")
    rubric = data.verdicts[0].rubric
    assert rubric is not None
    for r, t in zip(revoted.verdicts, truths, strict=True):
        expected = rubric.total({cid: rubric.score_of(label) for cid, label in t.items()})
        assert r.score == expected
        assert r.consensus == ("PASS" if expected is not None and expected >= 0.5 else "FAIL")


def test_revote_recounts_agreement_and_dissenters_per_criterion() -> None:
    data, _ = experts_and_crowd()
    revoted = data.revote("dawid_skene")
    for r in revoted.verdicts:
        assert r.criteria is not None
        c = r.criteria["correct"]
        labels = {v.critic_id: v.criteria["correct"].kind for v in r.verdicts if v.criteria}
        assert c.dissenters == [n for n, x in labels.items() if x != c.consensus]
        assert c.agreement_pct == pytest.approx(1 - len(c.dissenters) / len(labels))


def test_revote_gives_the_fallback_where_a_criterion_had_no_valid_answer() -> None:
    items = [
        {"a": {"correct": "PASS", "cites": "PASS"}, "b": {"correct": "PASS", "cites": "FAIL"}},
        {"a": {"correct": "PASS", "cites": None}, "b": {"correct": "FAIL", "cites": None}},
    ] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticsWarning)
        revoted = batch(items).revote("dawid_skene", fallback="UNSURE")
    second = revoted.verdicts[1]
    assert second.criteria is not None
    cites = second.criteria["cites"]
    assert (cites.consensus, cites.fallback, cites.score) == ("UNSURE", True, None)


def test_revote_leaves_the_batch_it_read_unchanged() -> None:
    data, _ = experts_and_crowd()
    before = data.model_dump()
    data.revote("dawid_skene")
    assert data.model_dump() == before


def test_revote_dawid_skene_still_refuses_weights_on_a_rubric_batch() -> None:
    data, _ = experts_and_crowd()
    with pytest.raises(ConfigError, match="weights"):
        data.revote("dawid_skene", weights={"e1": 2.0})
