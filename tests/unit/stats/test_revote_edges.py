"""Edges of re-voting a batch and of learned weights that used to give a wrong number
silently: classes taken from the consensus, a Dawid-Skene item with no vote that looked
decided, Dawid-Skene on a cascade's tiers, and the per-item ``revote`` asked for a
batch-level strategy."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from cross_judge import (
    BatchResult,
    ConfigError,
    Ensemble,
    EnsembleVerdict,
    UnknownStrategyError,
    Verdict,
    revote,
)
from cross_judge.errors import ErrorKind
from cross_judge.stats._reliability import dawid_skene, learn_weights
from cross_judge.voting import agreement_pct

PANEL = Ensemble(critics=[])
LABELS = ("KEEP", "REJECT", "SPLIT")


def vote(critic: str, kind: str | None, confidence: float = 0.8) -> Verdict:
    if kind is None:
        return Verdict(kind="ERROR", critic_id=critic, error="timeout", attempts=1)
    return Verdict(kind=kind, critic_id=critic, confidence=confidence)


def item(query_id: str, **answers: str | None) -> EnsembleVerdict:
    return PANEL.aggregate_verdicts(
        [vote(name, kind) for name, kind in answers.items()], query_id=query_id
    )


def batch_of(results: list[EnsembleVerdict]) -> BatchResult:
    return BatchResult.from_results(results)


def noisy_batch(n: int = 60, seed: int = 3) -> BatchResult:
    """``n`` items, three critics of falling accuracy over three labels, some calls failed,
    one item with no valid vote."""
    rng = random.Random(seed)
    results = []
    for i in range(n):
        truth = rng.choice(LABELS)
        answers: dict[str, str | None] = {}
        for name, accuracy in (("x", 0.9), ("y", 0.7), ("z", 0.5)):
            if rng.random() < 0.1:
                answers[name] = None
            elif rng.random() < accuracy:
                answers[name] = truth
            else:
                answers[name] = rng.choice([label for label in LABELS if label != truth])
        results.append(item(f"q{i}", **answers))
    results.append(item("silent", x=None, y=None, z=None))
    return batch_of(results)


# -- learn_weights: classes come from the answers and the gold, never the consensus ----------


def coin_flip_batch() -> tuple[BatchResult, dict[str, str]]:
    """A reliable critic ``x``, a coin-flip critic ``y`` and a third ``z``, on two labels:
    half the items disagree, which ``unanimous`` turns into the fallback ``UNCLEAR``."""
    rng = random.Random(7)
    results, gold = [], {}
    for i in range(200):
        truth = rng.choice(("PASS", "FAIL"))
        other = "FAIL" if truth == "PASS" else "PASS"
        flip = rng.choice((truth, other))
        results.append(item(f"q{i}", x=truth, y=flip, z=truth if i % 3 else other))
        gold[f"q{i}"] = truth
    return batch_of(results), gold


def test_learned_weights_are_the_same_after_revoting_unanimous() -> None:
    batch, gold = coin_flip_batch()
    unanimous = batch.revote("unanimous")
    assert "UNCLEAR" in unanimous.consensus_counts() or unanimous.no_consensus_items
    assert learn_weights(unanimous, gold) == learn_weights(batch, gold)


def test_the_fallback_label_no_critic_answered_is_not_a_class() -> None:
    batch, gold = coin_flip_batch()
    fit = learn_weights(batch.revote("unanimous"), gold)
    accuracy = fit.accuracy["y"]
    assert fit.classes == 2 and accuracy is not None
    assert fit.weights["y"] == pytest.approx(math.log(accuracy / (1 - accuracy)))


def test_a_label_only_the_gold_holds_is_a_class() -> None:
    # Nobody answered UNCLEAR, but the gold says one item is: three classes.
    batch = batch_of(
        [item("a", x="PASS", y="FAIL"), item("b", x="PASS", y="PASS"), item("c", x="FAIL")]
    )
    unanimous = batch.revote("unanimous")  # "a" falls back to UNCLEAR: a gold label may be it
    assert learn_weights(unanimous, {"a": "UNCLEAR", "b": "PASS"}).classes == 3


# -- revote("dawid_skene"): an item with no valid vote is a fallback ------------------------


def test_dawid_skene_gives_an_item_with_no_valid_vote_the_fallback() -> None:
    revoted = noisy_batch().revote("dawid_skene")
    silent = revoted.verdicts[-1]
    assert silent.consensus == "UNCLEAR"
    assert silent.fallback is True
    assert silent.score is None
    assert revoted.no_consensus_items == silent_ids(revoted)


def silent_ids(batch: BatchResult) -> list[str]:
    """The items none of whose critics gave a valid verdict."""
    return [r.query_id for r in batch.verdicts if all(v.error for v in r.verdicts)]


def test_dawid_skene_fallback_matches_majority_on_an_item_with_no_valid_vote() -> None:
    batch = noisy_batch()
    fields = ("consensus", "fallback", "score", "agreement_pct", "disagreement", "dissenters")
    by_ds = batch.revote("dawid_skene").verdicts[-1]
    by_majority = batch.revote("majority").verdicts[-1]
    assert {f: getattr(by_ds, f) for f in fields} == {f: getattr(by_majority, f) for f in fields}


def test_dawid_skene_takes_the_fallback_label_like_the_other_strategies() -> None:
    revoted = noisy_batch().revote("dawid_skene", fallback="NO_VOTE")
    assert revoted.verdicts[-1].consensus == "NO_VOTE"
    assert revoted.verdicts[-1].fallback is True
    assert [r.query_id for r in revoted.verdicts if r.fallback] == silent_ids(revoted)


def test_dawid_skene_refuses_a_fallback_that_is_not_a_label() -> None:
    with pytest.raises(ConfigError, match="fallback"):
        noisy_batch().revote("dawid_skene", fallback=3)


# -- revote("dawid_skene") on a cascade's results ------------------------------------------


def cascade_results() -> BatchResult:
    """Two items escalated from a cheap tier (a, b) to a strong one (c)."""
    results = []
    for index, (first, second) in enumerate(
        [(("KEEP", "REJECT"), "REJECT"), (("SPLIT", "KEEP"), "KEEP")]
    ):
        cheap = item(f"i{index}", a=first[0], b=first[1])
        strong = item(f"i{index}", c=second)
        results.append(
            strong.model_copy(
                update={
                    "verdicts": [*cheap.verdicts, *strong.verdicts],
                    "tiers": [cheap, strong],
                    "tier": 1,
                }
            )
        )
    return batch_of(results)


def test_dawid_skene_refuses_a_cascades_results_like_majority() -> None:
    batch = cascade_results()
    with pytest.raises(ConfigError, match="cascade") as majority:
        batch.revote("majority")
    with pytest.raises(ConfigError, match="cascade") as learned:
        batch.revote("dawid_skene")
    assert "tier" in str(learned.value) and "tier" in str(majority.value)


# -- the per-item revote cannot learn from one item ------------------------------------------


def test_per_item_revote_with_dawid_skene_points_to_the_batch_revote() -> None:
    result = item("a", x="KEEP", y="REJECT")
    with pytest.raises(UnknownStrategyError, match=r"batch\.revote\('dawid_skene'\)") as info:
        revote(result, "dawid_skene")
    assert isinstance(info.value, ConfigError)
    assert "whole batch" in str(info.value)


def test_an_ensemble_voting_dawid_skene_is_refused_with_the_same_pointer() -> None:
    with pytest.raises(UnknownStrategyError, match=r"batch\.revote\('dawid_skene'\)"):
        Ensemble(critics=[], voting="Dawid_Skene ")


def test_an_unknown_strategy_still_lists_the_known_ones() -> None:
    with pytest.raises(UnknownStrategyError, match="majority"):
        revote(item("a", x="KEEP"), "no_such_strategy")


# -- revote("dawid_skene") gives what the straightforward computation gives ------------------


def straightforward_dawid_skene(batch: BatchResult) -> list[EnsembleVerdict]:
    """Each result re-decided by the fit, one ``model_copy`` at a time."""
    learned = dawid_skene(batch)
    out = []
    for result in batch.verdicts:
        valid = [v for v in result.verdicts if v.error is None]
        if not valid:
            update: dict[str, Any] = {
                "consensus": "UNCLEAR",
                "score": None,
                "fallback": True,
                "agreement_pct": 0.0,
                "disagreement": False,
                "dissenters": [],
            }
        else:
            label = learned.labels[result.query_id]
            update = {
                "consensus": label,
                "score": learned.posteriors[result.query_id][label],
                "fallback": False,
                "agreement_pct": agreement_pct(result.verdicts, label),
                "disagreement": len({v.kind for v in valid}) > 1,
                "dissenters": [v.critic_id for v in valid if v.kind != label],
            }
        out.append(result.model_copy(update={**update, "voting": "dawid_skene"}))
    return out


def varied_batch() -> BatchResult:
    """Items with failed, skipped and parse-failed calls, meta, an extra field, stored
    item text and pair lengths: everything a copy must carry over."""
    batch = noisy_batch(40)
    results = []
    for index, result in enumerate(batch.verdicts):
        verdicts = list(result.verdicts)
        if index % 7 == 0:
            verdicts[0] = Verdict(
                kind="SKIPPED",
                critic_id=verdicts[0].critic_id,
                error="stopped early",
                error_kind=ErrorKind.EARLY_STOP,
            )
        if index % 11 == 0:
            verdicts[1] = Verdict(
                kind="PARSE_FAIL",
                critic_id=verdicts[1].critic_id,
                error="not JSON",
                error_kind=ErrorKind.PARSE,
            )
        data = result.model_dump()
        data.update(
            verdicts=verdicts,
            meta={"n": index},
            pair_lengths=[index, index + 1] if index % 2 else None,
            item={"query": f"text {index}"} if index % 3 else None,
            stored_by_a_newer_version=index,
        )
        results.append(EnsembleVerdict.model_validate(data))
    return batch_of(results)


def test_revote_dawid_skene_equals_the_straightforward_copy() -> None:
    batch = varied_batch()
    revoted = batch.revote("dawid_skene")
    expected = straightforward_dawid_skene(batch)
    assert [r.model_dump() for r in revoted.verdicts] == [r.model_dump() for r in expected]
    assert [r.model_fields_set for r in revoted.verdicts] == [r.model_fields_set for r in expected]
    assert [r.model_extra for r in revoted.verdicts] == [r.model_extra for r in expected]
    assert [r.model_dump_json() for r in revoted.verdicts] == [
        r.model_dump_json() for r in expected
    ]


def test_revote_dawid_skene_leaves_the_batch_it_read_unchanged() -> None:
    batch = varied_batch()
    before = [r.model_dump() for r in batch.verdicts]
    revoted = batch.revote("dawid_skene")
    assert [r.model_dump() for r in batch.verdicts] == before
    assert all(a is not b for a, b in zip(revoted.verdicts, batch.verdicts, strict=True))
    assert batch.voting == "majority" and revoted.voting == "dawid_skene"


def test_a_revoted_results_extra_fields_are_its_own() -> None:
    batch = varied_batch()
    revoted = batch.revote("dawid_skene")
    extra = revoted.verdicts[1].model_extra
    assert extra == {"stored_by_a_newer_version": 1}
    extra["stored_by_a_newer_version"] = "changed"
    revoted.verdicts[1].model_fields_set.add("marker")
    assert batch.verdicts[1].model_extra == {"stored_by_a_newer_version": 1}
    assert "marker" not in batch.verdicts[1].model_fields_set


def test_revote_dawid_skene_keeps_the_batchs_own_fields() -> None:
    batch = varied_batch().model_copy(
        update={"elapsed_s": 12.5, "simulated_critics": ["x"], "simulated_without_gold": ["x"]}
    )
    revoted = batch.revote("dawid_skene")
    assert revoted.critics == batch.critics
    assert (revoted.elapsed_s, revoted.simulated_critics, revoted.simulated_without_gold) == (
        12.5,
        ["x"],
        ["x"],
    )


@pytest.mark.filterwarnings("ignore:Dawid-Skene estimates .* below chance")
def test_revote_dawid_skene_voters_all_against_the_label_on_one_answer_do_not_disagree() -> None:
    # z and w always answer the other label, so the fit reads their REJECT as KEEP.
    results = []
    for i in range(40):
        truth, other = ("KEEP", "REJECT") if i % 2 else ("REJECT", "KEEP")
        results.append(item(f"q{i}", x=truth, y=truth, v=truth, z=other, w=other))
    results.append(item("lone", x=None, z="REJECT"))
    results.append(item("pair", x=None, z="REJECT", w="REJECT"))
    batch = batch_of(results)
    revoted = batch.revote("dawid_skene")
    expected = straightforward_dawid_skene(batch)
    assert [r.model_dump() for r in revoted.verdicts] == [r.model_dump() for r in expected]
    lone, pair = revoted.verdicts[-2:]
    assert (lone.consensus, lone.dissenters, lone.disagreement) == ("KEEP", ["z"], False)
    assert (pair.consensus, pair.dissenters, pair.disagreement) == ("KEEP", ["z", "w"], False)
    assert pair.agreement_pct == 0.0
