"""Pairs judged in a chosen order (``Ensemble(order=...)``), end to end against the simulated
vendor: the swapped answer is mapped back to the item's own names, both orders are asked
at once, a flip is a tie (or an abstention), and the order is recorded in every verdict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import BatchResult, ConfigError, Critic, Ensemble, Verdict
from cross_judge.batch import ItemError
from cross_judge.pairwise import combine_orders, map_back, shown_order, swapped
from cross_judge.testing import Persona, VendorServer
from cross_judge.verdict import ABSTAIN

TASK = "Which answer explains photosynthesis better?"
GOOD = "Plants turn light, water and CO2 into sugar and oxygen."
POOR = "Plants eat sunlight."
PAIR = {"response_a": POOR, "response_b": GOOD}  # b is better: the right label is B


@pytest.fixture
def server() -> Iterator[VendorServer]:
    personas = [
        Persona("right", accuracy=1.0, seed=1, confidence=(0.8, 0.8)),
        Persona("first", accuracy=0.0, position_bias=1.0, seed=2),  # always answers A
    ]
    with VendorServer(personas, better={TASK: GOOD}) as running:
        yield running


def panel(server: VendorServer, *models: str, **options: Any) -> Ensemble:
    critics = [
        Critic(
            name=f"{model}-{i}",
            model=model,
            prompt="pairwise",
            vendor="custom",
            base_url=server.url,
            api_key="unused",
        )
        for i, model in enumerate(models)
    ]
    return Ensemble(critics, **options)


# -- the rules -----------------------------------------------------------------------------


def test_a_label_answered_with_b_first_means_the_other_candidate() -> None:
    assert map_back("A", "ba") == "B"
    assert map_back("B", "ba") == "A"
    assert map_back("TIE", "ba") == "TIE"
    assert map_back("A", "ab") == "A"


def test_swapping_exchanges_the_candidates_and_keeps_the_rest() -> None:
    context = {"response_a": "x", "response_b": "y", "rubric": "r"}
    assert swapped(context) == {"response_a": "y", "response_b": "x", "rubric": "r"}


def test_cyclic_order_alternates_over_pairs_and_critics() -> None:
    seen = [
        [shown_order("cyclic", pair_number=n, critic_index=j, seed="") for j in range(3)]
        for n in range(2)
    ]
    assert seen == [["ab", "ba", "ab"], ["ba", "ab", "ba"]]


def test_random_order_is_the_same_on_a_rerun() -> None:
    ways = [shown_order("random", pair_number=0, critic_index=0, seed=f"q{i}|c") for i in range(64)]
    assert ways == [
        shown_order("random", pair_number=9, critic_index=5, seed=f"q{i}|c") for i in range(64)
    ]
    assert 16 < ways.count("ab") < 48


def answer(kind: str, shown: str, confidence: float = 0.6, **fields: Any) -> Verdict:
    return Verdict(kind=kind, confidence=confidence, critic_id="c", order=shown, **fields)


def test_agreeing_orders_give_their_winner_with_the_mean_confidence() -> None:
    verdict = combine_orders(answer("B", "ab", 0.6), answer("B", "ba", 0.8), on_flip="tie")
    assert (verdict.kind, verdict.flipped, verdict.order) == ("B", False, "both")
    assert verdict.confidence == pytest.approx(0.7)
    assert verdict.answers is not None
    assert [(a.kind, a.answered, a.order) for a in verdict.answers] == [
        ("B", "B", "ab"),
        ("B", "A", "ba"),
    ]


@pytest.mark.parametrize(("on_flip", "label"), [("tie", "TIE"), ("abstain", ABSTAIN)])
def test_a_flip_is_a_tie_or_an_abstention(on_flip: Any, label: str) -> None:
    verdict = combine_orders(answer("A", "ab"), answer("B", "ba"), on_flip=on_flip)
    assert (verdict.kind, verdict.flipped, verdict.confidence) == (label, True, 0.0)
    assert verdict.error is None


def test_an_error_in_one_order_leaves_the_other_answer_standing_and_marked() -> None:
    failed = Verdict(kind="ERROR", error="timeout: 30s", critic_id="c", order="ab")
    verdict = combine_orders(failed, answer("A", "ba", 0.9), on_flip="tie")
    assert (verdict.kind, verdict.order, verdict.flipped) == ("A", "ba", None)
    assert verdict.confidence == 0.9
    assert verdict.answers is not None
    assert [a.error for a in verdict.answers] == ["timeout: 30s", None]


def test_errors_in_both_orders_are_an_error() -> None:
    failed = Verdict(kind="ERROR", error="timeout: 30s", critic_id="c", order="ab")
    parse = Verdict(kind="PARSE_FAIL", error="parse_fail: no JSON", critic_id="c", order="ba")
    verdict = combine_orders(failed, parse, on_flip="tie")
    assert (verdict.kind, verdict.error, verdict.order) == ("ERROR", "timeout: 30s", None)


def test_usage_and_cost_of_both_orders_are_summed() -> None:
    first = answer("A", "ab", cost_usd=0.001, attempts=1)
    second = answer("A", "ba", cost_usd=0.002, attempts=2)
    verdict = combine_orders(first, second, on_flip="tie")
    assert verdict.cost_usd == pytest.approx(0.003)
    assert verdict.attempts == 3


# -- against the simulated vendor -------------------------------------------------------------


@pytest.mark.anyio
async def test_a_fixed_order_takes_a_first_position_bias_at_face_value(
    server: VendorServer,
) -> None:
    async with panel(server, "first") as judges:
        result = await judges.judge(TASK, context=PAIR)
    (verdict,) = result.verdicts
    assert (verdict.kind, verdict.order, verdict.answers) == ("A", "ab", None)


@pytest.mark.anyio
async def test_both_orders_turn_a_pure_position_bias_into_a_tie(server: VendorServer) -> None:
    async with panel(server, "first", order="both") as judges:
        result = await judges.judge(TASK, context=PAIR)
    (verdict,) = result.verdicts
    assert (verdict.kind, verdict.flipped, verdict.order) == ("TIE", True, "both")
    assert verdict.answers is not None
    assert [(a.kind, a.answered, a.order) for a in verdict.answers] == [
        ("A", "A", "ab"),
        ("B", "A", "ba"),
    ]
    assert result.consensus == "TIE"
    assert result.usage.total_tokens > 0
    assert server.stats()["requests"] == 2


@pytest.mark.anyio
async def test_both_orders_with_abstain_leave_a_flip_for_a_human(server: VendorServer) -> None:
    async with panel(server, "first", order="both", on_flip="abstain") as judges:
        result = await judges.judge(TASK, context=PAIR)
    assert result.verdicts[0].kind == ABSTAIN


@pytest.mark.anyio
async def test_both_orders_of_a_consistent_critic_confirm_its_winner(
    server: VendorServer,
) -> None:
    async with panel(server, "right", order="both") as judges:
        result = await judges.judge(TASK, context=PAIR)
    (verdict,) = result.verdicts
    assert (verdict.kind, verdict.flipped, verdict.confidence) == ("B", False, 0.8)
    assert verdict.score == 0.0  # the pairwise prompt scores B 0.0 (A's win rate)
    assert result.pair_lengths == [len(POOR), len(GOOD)]


@pytest.mark.anyio
async def test_a_critic_shown_b_first_answers_in_the_items_own_names(
    server: VendorServer,
) -> None:
    async with panel(server, "right", "right", order="cyclic") as judges:
        result = await judges.judge(TASK, context=PAIR)
    assert [(v.kind, v.order) for v in result.verdicts] == [("B", "ab"), ("B", "ba")]


@pytest.mark.anyio
async def test_cyclic_order_shows_each_critic_half_the_pairs_each_way(
    server: VendorServer,
) -> None:
    async with panel(server, "first", "first", order="cyclic") as judges:
        results = [await judges.judge(TASK, context=PAIR) for _ in range(6)]
    for index in range(2):
        orders = [r.verdicts[index].order for r in results]
        assert orders.count("ab") == orders.count("ba") == 3
    # A critic that always answers "A" (first shown) picks each candidate half the time.
    kinds = [v.kind for r in results for v in r.verdicts]
    assert kinds.count("A") == kinds.count("B") == 6


@pytest.mark.anyio
async def test_an_item_that_is_not_a_pair_is_refused_before_any_call(
    server: VendorServer,
) -> None:
    async with panel(server, "right", order="both") as judges:
        with pytest.raises(ConfigError, match="judges pairs"):
            await judges.judge(TASK, context={"response_a": POOR})
    assert server.stats()["requests"] == 0


def test_an_unknown_order_or_flip_rule_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="order must be one of"):
        Ensemble([], order="twice")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="on_flip must be"):
        Ensemble([], on_flip="coin")  # type: ignore[arg-type]


# -- batches and results files ----------------------------------------------------------------


def test_a_batch_item_may_give_the_candidates_as_a_and_b(
    server: VendorServer, tmp_path: Path
) -> None:
    items = [{"id": "p1", "query": TASK, "a": POOR, "b": GOOD}]
    batch = panel(server, "right", order="both").judge_many_sync(items)
    (result,) = batch.verdicts
    assert result.consensus == "B"
    assert result.meta == {}
    out = tmp_path / "out.jsonl"
    batch.to_jsonl(out)
    again = BatchResult.from_jsonl(out)
    assert again.verdicts[0].verdicts[0].answers == result.verdicts[0].answers
    assert again.verdicts[0].pair_lengths == [len(POOR), len(GOOD)]


def test_a_batch_refuses_a_non_pair_item_under_a_pair_order_naming_it(
    server: VendorServer,
) -> None:
    judges = panel(server, "right", order="random")
    with pytest.raises(ItemError, match="item 1: id 'x': order='random' judges pairs"):
        judges.judge_many_sync([{"query": TASK, "a": POOR, "b": GOOD}, {"id": "x", "query": TASK}])


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"query": TASK, "a": POOR}, "'b' is nothing"),
        ({"query": TASK, "a": POOR, "b": 3}, "'b' is int"),
        (
            {"query": TASK, "a": POOR, "b": GOOD, "context": {"response_a": POOR}},
            "given twice",
        ),
    ],
)
def test_malformed_candidates_are_item_errors(item: dict[str, Any], message: str) -> None:
    from cross_judge.batch import Item

    with pytest.raises(ItemError, match=message):
        Item.from_value(item)


def test_a_plain_verdict_is_written_without_the_pair_fields() -> None:
    line = json.loads(Verdict(kind="KEEP").model_dump_json())
    assert not {"order", "answers", "flipped"} & set(line)


# -- panel files and the command line -------------------------------------------------------

PANEL = """\
order: both
on_flip: abstain
critics:
  - name: judge-1
    vendor: simulated
    prompt: pairwise
    persona: {accuracy: 0.8}
  - name: judge-2
    vendor: simulated
    prompt: pairwise
    persona: {accuracy: 0.7}
"""


def write_review(tmp_path: Path) -> tuple[Path, Path, Path]:
    items = tmp_path / "pairs.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"p{i}", "query": f"{TASK} ({i})", "a": POOR, "b": GOOD}) + "\n"
            for i in range(4)
        )
    )
    panel_file = tmp_path / "panel.yaml"
    panel_file.write_text(PANEL)
    return items, panel_file, tmp_path / "out.jsonl"


def test_a_panel_file_sets_the_order_and_the_flip_rule(tmp_path: Path) -> None:
    from cross_judge.panel_file import load_panel

    _, panel_file, _ = write_review(tmp_path)
    spec = load_panel(panel_file)
    assert (spec.order, spec.on_flip) == ("both", "abstain")


def test_an_unknown_order_in_a_panel_file_names_its_line(tmp_path: Path) -> None:
    from cross_judge.panel_file import PanelError, load_panel

    panel_file = tmp_path / "panel.yaml"
    panel_file.write_text(PANEL.replace("order: both", "order: twice"))
    with pytest.raises(PanelError, match=r"panel.yaml:1: order"):
        load_panel(panel_file)


def test_review_judges_pairs_in_both_orders_and_resume_refuses_another_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    from cross_judge.cli import main

    items, panel_file, out = write_review(tmp_path)
    assert main(["review", str(items), "--panel", str(panel_file), "--out", str(out)]) == 0
    batch = BatchResult.from_jsonl(out)
    assert len(batch.verdicts) == 4
    for result in batch.verdicts:
        assert result.pair_lengths == [len(POOR), len(GOOD)]
        assert all(v.order in ("both", "ab", "ba") for v in result.verdicts)
        assert all(v.answers is not None and len(v.answers) == 2 for v in result.verdicts)
    before = out.read_bytes()
    panel_file.write_text(PANEL.replace("order: both", "order: cyclic"))
    capsys.readouterr()
    code = main(["review", str(items), "--panel", str(panel_file), "--out", str(out), "--resume"])
    assert code == 2
    assert "order both -> cyclic" in " ".join(capsys.readouterr().err.split())
    assert out.read_bytes() == before
    gc.collect()  # panel-file simulators stop with their panels


# -- pairs through the rest of the machinery --------------------------------------------------


@pytest.mark.anyio
async def test_a_tie_answered_in_both_orders_is_a_confirmed_tie() -> None:
    with VendorServer([Persona("right", accuracy=1.0, seed=1)], better={TASK: None}) as server:
        async with panel(server, "right", order="both") as judges:
            result = await judges.judge(TASK, context=PAIR)
    (verdict,) = result.verdicts
    assert (verdict.kind, verdict.flipped, verdict.order) == ("TIE", False, "both")


@pytest.mark.anyio
async def test_early_stop_counts_a_critics_two_orders_as_one_vote(server: VendorServer) -> None:
    async with panel(server, "right", "right", "right", order="both", early_stop=True) as judges:
        result = await judges.judge(TASK, context=PAIR)
    assert result.consensus == "B"
    assert result.calls_saved == 1  # two agreeing critics decide a majority of three
    assert server.stats()["requests"] == 4


@pytest.mark.anyio
async def test_a_cached_rerun_of_both_orders_makes_no_call(
    server: VendorServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    async with panel(server, "right", order="both", cache=cache) as judges:
        first = await judges.judge(TASK, context=PAIR)
    sent = server.stats()["requests"]
    async with panel(server, "right", order="both", cache=cache) as judges:
        again = await judges.judge(TASK, context=PAIR)
    assert server.stats()["requests"] == sent == 2
    assert again.verdicts[0].cached
    assert again.consensus == first.consensus == "B"


@pytest.mark.anyio
async def test_a_budget_reserves_each_order_as_its_own_call(server: VendorServer) -> None:
    from cross_judge.pricing import _clear_registered, register_price

    register_price("right", vendor="custom", input=1.0, output=1.0)
    try:
        async with panel(server, "right", order="both") as judges:
            result = await judges.judge(TASK, context=PAIR, budget_usd=1.0)
        verdict = result.verdicts[0]
        assert verdict.attempts == 2
        assert verdict.cost_usd is not None and verdict.cost_usd > 0
        assert result.cost_usd == verdict.cost_usd
    finally:
        _clear_registered()


@pytest.mark.anyio
async def test_a_cascade_of_pair_orders_escalates_a_flip(server: VendorServer) -> None:
    from cross_judge import Cascade, Escalation

    cheap = panel(server, "first", order="both")
    strong = Ensemble(
        [
            Critic(
                name="strong",
                model="right",
                prompt="pairwise",
                vendor="custom",
                base_url=server.url,
                api_key="unused",
            )
        ],
        order="both",
    )
    cascade = Cascade([cheap, strong], escalate=Escalation(confidence_below=0.5))
    async with cascade:
        result = await cascade.judge(TASK, context=PAIR)
    assert result.tiers is not None
    assert [t.consensus for t in result.tiers] == ["TIE", "B"]  # the flip escalated
    assert (result.tier, result.consensus) == (1, "B")
