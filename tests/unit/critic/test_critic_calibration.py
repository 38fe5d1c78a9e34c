"""Critic(calibration=...): live verdicts carry calibrated confidences, the stated one kept.

Every call goes to a simulated vendor on 127.0.0.1 whose persona states confidences of
0.9 to 1.0 while it is right 60% of the time.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import (
    BatchResult,
    ConfigError,
    Critic,
    Ensemble,
    EnsembleVerdict,
    ErrorKind,
    Verdict,
)
from cross_judge.critic._cache import ResponseCache
from cross_judge.stats._confidence_calibration import (
    ConfidenceCalibration,
    expected_calibration_error,
)
from cross_judge.stats._reliability import apply_calibration, calibrate_confidence
from cross_judge.testing import Persona, Reply, VendorServer

KEY = "sk-calibration-test-key-5a4b3c2d1e"
INFLATED = "sim-x"
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
TEMPLATE = (
    "Judge the item.\n<item>{query}</item>\n"
    "Answer in JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1) and reasoning."
)
_rng = random.Random(7)
GOLD = {f"item {i}": _rng.choice(LABELS) for i in range(600)}
"""The truth the server answers against, by item text (the items' ids are their texts)."""

TEMPER = ConfidenceCalibration(
    method="temperature", temperature=4.0, n=100, ece_before=0.3, ece_after=0.05
)
STEPS = ConfidenceCalibration(
    method="isotonic", breakpoints=(0.0, 0.95), values=(0.4, 0.7), n=100, ece_before=0.3,
    ece_after=0.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    persona = Persona(INFLATED, accuracy=0.6, confidence=(0.9, 1.0))
    with VendorServer([persona], gold=GOLD, api_key=KEY) as srv:
        yield srv


def critic(server: VendorServer, model: str = INFLATED, **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("max_retries", 0)
    return Critic(
        name=INFLATED,
        model=model,
        vendor="custom",
        base_url=server.url,
        prompt_template=TEMPLATE,
        **kwargs,
    )


def requests_for(server: VendorServer, model: str) -> int:
    return int(server.stats()["by_model"].get(model, 0))


async def judge_items(panel_critic: Critic, items: list[str]) -> BatchResult:
    async with Ensemble([panel_critic]) as panel:
        return await panel.judge_many([{"id": text, "query": text} for text in items])


def calibration_error(results: list[EnsembleVerdict]) -> float:
    """ECE of every valid verdict of ``results`` against :data:`GOLD`."""
    pairs = [(v.confidence, v.kind == GOLD[r.query_id]) for r in results for v in r.verdicts]
    return expected_calibration_error([c for c, _ in pairs], [ok for _, ok in pairs])


# -- live verdicts ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_calibrated_critic_maps_the_stated_confidence_and_keeps_it(
    server: VendorServer,
) -> None:
    async with critic(server) as plain, critic(server, calibration=TEMPER) as calibrated:
        stated = await plain.judge("item 1")
        verdict = await calibrated.judge("item 1")
    assert stated.stated_confidence is None and 0.9 <= stated.confidence <= 1.0
    assert verdict.kind == stated.kind
    assert verdict.stated_confidence == stated.confidence
    assert verdict.confidence == TEMPER.apply(stated.confidence) < stated.confidence


@pytest.mark.anyio
async def test_failed_and_unparsable_answers_are_not_calibrated(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.status(400), Reply.content("I would keep it, confidently."))
    async with critic(server, model, calibration=STEPS) as c:
        failed = await c.judge("item 2")
        unparsed = await c.judge("item 2")
    assert (failed.kind, failed.error_kind) == ("ERROR", ErrorKind.BAD_REQUEST)
    assert (unparsed.kind, unparsed.error_kind) == ("PARSE_FAIL", ErrorKind.PARSE)
    for verdict in (failed, unparsed):
        assert (verdict.confidence, verdict.stated_confidence) == (0.0, None)


@pytest.mark.anyio
async def test_an_answer_without_a_confidence_stays_at_zero_and_uncalibrated(
    server: VendorServer, model: str
) -> None:
    server.script(
        model,
        Reply.content('{"kind": "KEEP", "reasoning": "fine"}'),
        Reply.content('{"kind": "KEEP", "confidence": "high", "reasoning": "fine"}'),
    )
    async with critic(server, model, calibration=STEPS) as c:
        verdicts = [await c.judge("item 3"), await c.judge("item 3")]
    for verdict in verdicts:
        assert verdict.is_valid and verdict.kind == "KEEP"
        assert (verdict.confidence, verdict.stated_confidence) == (0.0, None)
    assert STEPS.apply(0.0) == 0.4  # what calibrating the missing value would have given


@pytest.mark.anyio
async def test_an_ensemble_averages_the_calibrated_confidences(server: VendorServer) -> None:
    calibrated = critic(server, calibration=TEMPER)
    plain = Critic(
        name="plain", model=INFLATED, vendor="custom", base_url=server.url, api_key=KEY,
        prompt_template=TEMPLATE, max_retries=0,
    )  # fmt: skip
    async with Ensemble([calibrated, plain]) as panel:
        result = await panel.judge("item 4")
    mine, theirs = result.verdicts
    assert mine.stated_confidence == theirs.confidence and theirs.stated_confidence is None
    assert mine.confidence == TEMPER.apply(theirs.confidence)
    assert result.avg_confidence == pytest.approx((mine.confidence + theirs.confidence) / 2)


# -- the response cache ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_cache_hit_is_calibrated_like_the_call_and_the_file_keeps_the_raw_answer(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    server.always(model, Reply.content('{"kind": "SPLIT", "confidence": 0.97}'))
    path = tmp_path / "responses.sqlite3"
    async with critic(server, model, cache=ResponseCache(path), calibration=TEMPER) as c:
        called = await c.judge("item 5")
        hit = await c.judge("item 5")
        c.calibration = STEPS  # a new calibration applies to the stored answer at once
        recalibrated = await c.judge("item 5")
    async with critic(server, model, cache=ResponseCache(path)) as raw:
        stored = await raw.judge("item 5")
    server.always(model, None)
    assert requests_for(server, model) == 1  # every later call, with or without a fit, hit
    assert (called.cached, hit.cached, recalibrated.cached, stored.cached) == (
        False,
        True,
        True,
        True,
    )
    assert (hit.confidence, hit.stated_confidence) == (called.confidence, called.stated_confidence)
    assert (hit.confidence, hit.stated_confidence) == (TEMPER.apply(0.97), 0.97)
    assert (recalibrated.confidence, recalibrated.stated_confidence) == (STEPS.apply(0.97), 0.97)
    assert (stored.confidence, stored.stated_confidence) == (0.97, None)


# -- configuration ----------------------------------------------------------------------------


def test_a_calibration_round_trips_through_a_dict() -> None:
    for fit in (TEMPER, STEPS):
        c = Critic(name="c", model="m", calibration=fit.to_dict())
        assert isinstance(c.calibration, ConfidenceCalibration) and c.calibration == fit
        dumped = json.loads(c.model_dump_json())["calibration"]
        assert dumped == fit.to_dict()
        assert Critic(name="c", model="m", calibration=dumped).calibration == fit
    assert Critic(name="c", model="m").model_dump()["calibration"] is None


@pytest.mark.parametrize("wrong", [0.5, "temperature", [0.9, 0.6], TEMPER.apply])
def test_a_calibration_of_the_wrong_type_is_refused_with_the_fix(wrong: object) -> None:
    with pytest.raises(ConfigError, match="calibrate_confidence") as raised:
        Critic(name="c", model="m", calibration=wrong)  # type: ignore[arg-type]
    assert "'c'" in str(raised.value)


def test_a_calibration_dict_that_breaks_the_invariants_is_refused_naming_the_critic() -> None:
    broken = {**STEPS.to_dict(), "breakpoints": [0.95, 0.0]}
    with pytest.raises(ConfigError, match=r"Critic 'c': calibration: .*strictly increasing"):
        Critic(name="c", model="m", calibration=broken)


@pytest.mark.anyio
async def test_a_wrong_calibration_assigned_later_raises_before_anything_is_sent(
    server: VendorServer, model: str
) -> None:
    async with critic(server, model) as c:
        c.calibration = 0.5  # type: ignore[assignment]
        with pytest.raises(ConfigError, match="calibration"):
            await c.judge("item 6")
    assert requests_for(server, model) == 0


# -- fitting on live verdicts ------------------------------------------------------------------


def test_apply_calibration_twice_replaces_the_first_mapping() -> None:
    verdict = Verdict(kind="KEEP", critic_id="x", confidence=0.96)
    result = Ensemble(critics=[]).aggregate_verdicts([verdict], query_id="q")
    batch = BatchResult(verdicts=[result], critics=["x"], voting="majority")
    once = apply_calibration(batch, {"x": TEMPER})
    twice = apply_calibration(once, {"x": TEMPER})
    again = apply_calibration(once, {"x": STEPS})
    assert twice == once
    assert once.verdicts[0].verdicts[0].stated_confidence == 0.96
    assert again.verdicts[0].verdicts[0].confidence == STEPS.apply(0.96)
    assert again.verdicts[0].avg_confidence == STEPS.apply(0.96)


@pytest.mark.slow  # a batch judged over HTTP, a fit, another batch, a second fit
@pytest.mark.anyio
async def test_refitting_on_a_calibrated_critics_verdicts_gives_the_same_fit(
    server: VendorServer,
) -> None:
    items = list(GOLD)[:200]
    gold = {text: GOLD[text] for text in items}
    plain = await judge_items(critic(server), items)
    calibrated = await judge_items(critic(server, calibration=TEMPER), items)
    assert [v.stated_confidence for r in calibrated.verdicts for v in r.verdicts] == [
        v.confidence for r in plain.verdicts for v in r.verdicts
    ]
    for method in ("temperature", "isotonic"):
        before = calibrate_confidence(plain, gold, method=method)
        assert calibrate_confidence(calibrated, gold, method=method) == before


@pytest.mark.slow  # a batch judged over HTTP, a fit, then another batch
@pytest.mark.anyio
async def test_a_critic_calibrated_on_half_the_gold_items_halves_the_error_on_the_rest(
    server: VendorServer,
) -> None:
    items = list(GOLD)
    fitting, held_out = items[:300], items[300:]
    stated = await judge_items(critic(server), items)
    fits = calibrate_confidence(stated, {text: GOLD[text] for text in fitting})
    live = await judge_items(critic(server, calibration=fits[INFLATED]), held_out)
    assert all(v.is_valid for r in live.verdicts for v in r.verdicts)
    before = calibration_error(stated.verdicts[300:])
    after = calibration_error(live.verdicts)
    assert before > 0.25  # the persona is over-confident: right 60%, says 0.9-1.0
    assert after <= before / 2


def test_a_changed_calibration_is_a_panel_change_on_resume(tmp_path: Path) -> None:
    from cross_judge.report._manifest import RunManifest
    from cross_judge.stats._reliability import ConfidenceCalibration

    def entry(temperature: float | None) -> dict[str, Any]:
        calibration = (
            None
            if temperature is None
            else ConfidenceCalibration(
                method="temperature",
                n=10,
                ece_before=0.3,
                ece_after=0.1,
                bins=10,
                temperature=temperature,
            )
        )
        critic = Critic(
            name="a",
            model="m",
            vendor="custom",
            base_url="http://127.0.0.1:9",
            calibration=calibration,
        )
        (tmp_path / "items.jsonl").write_text("")
        (tmp_path / "panel.yaml").write_text("")
        manifest = RunManifest.prepare(
            tmp_path / "out.jsonl",
            ensemble=Ensemble([critic]),
            argv=[],
            items=tmp_path / "items.jsonl",
            panel=tmp_path / "panel.yaml",
            options={},
        )
        return manifest._entry

    before = entry(2.0)
    changed = RunManifest(tmp_path / "out.jsonl", entry(3.0))
    assert any("calibration" in line for line in changed.panel_changes(before))
    same = RunManifest(tmp_path / "out.jsonl", entry(2.0))
    assert same.panel_changes(before) == []
