"""The one-pass digest of results (cross_judge.report._digest.BatchDigest) gives the numbers
BatchResult's methods give on the same results: panels, pairs, cascades, failures,
fallbacks, scores and gold; and it holds whole results only where their number is bounded.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import pytest

from cross_judge.batch import BatchResult
from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.report._digest import BatchDigest
from cross_judge.report._summary import render_disputed, render_summary
from cross_judge.results import plain_text
from cross_judge.stats._reliability import effective_votes, learn_weights
from cross_judge.verdict import ABSTAIN, Answer, EnsembleVerdict, Usage, Verdict

LABELS = ("KEEP", "REJECT", "MERGE")
FAILURES = (
    ("ERROR", ErrorKind.TIMEOUT, "timeout: no answer in 60 s"),
    ("ERROR", ErrorKind.SERVER, "server: HTTP 503"),
    ("PARSE_FAIL", ErrorKind.PARSE, "parse: no JSON object"),
    ("SKIPPED", ErrorKind.BUDGET, "budget: over the limit"),
)


# -- random results ------------------------------------------------------------------------------


def verdict(rng: random.Random, critic: str, *, pairs: bool, scores: bool) -> Verdict:
    usage = Usage(prompt_tokens=rng.randint(1, 500), completion_tokens=rng.randint(1, 50))
    cost = None if rng.random() < 0.05 else rng.random() / 1000
    common: dict[str, Any] = {
        "critic_id": critic,
        "usage": usage,
        "cost_usd": cost,
        "elapsed_s": rng.random(),
        "model": None if rng.random() < 0.3 else f"model-{critic}",
    }
    if rng.random() < 0.15:
        kind, error_kind, message = rng.choice(FAILURES)
        return Verdict(kind=kind, error=message, error_kind=error_kind, **common)
    extra: dict[str, Any] = {}
    if rng.random() < 0.2:
        extra["self_agreement"] = rng.choice((0.5, 2 / 3, 1.0))
    if pairs:
        if rng.random() < 0.4:
            first, second = rng.choice("ABT"), rng.choice("ABT")
            swap = {"A": "B", "B": "A", "T": "T"}
            own = [first, swap[second]]
            flipped = own[0] != own[1]
            kind = "TIE" if flipped else {"T": "TIE"}.get(own[0], own[0])
            extra |= {
                "order": "both",
                "flipped": flipped,
                "answers": [
                    Answer(kind=own[0], answered=first, order="ab"),
                    Answer(kind=own[1], answered=second, order="ba"),
                ],
            }
        else:
            kind = rng.choice(("A", "B", "TIE"))
            extra["order"] = rng.choice(("ab", "ba"))
    else:
        kind = rng.choice(LABELS)
    if scores:
        extra["score"] = rng.choice((0.0, 0.25, 0.5, 1.0))
    stated = rng.random() < 0.9
    return Verdict(
        kind=kind,
        confidence=round(rng.random(), 2),
        confidence_stated=stated,
        **common,
        **extra,
    )


def voted(
    rng: random.Random, query_id: str, verdicts: list[Verdict], **extra: Any
) -> EnsembleVerdict:
    valid = [v for v in verdicts if v.error is None]
    counts = Counter(v.kind for v in valid).most_common()
    fallback = not counts or (len(counts) > 1 and counts[0][1] == counts[1][1])
    consensus = "UNCLEAR" if fallback else counts[0][0]
    agreeing = sum(v.kind == consensus for v in valid)
    costs = [v.cost_usd for v in verdicts]
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=verdicts,
        consensus=consensus,
        fallback=fallback,
        agreement_pct=agreeing / len(valid) if valid else 0.0,
        disagreement=len({v.kind for v in valid}) > 1,
        voting="majority",
        n_valid=len(valid),
        n_errors=len(verdicts) - len(valid),
        usage=sum((v.usage or Usage() for v in verdicts), Usage()),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c),
        **extra,
    )


def panel_results(
    seed: int, n: int, *, critics: str = "abc", pairs: bool = False, scores: bool = False
) -> list[EnsembleVerdict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        verdicts = [
            verdict(rng, name, pairs=pairs, scores=scores)
            for name in critics
            if rng.random() > 0.05
        ]
        extra: dict[str, Any] = {}
        if pairs and rng.random() < 0.9:
            extra["pair_lengths"] = [rng.randint(0, 40), rng.randint(0, 40)]
        out.append(voted(rng, f"q{i}", verdicts, **extra))
    return out


def cascade_results(seed: int, n: int) -> list[EnsembleVerdict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        first = voted(rng, f"q{i}", [verdict(rng, c, pairs=False, scores=False) for c in "ab"])
        if not first.fallback and first.agreement_pct == 1.0:
            tiers, tier, consensus = [first], 0, first.consensus
        else:
            second = voted(rng, f"q{i}", [verdict(rng, c, pairs=False, scores=False) for c in "cd"])
            tiers, tier = [first, second], 1
            consensus = ABSTAIN if second.fallback else second.consensus
        deciding = tiers[tier]
        costs = [t.cost_usd for t in tiers]
        out.append(
            EnsembleVerdict(
                query_id=f"q{i}",
                verdicts=[v for t in tiers for v in t.verdicts],
                consensus=consensus,
                agreement_pct=deciding.agreement_pct,
                disagreement=deciding.disagreement,
                voting="majority",
                n_valid=deciding.n_valid,
                n_errors=deciding.n_errors,
                tier=tier,
                tiers=tiers,
                usage=sum((t.usage for t in tiers), Usage()),
                cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c),
            )
        )
    return out


BATCHES = {
    "panel": lambda: panel_results(1, 300),
    "panel of four with scores": lambda: panel_results(2, 250, critics="abcd", scores=True),
    "pairs": lambda: panel_results(3, 1200, pairs=True),
    "cascade": lambda: cascade_results(4, 300),
    "one critic": lambda: panel_results(5, 40, critics="a"),
}


@pytest.fixture(params=sorted(BATCHES))
def batch(request: pytest.FixtureRequest) -> BatchResult:
    return BatchResult.from_results(BATCHES[request.param]())


def gold_of(batch: BatchResult, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)
    labels = sorted({v.kind for r in batch.verdicts for v in r.verdicts if v.error is None})
    return {r.query_id: rng.choice(labels) for r in batch.verdicts if rng.random() < 0.3}


# -- the same numbers ----------------------------------------------------------------------------


def test_agreement_statistics_equal_the_batch_methods(batch: BatchResult) -> None:
    digest = BatchDigest.of(batch)
    assert [list(row) for row in digest.labels_matrix()] == batch.labels_matrix()
    assert digest.reliability_alpha() == batch.reliability_alpha()
    assert digest.reliability_alpha("ordinal", ["KEEP", "MERGE", "REJECT", "A", "TIE", "B"]) == (
        batch.reliability_alpha("ordinal", ["KEEP", "MERGE", "REJECT", "A", "TIE", "B"])
    )
    assert digest.fleiss_kappa() == batch.fleiss_kappa()
    assert digest.pairwise_agreement("percent") == batch.pairwise_agreement("percent")
    assert digest.pairwise_agreement("cohen") == batch.pairwise_agreement("cohen")


def test_counts_equal_the_batch_methods(batch: BatchResult) -> None:
    digest = BatchDigest.of(batch)
    assert len(digest) == len(batch)
    assert digest.critics == batch.critics
    assert digest.consensus_counts() == batch.consensus_counts()
    assert list(digest.consensus_counts()) == list(batch.consensus_counts())
    assert digest.n_no_consensus == len(batch.no_consensus_items)
    assert digest.n_abstained == len(batch.abstained_items)
    assert digest.n_failed == len(batch.failed_items)
    assert digest.failed_ids == batch.failed_items[:5]
    assert digest.n_disagreement == sum(r.disagreement for r in batch.verdicts)
    assert digest.usage == batch.usage
    assert digest.cost_usd == batch.cost_usd
    assert digest.critic_stats() == batch.critic_stats()
    assert digest.tier_stats() == batch.tier_stats()


def test_bias_statistics_equal_the_batch_methods(batch: BatchResult) -> None:
    digest = BatchDigest.of(batch)
    assert digest.position_bias() == batch.position_bias()
    assert digest.length_bias() == batch.length_bias()
    assert digest.self_consistency() == batch.self_consistency()


def test_gold_statistics_equal_the_batch_methods(batch: BatchResult) -> None:
    gold = gold_of(batch)
    digest = BatchDigest.of(batch, gold=gold)
    assert digest.gold_report() == batch.against(gold)
    assert digest.gold_report(ci=0.9) == batch.against(gold, ci=0.9)
    assert digest.learn_weights() == learn_weights(batch, gold)
    assert digest.effective_votes(gold=True) == effective_votes(batch, gold)
    assert len(digest.gold_results) == len(gold)


def test_effective_votes_without_gold_equal_the_model_estimate() -> None:
    batch = BatchResult.from_results(panel_results(6, 400))
    assert BatchDigest.of(batch).effective_votes(gold=False) == effective_votes(batch)


def test_interval_alpha_reads_the_scores_as_the_batch_does() -> None:
    batch = BatchResult.from_results(panel_results(7, 200, scores=True))
    digest = BatchDigest.of(batch, level="interval")
    assert digest.reliability_alpha() == batch.reliability_alpha("interval")
    assert digest.reliability_alpha("nominal") == batch.reliability_alpha()


def test_interval_alpha_over_text_labels_without_scores_is_refused_as_by_the_batch() -> None:
    batch = BatchResult.from_results(panel_results(8, 20))
    with pytest.raises(ConfigError) as by_batch:
        batch.reliability_alpha("interval")
    with pytest.raises(ConfigError) as by_digest:
        BatchDigest.of(batch, level="interval").reliability_alpha()
    assert str(by_digest.value) == str(by_batch.value)


def test_a_batch_where_some_verdicts_carry_a_score_is_refused_as_by_the_batch() -> None:
    results = panel_results(15, 60, scores=True)
    results[3].verdicts = [v.model_copy(update={"score": None}) for v in results[3].verdicts]
    batch = BatchResult.from_results(results)
    with pytest.raises(ConfigError) as by_batch:
        batch.reliability_alpha("interval")
    with pytest.raises(ConfigError) as by_digest:
        BatchDigest.of(batch, level="interval").reliability_alpha()
    assert str(by_digest.value) == str(by_batch.value)


def test_numeric_labels_read_as_numbers_as_by_the_batch() -> None:
    rng = random.Random(16)
    results = [
        voted(
            rng,
            f"q{i}",
            [Verdict(kind=rng.choice("12345"), critic_id=c, score=rng.random()) for c in "abc"],
        )
        for i in range(80)
    ]
    batch = BatchResult.from_results(results)
    digest = BatchDigest.of(batch, level="ratio")
    readings: tuple[Literal["auto", "labels", "scores"], ...] = ("auto", "labels", "scores")
    for numbers in readings:
        by_batch = batch.reliability_alpha("ratio", numbers=numbers)
        assert digest.reliability_alpha(numbers=numbers) == by_batch
    ordinal = BatchDigest.of(batch, level="ordinal")
    assert ordinal.reliability_alpha(numbers="labels") == batch.reliability_alpha(
        "ordinal", numbers="labels"
    )


def test_gold_ids_that_are_no_item_are_refused() -> None:
    batch = BatchResult.from_results(panel_results(9, 20))
    with pytest.raises(ConfigError, match="1 gold id"):
        BatchDigest.of(batch, gold={"q1": "KEEP", "nowhere": "KEEP"}).gold_report()


def test_a_results_file_read_line_by_line_gives_the_batchs_numbers(tmp_path: Path) -> None:
    batch = BatchResult.from_results(cascade_results(10, 120))
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    digest = BatchDigest.read(path)
    assert digest.critic_stats() == batch.critic_stats()
    assert digest.reliability_alpha() == batch.reliability_alpha()
    assert digest.tier_stats() == batch.tier_stats()


def test_the_summary_of_a_digest_is_the_summary_of_the_batch(tmp_path: Path) -> None:
    batch = BatchResult.from_results(panel_results(11, 300, pairs=True))
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    gold = gold_of(batch)
    by_batch = plain_text(render_summary(batch, detailed=True, gold=gold))
    by_digest = plain_text(
        render_summary(BatchDigest.read(path, gold=gold), detailed=True, gold=gold)
    )
    assert by_digest == by_batch


# -- bounded -------------------------------------------------------------------------------------


def test_only_the_first_disputed_items_are_kept_and_all_are_counted() -> None:
    batch = BatchResult.from_results(panel_results(12, 300))
    digest = BatchDigest.of(batch, disputed=7)
    assert len(digest.disputed) == 7
    assert digest.n_disputed > 7
    assert [r.query_id for r, _ in digest.disputed] == [
        r.query_id for r, _ in BatchDigest.of(batch, disputed=len(batch)).disputed[:7]
    ]


def test_kept_results_hold_no_raw_response() -> None:
    results = panel_results(13, 50)
    for result in results:
        result.verdicts = [
            v.model_copy(update={"raw_response": "x" * 1000}) for v in result.verdicts
        ]
    digest = BatchDigest.of(BatchResult.from_results(results), disputed=50)
    assert digest.disputed
    assert all(v.raw_response is None for r, _ in digest.disputed for v in r.verdicts)


def test_the_disputed_list_says_how_many_more_there_are() -> None:
    batch = BatchResult.from_results(panel_results(14, 100))
    digest = BatchDigest.of(batch, disputed=3)
    text = plain_text(render_disputed(digest, 3))
    assert f"disputed items: {digest.n_disputed} of 100" in text
    assert "the first 3 shown" in text
