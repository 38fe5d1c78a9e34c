"""The decisions of an alignment that need no call: the held-out split, each critic's
examples, and the before/after figures with their paired intervals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import BatchResult, ConfigError
from cross_judge.stats import MIN_HELD_OUT, choose_examples, measure_alignment, split_gold

LABELS = ("PASS", "FAIL")


def gold_of(n: int) -> dict[str, str]:
    return {f"i{k}": LABELS[k % 2] for k in range(n)}


def batch_of(answers: dict[str, dict[str, str]]) -> BatchResult:
    """A batch from ``{item: {critic: label}}``, voted by majority."""
    rows = [
        (item, critic, label) for item, said in answers.items() for critic, label in said.items()
    ]
    return BatchResult.from_votes(rows, people=False)


def test_the_split_holds_out_the_share_asked_of_each_label() -> None:
    gold = gold_of(100)
    split = split_gold(gold, list(gold), holdout=0.3, seed=0)
    held = [gold[i] for i in split.held_out]
    assert (held.count("PASS"), held.count("FAIL")) == (15, 15)
    assert len(split.train) == 70


def test_the_split_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    gold = gold_of(60)
    first = split_gold(gold, list(gold), holdout=0.3, seed=1)
    assert split_gold(gold, list(gold), holdout=0.3, seed=1) == first
    assert split_gold(gold, list(gold), holdout=0.3, seed=2) != first


def test_the_split_keeps_batch_order_and_ignores_labels_of_other_items() -> None:
    gold = {**gold_of(40), "elsewhere": "PASS"}
    ids = [f"i{k}" for k in reversed(range(40))]
    split = split_gold(gold, ids, holdout=0.3, seed=0)
    assert "elsewhere" not in split.train + split.held_out
    assert list(split.train) == [i for i in ids if i in split.train]


@settings(max_examples=30, deadline=None)
@given(order=st.permutations([f"i{k}" for k in range(60)]), seed=st.integers(0, 10**6))
def test_the_split_depends_on_the_ids_not_on_the_order_they_come_in(
    order: list[str], seed: int
) -> None:
    # A results file is written in the order the calls finished: a rerun's order differs.
    gold = gold_of(60)
    shuffled = split_gold(gold, order, holdout=0.3, seed=seed)
    in_order = split_gold(gold, sorted(gold), holdout=0.3, seed=seed)
    assert set(shuffled.held_out) == set(in_order.held_out)


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(min_value=40, max_value=120),
    holdout=st.floats(min_value=0.25, max_value=0.75),
    seed=st.integers(min_value=0, max_value=10**6),
)
def test_the_split_is_a_partition_of_the_labelled_items(n: int, holdout: float, seed: int) -> None:
    gold = gold_of(n)
    split = split_gold(gold, list(gold), holdout=holdout, seed=seed)
    assert sorted(split.train + split.held_out) == sorted(gold)
    assert not set(split.train) & set(split.held_out)


def test_too_few_labels_for_a_held_out_split_say_how_many_to_label() -> None:
    gold = gold_of(20)
    with pytest.raises(ConfigError, match=r"holds out 6 .* label at least 34 items"):
        split_gold(gold, list(gold), holdout=0.3, seed=0)


@pytest.mark.parametrize("holdout", [0.0, 1.0, -0.2, True])
def test_a_holdout_outside_zero_and_one_is_refused(holdout: float) -> None:
    with pytest.raises(ConfigError, match="holdout must be a share strictly between 0 and 1"):
        split_gold(gold_of(100), list(gold_of(100)), holdout=holdout, seed=0)


def test_min_held_out_is_what_the_split_needs() -> None:
    gold = gold_of(2 * MIN_HELD_OUT)
    assert len(split_gold(gold, list(gold), holdout=0.5, seed=0).held_out) == MIN_HELD_OUT


def crowd() -> tuple[BatchResult, dict[str, str]]:
    """30 items; critic a wrong on i0-i5, b on i6-i11, c on i12-i14 and the jury on none."""
    gold = gold_of(30)
    answers: dict[str, dict[str, str]] = {}
    for k, (item, truth) in enumerate(gold.items()):
        wrong = "FAIL" if truth == "PASS" else "PASS"
        answers[item] = {
            "a": wrong if k < 6 else truth,
            "b": wrong if 6 <= k < 12 else truth,
            "c": wrong if 12 <= k < 15 else truth,
        }
    return batch_of(answers), gold


def test_each_critic_first_gets_the_items_it_got_wrong() -> None:
    batch, gold = crowd()
    chosen = choose_examples(batch, gold, list(gold), ["a", "b", "c"], k=3, seed=0)
    assert set(chosen["a"].ids) <= {f"i{k}" for k in range(6)}
    assert set(chosen["b"].ids) <= {f"i{k}" for k in range(6, 12)}
    assert set(chosen["c"].ids) == {"i12", "i13", "i14"}
    assert chosen["a"].reasons == ("critic wrong",) * 3


def test_the_examples_do_not_depend_on_the_order_of_the_training_items() -> None:
    batch, gold = crowd()
    train = list(gold)
    forward = choose_examples(batch, gold, train, ["a", "b", "c"], k=4, seed=5)
    backward = choose_examples(batch, gold, train[::-1], ["a", "b", "c"], k=4, seed=5)
    assert forward == backward


def test_examples_are_disjoint_across_critics_by_default() -> None:
    batch, gold = crowd()
    chosen = choose_examples(batch, gold, list(gold), ["a", "b", "c"], k=8, seed=3)
    ids = [i for choice in chosen.values() for i in choice.ids]
    assert len(ids) == len(set(ids)) == 24


def test_shared_examples_are_the_same_for_every_critic() -> None:
    batch, gold = crowd()
    chosen = choose_examples(batch, gold, list(gold), ["a", "b", "c"], k=4, shared=True)
    assert chosen["a"].ids == chosen["b"].ids == chosen["c"].ids
    assert len(chosen["a"].ids) == 4


def test_a_critic_gets_fewer_than_k_when_the_training_items_run_out() -> None:
    batch, gold = crowd()
    chosen = choose_examples(batch, gold, ["i0", "i1", "i2", "i3"], ["a", "b", "c"], k=2)
    assert sorted(len(c.ids) for c in chosen.values()) == [1, 1, 2]


def test_k_must_be_a_whole_number_of_at_least_one() -> None:
    batch, gold = crowd()
    with pytest.raises(ConfigError, match="k \\(examples per critic\\) must be a whole number"):
        choose_examples(batch, gold, list(gold), ["a"], k=0)


def test_a_critic_not_in_the_batch_is_refused() -> None:
    batch, gold = crowd()
    with pytest.raises(ConfigError, match=r"critics \['z'\] are not critics of the batch"):
        choose_examples(batch, gold, list(gold), ["z"], k=1)


def held_out_runs() -> tuple[BatchResult, BatchResult, dict[str, str], list[str]]:
    """40 held-out items; before, a and b share errors on 12 items; after, a is right."""
    gold = gold_of(40)
    before: dict[str, dict[str, str]] = {}
    after: dict[str, dict[str, str]] = {}
    for k, (item, truth) in enumerate(gold.items()):
        wrong = "FAIL" if truth == "PASS" else "PASS"
        shared = k < 12
        before[item] = {"a": wrong if shared else truth, "b": wrong if shared else truth}
        before[item]["c"] = wrong if k in (20, 21) else truth
        after[item] = {"a": truth, "b": before[item]["b"], "c": before[item]["c"]}
    return batch_of(before), batch_of(after), gold, list(gold)


def test_the_same_answers_before_and_after_gain_nothing() -> None:
    before, _, gold, ids = held_out_runs()
    figures = measure_alignment(gold, ids, before, before, ["a", "b", "c"], resamples=200)
    kappa = figures.jury["consensus_kappa"]
    assert kappa.gain == 0.0 and kappa.gain_ci == (0.0, 0.0) and not kappa.significant


def test_a_critic_that_stops_erring_gains_accuracy_and_the_jury_gains_kappa() -> None:
    before, after, gold, ids = held_out_runs()
    figures = measure_alignment(gold, ids, before, after, ["a", "b", "c"], resamples=500)
    assert figures.critics["a"]["accuracy"].before == pytest.approx(28 / 40)
    assert figures.critics["a"]["accuracy"].after == 1.0
    kappa = figures.jury["consensus_kappa"]
    assert kappa.gain is not None and kappa.gain > 0.3
    assert kappa.significant
    assert kappa.gain_ci is not None and kappa.gain_ci[0] <= kappa.gain <= kappa.gain_ci[1]


def test_effective_votes_rise_when_shared_errors_go() -> None:
    before, after, gold, ids = held_out_runs()
    figures = measure_alignment(gold, ids, before, after, ["a", "b", "c"], resamples=200)
    votes = figures.jury["effective_votes"]
    assert votes.before is not None and votes.after is not None
    assert votes.after > votes.before


def test_intervals_are_the_same_for_the_same_seed() -> None:
    before, after, gold, ids = held_out_runs()
    one = measure_alignment(gold, ids, before, after, ["a", "b", "c"], resamples=200, seed=4)
    two = measure_alignment(gold, ids, before, after, ["a", "b", "c"], resamples=200, seed=4)
    assert one == two


def test_a_held_out_item_missing_from_a_run_is_refused() -> None:
    before, after, gold, ids = held_out_runs()
    with pytest.raises(ConfigError, match="have no result in the run measured"):
        measure_alignment(
            {**gold, "nowhere": "PASS"}, [*ids, "nowhere"], before, after, ["a"], resamples=200
        )


def test_a_held_out_item_without_a_gold_label_is_refused() -> None:
    before, after, gold, ids = held_out_runs()
    with pytest.raises(ConfigError, match=r"held-out items \['nowhere'\] have no gold label"):
        measure_alignment(gold, [*ids, "nowhere"], before, after, ["a"], resamples=200)


def test_fewer_than_100_resamples_are_refused() -> None:
    before, after, gold, ids = held_out_runs()
    with pytest.raises(ConfigError, match="resamples must be a whole number >= 100"):
        measure_alignment(gold, ids, before, after, ["a"], resamples=10)


def test_random_examples_ignore_the_errors_but_report_them() -> None:
    batch, gold = crowd()
    wrong_of_a = {f"i{k}" for k in range(6)}
    chosen = choose_examples(batch, gold, list(gold), ["a"], k=6, seed=0, prefer="random")
    assert set(chosen["a"].ids) != wrong_of_a
    for item_id, reason in zip(chosen["a"].ids, chosen["a"].reasons, strict=True):
        assert (reason == "critic wrong") is (item_id in wrong_of_a)


def test_an_unknown_preference_is_refused() -> None:
    batch, gold = crowd()
    with pytest.raises(ConfigError, match="prefer must be 'errors' or 'random'"):
        choose_examples(batch, gold, list(gold), ["a"], k=1, prefer="best")  # type: ignore[arg-type]
