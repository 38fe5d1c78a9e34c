"""The fast paths of a batch's statistics give exactly what the straightforward computation
gives (issue 41, point 4): ``revote("dawid_skene")`` against a fresh fit and one
``model_copy`` per item, ``fleiss_kappa()`` against the full labels matrix, ``against(gold)``
against ``gold_metrics`` on every item. No timing here: bench/bench_revote.py times them."""

from __future__ import annotations

import gc
import random
from collections.abc import Iterator
from typing import Any

import pytest

from cross_judge import BatchResult, ConfigError, Ensemble, EnsembleVerdict, Verdict, revote
from cross_judge.errors import ErrorKind
from cross_judge.stats import fleiss_kappa, gold_metrics
from cross_judge.stats._dawid_skene import fit_votes
from cross_judge.stats._reliability import _allowed_labels, _items_matrix
from tests.fixtures.dawid_skene_sparse import sparse_crowd

PANEL = Ensemble(critics=[])
LABELS = ("KEEP", "REJECT", "SPLIT")

pytestmark = pytest.mark.filterwarnings("ignore:Dawid-Skene estimates .* below chance")


def vote(critic: str, kind: str | None, confidence: float = 0.8) -> Verdict:
    if kind is None:
        return Verdict(kind="ERROR", critic_id=critic, error="timeout", attempts=1)
    return Verdict(kind=kind, critic_id=critic, confidence=confidence)


def item(query_id: str, answers: list[tuple[str, str | None]]) -> EnsembleVerdict:
    return PANEL.aggregate_verdicts([vote(c, k) for c, k in answers], query_id=query_id)


def crowd_batch(seed: int = 5, n_items: int = 300, n_critics: int = 40) -> BatchResult:
    """A small sparse crowd (every voter labels a few items) as a batch of people's votes."""
    crowd = sparse_crowd(seed=seed, n_items=n_items, n_critics=n_critics, n_gold=30)
    rows = [
        (f"q{i}", f"a{j}", label)
        for i, j, label in zip(crowd.items, crowd.critics, crowd.labels, strict=True)
    ]
    return BatchResult.from_votes(rows)


def mixed_batch(seed: int = 11) -> BatchResult:
    """Three critics of falling accuracy, failed and skipped calls, an item with no valid
    vote, a critic voting twice on an item, meta and an extra field."""
    rng = random.Random(seed)
    results = []
    for i in range(80):
        truth = rng.choice(LABELS)
        answers: list[tuple[str, str | None]] = []
        for name, accuracy in (("x", 0.9), ("y", 0.7), ("z", 0.5)):
            if rng.random() < 0.15:
                answers.append((name, None))
            elif rng.random() < accuracy:
                answers.append((name, truth))
            else:
                answers.append((name, rng.choice([k for k in LABELS if k != truth])))
        if i == 7:
            answers = [("x", None), ("y", None), ("z", None)]
        if i == 9:
            answers.append(("z", "SPLIT"))  # z twice on one item
        result = item(f"q{i}", answers)
        if i % 13 == 0:
            verdicts = list(result.verdicts)
            verdicts[0] = Verdict(
                kind="SKIPPED",
                critic_id=verdicts[0].critic_id,
                error="stopped early",
                error_kind=ErrorKind.EARLY_STOP,
            )
            data = result.model_dump()
            data.update(verdicts=verdicts, meta={"n": i}, added_later=i)
            result = EnsembleVerdict.model_validate(data)
        results.append(result)
    return BatchResult.from_results(results)


# -- revote("dawid_skene") ---------------------------------------------------------------------


def straightforward_revote(
    batch: BatchResult, *, fallback: str = "UNCLEAR", **settings: Any
) -> list[EnsembleVerdict]:
    """A fresh fit of the batch critics' valid votes, then one ``model_copy`` per item with
    its figures counted from all its valid verdicts."""
    column = {name: j for j, name in enumerate(batch.critics)}
    votes = [
        (i, column[v.critic_id], v.kind)
        for i, r in enumerate(batch.verdicts)
        for v in r.verdicts
        if v.error is None and v.critic_id in column
    ]
    items, critics, labels = (list(x) for x in zip(*votes, strict=True))
    fit = fit_votes(
        items, critics, labels, n_items=len(batch), n_critics=len(batch.critics), **settings
    )
    out = []
    for i, result in enumerate(batch.verdicts):
        valid = [v for v in result.verdicts if v.error is None]
        if not valid:
            update: dict[str, Any] = {
                "consensus": fallback,
                "score": None,
                "fallback": True,
                "agreement_pct": 0.0,
                "disagreement": False,
                "dissenters": [],
            }
        else:
            label = fit.labels[i]
            update = {
                "consensus": label,
                "score": fit.posteriors[i][fit.classes.index(label)],
                "fallback": False,
                "agreement_pct": sum(v.kind == label for v in valid) / len(valid),
                "disagreement": len({v.kind for v in valid}) > 1,
                "dissenters": [v.critic_id for v in valid if v.kind != label],
            }
        out.append(result.model_copy(update={**update, "voting": "dawid_skene"}))
    return out


def assert_same_results(got: list[EnsembleVerdict], expected: list[EnsembleVerdict]) -> None:
    assert [r.model_dump_json() for r in got] == [r.model_dump_json() for r in expected]
    assert [r.model_fields_set for r in got] == [r.model_fields_set for r in expected]
    assert [r.model_extra for r in got] == [r.model_extra for r in expected]
    assert [type(r) for r in got] == [type(r) for r in expected]


@pytest.mark.parametrize("seed", [5, 6])
def test_revote_dawid_skene_of_a_sparse_crowd_equals_the_straightforward_one(seed: int) -> None:
    batch = crowd_batch(seed)
    revoted = batch.revote("dawid_skene")
    assert_same_results(revoted.verdicts, straightforward_revote(batch))
    assert (
        revoted.model_dump_json()
        == batch.model_copy(
            update={"verdicts": straightforward_revote(batch), "voting": "dawid_skene"}
        ).model_dump_json()
    )


@pytest.mark.parametrize("settings", [{}, {"one_coin": True}, {"errors": "correlated"}])
def test_revote_dawid_skene_of_a_mixed_batch_equals_the_straightforward_one(
    settings: dict[str, Any],
) -> None:
    if settings.get("errors") == "correlated":
        pytest.importorskip("numpy")
    batch = mixed_batch()
    revoted = batch.revote("dawid_skene", fallback="NO_VOTE", **settings)
    expected = straightforward_revote(batch, fallback="NO_VOTE", **settings)
    assert_same_results(revoted.verdicts, expected)
    silent = revoted.verdicts[7]
    assert (silent.consensus, silent.fallback, silent.score) == ("NO_VOTE", True, None)


def test_a_verdict_by_a_critic_outside_the_batchs_critics_votes_on_its_item_only() -> None:
    # The fit, like every statistic, reads only batch.critics; the item's own figures
    # (agreement, dissenters) count every valid verdict, as a per-item strategy does.
    full = mixed_batch()
    narrowed = full.model_copy(update={"critics": ["x", "y"]})
    revoted = narrowed.revote("dawid_skene")
    assert_same_results(revoted.verdicts, straightforward_revote(narrowed))
    assert any("z" in r.dissenters for r in revoted.verdicts)


def test_a_subclassed_result_is_copied_by_model_copy_and_keeps_its_class() -> None:
    class Tagged(EnsembleVerdict):
        pass

    batch = mixed_batch()
    tagged = batch.model_copy(
        update={
            "verdicts": [
                Tagged.model_validate(r.model_dump()) if i % 2 else r
                for i, r in enumerate(batch.verdicts)
            ]
        }
    )
    assert_same_results(tagged.revote("dawid_skene").verdicts, straightforward_revote(tagged))


def test_the_collector_is_on_again_after_a_revote_and_after_a_refused_one() -> None:
    batch = mixed_batch()
    assert gc.isenabled()
    batch.revote("dawid_skene")
    assert gc.isenabled()
    with pytest.raises(ConfigError):
        batch.revote("dawid_skene", errors="sideways")
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off() -> None:
    batch = mixed_batch()
    gc.disable()
    try:
        batch.revote("dawid_skene")
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- revote(strategy) ---------------------------------------------------------------------------


@pytest.mark.parametrize("voting", ["majority", "unanimous", "weighted"])
def test_a_batch_revote_is_each_items_revote(voting: str) -> None:
    batch = complete_batch()
    together = batch.revote(voting, weights={"x": 2.0})
    alone = [revote(r, voting, weights={"x": 2.0}) for r in batch.verdicts]
    assert [r.model_dump() for r in together.verdicts] == [r.model_dump() for r in alone]


def test_a_batch_revote_checks_its_strategy_once_not_once_an_item(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cross_judge import ensemble

    checks = []
    real = ensemble.validate_voting

    def counted(*args: Any, **kwargs: Any) -> Any:
        checks.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(ensemble, "validate_voting", counted)
    complete_batch(n=40).revote("majority")
    assert len(checks) == 2  # the strategy alone, then with its arguments


def test_an_unknown_strategy_is_refused_before_any_item_is_revoted() -> None:
    with pytest.raises(ConfigError, match="nope"):
        complete_batch().revote("nope")


# -- fleiss_kappa() -----------------------------------------------------------------------------


def complete_batch(n: int = 60, seed: int = 2) -> BatchResult:
    """Three critics on every item, a few calls failed."""
    rng = random.Random(seed)
    results = []
    for i in range(n):
        answers: list[tuple[str, str | None]] = [
            (name, None if rng.random() < 0.1 else rng.choice(LABELS)) for name in "xyz"
        ]
        if i == 3:
            answers.append(("x", "KEEP"))  # x twice: its later answer is its cell
        results.append(item(f"q{i}", answers))
    return BatchResult.from_results(results)


def fleiss_batches() -> Iterator[BatchResult]:
    yield complete_batch()
    yield mixed_batch()
    yield crowd_batch()  # no item judged by every annotator
    yield complete_batch().model_copy(update={"critics": ["x", "y"]})
    yield complete_batch().model_copy(update={"critics": ["x"]})
    yield complete_batch().model_copy(update={"critics": []})
    yield BatchResult(verdicts=[], critics=["x", "y"], voting="majority")


@pytest.mark.parametrize("batch", list(fleiss_batches()))
def test_fleiss_kappa_equals_the_statistic_on_the_full_labels_matrix(batch: BatchResult) -> None:
    assert batch.fleiss_kappa() == fleiss_kappa(batch.labels_matrix())


def test_fleiss_kappa_of_a_complete_panel_is_defined() -> None:
    assert complete_batch().fleiss_kappa() is not None


# -- against(gold) ------------------------------------------------------------------------------


def straightforward_gold(batch: BatchResult, gold: dict[str, str], **options: Any) -> Any:
    """``gold_metrics`` on every item, the labels and confidences transposed from the
    batch's critics x items matrices, the vocabulary a scan of every cell finds."""
    labels = [list(c) for c in zip(*batch.labels_matrix(), strict=True)]
    stated = batch._matrix(lambda v: v.confidence if v.confidence_stated else None)
    confidences = [list(c) for c in zip(*stated, strict=True)]
    consensus = [r.consensus for r in batch.verdicts]
    vocabulary = dict.fromkeys(x for row in labels for x in row if x is not None)
    vocabulary.update(dict.fromkeys(consensus))
    return gold_metrics(
        labels,
        batch.critics,
        [gold.get(r.query_id) for r in batch.verdicts],
        confidences=confidences,
        consensus=consensus,
        vocabulary=list(vocabulary),
        item_ids=[r.query_id for r in batch.verdicts],
        **options,
    )


def some_gold(batch: BatchResult, every: int = 4) -> dict[str, str]:
    rng = random.Random(3)
    return {r.query_id: rng.choice(LABELS) for r in batch.verdicts[::every]}


@pytest.mark.parametrize("ci", [None, 0.9])
def test_against_gold_equals_gold_metrics_on_every_item(ci: float | None) -> None:
    batch = mixed_batch()
    gold = some_gold(batch)
    got = batch.against(gold, ci=ci)
    expected = straightforward_gold(batch, gold, ci=ci)
    assert got == expected
    assert got.item_ids == expected.item_ids
    assert got.n_items == len(batch) and got.n_gold == len(gold)
    assert str(got) == str(expected)


def test_the_labels_order_counts_the_unlabelled_items_too() -> None:
    # MERGE is answered only on an unlabelled item, after SPLIT; KEEP first, by y then x.
    results = [
        item("a", [("x", None), ("y", "KEEP")]),
        item("b", [("x", "SPLIT"), ("y", "MERGE")]),
        item("c", [("x", "REJECT"), ("y", "KEEP")]),
    ]
    batch = BatchResult.from_results(results)
    gold = {"c": "REJECT"}
    assert batch.against(gold).labels == straightforward_gold(batch, gold).labels
    assert _allowed_labels(batch)[:4] == ["KEEP", "SPLIT", "MERGE", "REJECT"]


def test_a_critics_later_answer_on_an_item_is_its_cell_for_the_gold_too() -> None:
    batch = complete_batch()
    gold = some_gold(batch, every=1)
    assert batch.against(gold) == straightforward_gold(batch, gold)


def test_unstated_confidences_are_left_out_of_calibration_as_before() -> None:
    batch = mixed_batch()
    results = []
    for i, result in enumerate(batch.verdicts):
        verdicts = [
            v.model_copy(update={"confidence_stated": False}) if i % 3 == 0 else v
            for v in result.verdicts
        ]
        results.append(result.model_copy(update={"verdicts": verdicts}))
    unstated = batch.model_copy(update={"verdicts": results})
    gold = some_gold(unstated, every=2)
    assert unstated.against(gold) == straightforward_gold(unstated, gold)


def test_ids_given_twice_are_refused_as_gold_metrics_refuses_them() -> None:
    results = [item("same", [("x", "KEEP")]), item("q1", [("x", "REJECT")])]
    results.append(item("same", [("x", "SPLIT")]))
    batch = BatchResult.from_results(results)
    with pytest.raises(ConfigError) as straight:
        straightforward_gold(batch, {"q1": "REJECT"})
    with pytest.raises(ConfigError) as fast:
        batch.against({"q1": "REJECT"})
    assert str(fast.value) == str(straight.value)


def test_a_confidence_outside_the_unit_interval_is_refused_as_before() -> None:
    # Only a verdict changed after validation can hold one; gold_metrics still says so.
    batch = mixed_batch()
    broken = next(v for r in batch.verdicts[1:] for v in r.verdicts if v.error is None)
    object.__setattr__(broken, "__dict__", {**broken.__dict__, "confidence": 1.5})
    gold = {batch.verdicts[0].query_id: "KEEP"}
    with pytest.raises(ConfigError) as straight:
        straightforward_gold(batch, gold)
    with pytest.raises(ConfigError) as fast:
        batch.against(gold)
    assert str(fast.value) == str(straight.value)


# -- the items x critics matrix the other statistics read ----------------------------------------


@pytest.mark.parametrize("batch", [mixed_batch(), complete_batch(), crowd_batch()])
def test_the_items_matrix_is_the_transposed_labels_matrix(batch: BatchResult) -> None:
    expected = [list(c) for c in zip(*batch.labels_matrix(), strict=True)]
    assert _items_matrix(batch) == expected
