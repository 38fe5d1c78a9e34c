"""Verdict.confidence_stated: a vote whose answer gave no confidence is told apart from one
that stated 0.0, in results files and in every confidence statistic.

The batch below is small enough to work every number by hand. Critic ``x`` on four
labelled items (gold KEEP, REJECT, REJECT, KEEP):

==== ====== ========== ======= =========================
item answer confidence correct (c - correct)^2
==== ====== ========== ======= =========================
q1   KEEP   0.9        yes     0.01
q2   KEEP   0.6        no      0.36
q3   REJECT 0.8        yes     0.04
q4   REJECT none       no      (left out; 0.0 if counted)
==== ====== ========== ======= =========================

Over the three stated: Brier 0.41 / 3; ECE (10 bins, one vote in each of bins 6, 8, 9)
(0.6 + 0.2 + 0.1) / 3 = 0.3. Counting q4 as a stated 0.0 would give 0.41 / 4 and 0.9 / 4.
Accuracy, kappa and coverage still count q4: accuracy 2/4, coverage 4/4, and kappa 0
(both marginals are half KEEP, half REJECT; without q4 it would be 0.4).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import BatchResult, ConfigError, Critic, Ensemble, Verdict
from cross_judge.batch import ResultsFile, dump_result, load_result
from cross_judge.schema import Verdict as LegacyVerdict
from cross_judge.stats._confidence_calibration import (
    ConfidenceCalibration,
    fit_confidence_calibration,
)
from cross_judge.stats._gold import gold_metrics
from cross_judge.stats._reliability import apply_calibration, calibrate_confidence, gold_report
from cross_judge.testing import Persona, Reply, VendorServer

PANEL = Ensemble(critics=[])
GOLD = {"q1": "KEEP", "q2": "REJECT", "q3": "REJECT", "q4": "KEEP"}
ANSWERS = {"q1": ("KEEP", 0.9), "q2": ("KEEP", 0.6), "q3": ("REJECT", 0.8), "q4": ("REJECT", None)}
KEY = "sk-confidence-stated-key-9f8e7d6c"
TEMPLATE = (
    "Judge the item.\n<item>{query}</item>\n"
    "Answer in JSON with kind (KEEP/REJECT), confidence (0-1) and reasoning."
)


def vote(critic: str, kind: str, confidence: float | None) -> Verdict:
    """A valid verdict; ``confidence=None`` is an answer that stated none."""
    if confidence is None:
        return Verdict(kind=kind, critic_id=critic, confidence_stated=False)
    return Verdict(kind=kind, critic_id=critic, confidence=confidence)


def batch_of(answers: dict[str, dict[str, tuple[str, float | None]]]) -> BatchResult:
    """``{item id: {critic: (label, confidence)}}`` as a batch."""
    results = [
        PANEL.aggregate_verdicts(
            [vote(critic, kind, conf) for critic, (kind, conf) in by_critic.items()],
            query_id=query_id,
        )
        for query_id, by_critic in answers.items()
    ]
    critics = list(dict.fromkeys(c for by_critic in answers.values() for c in by_critic))
    return BatchResult(verdicts=results, critics=critics, voting="majority")


def hand_batch() -> BatchResult:
    """Critic ``x`` of the module docstring, and ``y``, which is right on every item with
    confidence 0.7 (so the batch has two critics and ``x``'s q4 is still a vote)."""
    return batch_of(
        {query_id: {"x": ANSWERS[query_id], "y": (label, 0.7)} for query_id, label in GOLD.items()}
    )


# -- the field and its serialisation -------------------------------------------------------


def test_a_verdict_states_its_confidence_by_default() -> None:
    assert Verdict(kind="KEEP", confidence=0.0).confidence_stated is True


def test_the_flag_is_left_out_of_dumps_when_the_confidence_was_stated() -> None:
    stated = Verdict(kind="KEEP", confidence=0.8)
    assert "confidence_stated" not in stated.model_dump()
    assert "confidence_stated" not in stated.model_dump_json()


def test_the_flag_is_written_as_false_when_no_confidence_was_stated() -> None:
    unstated = Verdict(kind="KEEP", confidence_stated=False)
    assert unstated.model_dump()["confidence_stated"] is False
    assert json.loads(unstated.model_dump_json())["confidence_stated"] is False
    assert Verdict.model_validate_json(unstated.model_dump_json()) == unstated


def test_a_results_file_keeps_the_flag_through_a_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    hand_batch().to_jsonl(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [line.count('"confidence_stated":false') for line in lines] == [0, 0, 0, 1]
    for slim in (False, True):
        loaded = BatchResult.from_jsonl(path, slim=slim)
        flags = {
            (r.query_id, v.critic_id): v.confidence_stated
            for r in loaded.verdicts
            for v in r.verdicts
        }
        assert [key for key, stated in flags.items() if not stated] == [("q4", "x")]


def test_an_old_results_line_without_the_flag_loads_as_stated(tmp_path: Path) -> None:
    # As a results file written before the flag existed holds it (a 0.0 confidence, too).
    old = {
        "query_id": "q1",
        "verdicts": [
            {"kind": "KEEP", "confidence": 0.0, "reasoning": "fine", "critic_id": "x"},
            {"kind": "KEEP", "confidence": 0.85, "reasoning": "ok", "critic_id": "y"},
        ],
        "consensus": "KEEP",
        "voting": "majority",
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")
    (result,) = ResultsFile.read(path)
    assert [v.confidence_stated for v in result.verdicts] == [True, True]
    assert "confidence_stated" not in dump_result(result)


def test_rewriting_a_stored_line_of_stated_confidences_changes_no_byte() -> None:
    line = dump_result(PANEL.aggregate_verdicts([vote("x", "KEEP", 0.9)], query_id="q"))
    assert dump_result(load_result(line)) == line
    assert "confidence_stated" not in line


def test_legacy_verdicts_keep_the_seven_fields_of_0_1() -> None:
    unstated = Verdict(kind="KEEP", critic_id="x", confidence_stated=False)
    legacy = LegacyVerdict.from_verdict(unstated, extras=False)
    assert set(legacy.model_dump()) == {
        "reviewer_id", "verdict", "confidence", "rationale", "raw_response", "error",
        "elapsed_s",
    }  # fmt: skip
    stated = LegacyVerdict.from_verdict(Verdict(kind="KEEP", critic_id="x"))
    assert "confidence_stated" not in stated.model_dump()


def test_a_legacy_verdict_carries_the_flag_back_to_a_new_one() -> None:
    unstated = Verdict(kind="KEEP", critic_id="x", confidence_stated=False)
    assert LegacyVerdict.from_verdict(unstated).to_verdict() == unstated


# -- gold report -----------------------------------------------------------------------------


def test_brier_and_ece_skip_the_vote_that_stated_no_confidence() -> None:
    row = hand_batch().against(GOLD)["x"]
    assert row.brier == pytest.approx(0.41 / 3)
    assert row.ece == pytest.approx(0.3)
    assert row.n_stated == 3


def test_the_reliability_table_holds_only_the_stated_votes() -> None:
    row = hand_batch().against(GOLD)["x"]
    assert row.reliability is not None
    assert {b.lo: b.count for b in row.reliability if b.count} == {0.6: 1, 0.8: 1, 0.9: 1}


def test_a_vote_without_a_confidence_still_counts_for_accuracy_kappa_and_coverage() -> None:
    row = hand_batch().against(GOLD)["x"]
    assert (row.n_answered, row.coverage, row.accuracy) == (4, 1.0, 0.5)
    assert row.kappa == pytest.approx(0.0)
    assert row.confusion["KEEP"] == {"KEEP": 1, "REJECT": 1}


def test_a_critic_that_never_stated_a_confidence_has_no_brier_or_ece() -> None:
    batch = batch_of({q: {"silent": (label, None), "y": (label, 0.7)} for q, label in GOLD.items()})
    row = gold_report(batch, GOLD)["silent"]
    assert (row.brier, row.ece, row.reliability) == (None, None, None)
    assert (row.n_stated, row.n_answered, row.accuracy) == (0, 4, 1.0)


def test_the_summary_shows_a_dash_and_says_whose_votes_stated_no_confidence() -> None:
    batch = batch_of({q: {"x": ANSWERS[q], "silent": (label, None)} for q, label in GOLD.items()})
    text = str(batch.against(GOLD))
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():  # the table's row, not the caption's mention of a name
        if line.strip():
            rows.setdefault(line.split()[0], line.split())
    assert rows["silent"][-2:] == ["-", "-"]
    assert rows["x"][-2:] == ["0.137", "0.300"]
    assert rows["consensus"][-2:] == ["n/a", "n/a"]
    flat = " ".join(text.split())
    assert (
        "Brier and ECE count only the votes that stated a confidence: x 3 of 4, silent 0 of 4"
        in (flat)
    )


def test_the_summary_has_no_note_when_every_vote_stated_a_confidence() -> None:
    batch = batch_of({q: {"y": (label, 0.7)} for q, label in GOLD.items()})
    text = str(batch.against(GOLD))
    assert "Brier" in text and "stated a confidence" not in text


def test_the_detailed_summary_draws_no_reliability_table_for_a_silent_critic() -> None:
    report = gold_metrics(
        [["KEEP", "KEEP"], ["KEEP", "REJECT"]],
        ["silent", "y"],
        ["KEEP", "KEEP"],
        confidences=[[None, 0.9], [None, 0.6]],
    )
    from cross_judge.report._summary import plain_text

    text = plain_text(report.summary(detailed=True))
    assert "y: reliability" in text and "silent: reliability" not in text


# -- calibrate_confidence and apply_calibration -----------------------------------------------


def test_calibrate_confidence_fits_on_the_stated_confidences_only() -> None:
    fits = calibrate_confidence(hand_batch(), GOLD, method="isotonic", critics=["x"])
    # 0.6 wrong, 0.8 and 0.9 right: two steps, 0.0 from 0.6 and 1.0 from 0.8. With q4 read
    # as a stated 0.0 (wrong) the first step would start at 0.0 and n would be 4.
    assert (fits["x"].breakpoints, fits["x"].values, fits["x"].n) == ((0.6, 0.8), (0.0, 1.0), 3)
    expected = fit_confidence_calibration([0.9, 0.6, 0.8], [True, False, True])
    assert calibrate_confidence(hand_batch(), GOLD, critics=["x"])["x"] == expected


def test_calibrate_confidence_names_the_critic_that_stated_no_confidence() -> None:
    batch = batch_of({q: {"x": ANSWERS[q], "silent": (label, None)} for q, label in GOLD.items()})
    with pytest.raises(ConfigError) as raised:
        calibrate_confidence(batch, GOLD)
    message = str(raised.value)
    assert message.startswith("critic 'silent': none of its 4 labelled verdicts stated a")
    assert "confidence" in message and "leave it uncalibrated" in message


def test_calibrate_confidence_counts_the_unstated_votes_when_too_few_stated_remain() -> None:
    batch = batch_of(
        {
            "q1": {"x": ("KEEP", 0.9)},
            "q2": {"x": ("KEEP", None)},
            "q3": {"x": ("REJECT", None)},
        }
    )
    gold = {q: GOLD[q] for q in ("q1", "q2", "q3")}
    with pytest.raises(ConfigError, match=r"got 1;.*\(2 more labelled verdicts stated no"):
        calibrate_confidence(batch, gold)


def test_calibrate_confidence_fits_only_the_critics_asked_for() -> None:
    batch = batch_of({q: {"x": ANSWERS[q], "silent": (label, None)} for q, label in GOLD.items()})
    assert list(calibrate_confidence(batch, GOLD, critics=["x"])) == ["x"]
    with pytest.raises(ConfigError, match=r"no critic 'z' in these results.*'x', 'silent'"):
        calibrate_confidence(batch, GOLD, critics=["z"])


def test_apply_calibration_leaves_a_vote_without_a_confidence_at_zero() -> None:
    fit = ConfidenceCalibration(
        method="isotonic", breakpoints=(0.0, 0.7), values=(0.4, 0.8), n=10, ece_before=0.2,
        ece_after=0.1,
    )  # fmt: skip
    calibrated = apply_calibration(hand_batch(), {"x": fit})
    by_item = {r.query_id: r for r in calibrated.verdicts}
    q4 = {v.critic_id: v for v in by_item["q4"].verdicts}["x"]
    assert (q4.confidence, q4.stated_confidence, q4.confidence_stated) == (0.0, None, False)
    q2 = {v.critic_id: v for v in by_item["q2"].verdicts}["x"]
    assert (q2.confidence, q2.stated_confidence) == (0.4, 0.6)
    assert by_item["q4"].avg_confidence == pytest.approx((0.0 + 0.7) / 2)


# -- live calls ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer([Persona("sim-any", labels=("KEEP", "REJECT"))], api_key=KEY) as srv:
        yield srv


def critic(server: VendorServer, model: str, **kwargs: Any) -> Critic:
    return Critic(
        name="x",
        model=model,
        vendor="custom",
        base_url=server.url,
        api_key=KEY,
        max_retries=0,
        prompt_template=TEMPLATE,
        **kwargs,
    )


@pytest.mark.anyio
async def test_a_live_answer_without_a_confidence_is_marked_unstated(
    server: VendorServer, model: str
) -> None:
    server.script(
        model,
        Reply.content('{"kind": "KEEP", "reasoning": "fine"}'),
        Reply.content('{"kind": "KEEP", "confidence": "high", "reasoning": "fine"}'),
        Reply.content('{"kind": "KEEP", "confidence": 0.0, "reasoning": "a guess"}'),
    )
    async with critic(server, model) as c:
        omitted, unusable, zero = [await c.judge("item") for _ in range(3)]
    assert omitted.is_valid and unusable.is_valid and zero.is_valid
    assert (omitted.confidence, omitted.confidence_stated) == (0.0, False)
    assert (unusable.confidence, unusable.confidence_stated) == (0.0, False)
    assert (zero.confidence, zero.confidence_stated) == (0.0, True)


@pytest.mark.anyio
async def test_a_calibrated_critic_marks_an_answer_without_a_confidence_unstated(
    server: VendorServer, model: str
) -> None:
    fit = ConfidenceCalibration(
        method="temperature", temperature=2.0, n=10, ece_before=0.2, ece_after=0.1
    )
    server.script(model, Reply.content('{"kind": "REJECT", "reasoning": "no"}'))
    async with critic(server, model, calibration=fit) as c:
        verdict = await c.judge("item")
    assert (verdict.kind, verdict.confidence, verdict.stated_confidence) == ("REJECT", 0.0, None)
    assert verdict.confidence_stated is False


@pytest.mark.anyio
async def test_failed_and_unparsable_answers_keep_the_default_flag(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.status(400), Reply.content("Keep it, I think."))
    async with critic(server, model) as c:
        failed, unparsed = await c.judge("item"), await c.judge("item")
    assert (failed.kind, unparsed.kind) == ("ERROR", "PARSE_FAIL")
    assert failed.confidence_stated is True and unparsed.confidence_stated is True


@pytest.mark.anyio
async def test_a_live_unstated_confidence_survives_the_results_file(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    server.script(
        model,
        Reply.content('{"kind": "KEEP", "reasoning": "fine"}'),
        Reply.content('{"kind": "KEEP", "confidence": 0.75, "reasoning": "fine"}'),
    )
    async with Ensemble([critic(server, model)]) as panel:
        judged = [await panel.judge(text, query_id=text) for text in ("a", "b")]
    path = tmp_path / "out.jsonl"
    BatchResult.from_results(judged).to_jsonl(path)
    loaded = BatchResult.from_jsonl(path)
    assert [(r.query_id, r.verdicts[0].confidence_stated) for r in loaded.verdicts] == [
        ("a", False),
        ("b", True),
    ]
    assert loaded.against({"a": "KEEP", "b": "KEEP"})["x"].n_stated == 1
