"""Specification of calibrating a Cascade of rubric panels (issue 28): per criterion
(a level per criterion id, against gold per criterion) or on the total (one level, against
the item's PASS/FAIL).

The stored results are built by hand, no calls: 60 items judged by a cheap tier of three
critics and a strong tier of one, on a rubric of two criteria ``x`` and ``y`` (weight 1
each, pass mark 0.5: an item passes when either is met). On items 0-39 the cheap tier is
unanimous and right on both; on items 40-59 it splits 2-1 on both criteria, its majority
right on ``x`` always and on ``y`` only on items 50-59. The strong critic is always right.
So ``x`` can be left to the cheap tier at any level, while ``y`` must escalate its splits
(agreement 2/3 < 0.67); on items 40-49 the truth is x FAIL, y PASS, so the wrong ``y``
flips the item's PASS to FAIL.
"""

from __future__ import annotations

import math
import warnings

import pytest

from cross_judge import Cascade, ConfigError, Critic, Ensemble, EnsembleVerdict, Verdict
from cross_judge.cascade_calibration import calibrate_cascade
from cross_judge.critic._prompts import parse_prompt
from cross_judge.rubric import CriterionVerdict

PROMPT = parse_prompt(
    """
id: xy
version: 1
system_prompt: Judge.
user_prompt_template: "<item>{query}</item> {criterion}"
criteria:
  - {id: x, requirement: X holds.}
  - {id: y, requirement: Y holds.}
"""
)
CHEAP, STRONG = ("t0a", "t0b", "t0c"), "s"
N = 60


def critic(name: str) -> Critic:
    return Critic(
        name=name, model=name, vendor="custom", base_url="http://v/v1", api_key="k", prompt=PROMPT
    )


def cascade() -> Cascade:
    return Cascade(tiers=[Ensemble([critic(n) for n in CHEAP]), Ensemble([critic(STRONG)])])


def truth(i: int) -> dict[str, str]:
    if 40 <= i < 50:
        return {"x": "FAIL", "y": "PASS"}
    return {"x": "PASS", "y": "FAIL" if i % 2 else "PASS"}


def flip(label: str) -> str:
    return "FAIL" if label == "PASS" else "PASS"


def answer(name: str, labels: dict[str, str]) -> Verdict:
    criteria = {
        cid: CriterionVerdict(kind=k, confidence=0.8, score=1.0 if k == "PASS" else 0.0)
        for cid, k in labels.items()
    }
    return Verdict(kind="PASS", confidence=0.8, critic_id=name, criteria=criteria)


def cheap_answers(i: int) -> list[dict[str, str]]:
    right = truth(i)
    if i < 40:
        return [right] * 3
    majority = {"x": right["x"], "y": flip(right["y"]) if i < 50 else right["y"]}
    minority = {cid: flip(label) for cid, label in majority.items()}
    return [majority, majority, minority]


def stored() -> list[EnsembleVerdict]:
    panel = cascade()
    cheap, strong = panel.tiers
    out = []
    for i in range(N):
        qid = f"i{i}"
        tier0 = cheap.aggregate_verdicts(
            [answer(n, a) for n, a in zip(CHEAP, cheap_answers(i), strict=True)], query_id=qid
        )
        tier1 = strong.aggregate_verdicts([answer(STRONG, truth(i))], query_id=qid)
        out.append(
            EnsembleVerdict(
                query_id=qid,
                verdicts=[*tier0.verdicts, *tier1.verdicts],
                consensus="PASS",
                voting="cascade",
                tiers=[tier0, tier1],
            )
        )
    return out


CRITERION_GOLD = {f"i{i}": truth(i) for i in range(N)}
ITEM_GOLD = {
    f"i{i}": "PASS" if "PASS" in (truth(i)["x"], truth(i)["y"]) else "FAIL" for i in range(N)
}


def replayed(escalation: object) -> list[EnsembleVerdict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = cascade().replay(stored(), escalation=escalation, on_calibration_items="keep")  # type: ignore[arg-type]
    return batch.verdicts


def test_per_criterion_chooses_a_level_for_each_criterion() -> None:
    fit = calibrate_cascade(stored(), CRITERION_GOLD, per="criterion", ordering_share=0)
    assert fit.per == "criterion"
    assert fit.criteria is not None
    assert {cid: f.threshold for cid, f in fit.criteria.items()} == {"x": 0.0, "y": 0.67}
    assert fit.escalation.agreement_below == {"x": (0.0,), "y": (0.67,)}
    assert fit.escalation.on_dispute is False
    assert fit.guaranteed


def test_per_criterion_tests_each_criterion_at_delta_over_the_criteria() -> None:
    fit = calibrate_cascade(stored(), CRITERION_GOLD, per="criterion", delta=0.1)
    assert fit.criteria is not None
    assert [f.delta for f in fit.criteria.values()] == [0.05, 0.05]
    assert "hold together" in fit.guarantee


def test_a_per_criterion_fit_replays_to_its_reported_agreement() -> None:
    fit = calibrate_cascade(stored(), CRITERION_GOLD, per="criterion", ordering_share=0)
    results = replayed(fit.escalation)
    pairs = [(r.query_id, cid, c) for r in results for cid, c in (r.criteria or {}).items()]
    right = sum(c.consensus == CRITERION_GOLD[qid][cid] for qid, cid, c in pairs)
    assert fit.agreement == pytest.approx(right / len(pairs))
    assert right == len(pairs)  # y's splits went on, x's stood
    assert {(qid, cid) for qid, cid, c in pairs if c.tier == 1} == {
        (f"i{i}", "y") for i in range(40, N)
    }


def test_per_criterion_is_the_default_for_gold_per_criterion() -> None:
    fit = calibrate_cascade(stored(), CRITERION_GOLD, ordering_share=0)
    assert fit.per == "criterion"


def test_on_the_total_one_level_is_chosen_for_the_item_s_pass_or_fail() -> None:
    fit = calibrate_cascade(stored(), ITEM_GOLD, per="total", ordering_share=0)
    assert fit.per == "total"
    assert fit.threshold == 0.67
    assert fit.escalation.agreement_below == (0.67,)
    assert fit.guaranteed
    # Level 0.66 lets the wrong y of items 40-49 stand: 10 wrong of 60, over 10%.
    failed = [level for level in fit.levels if not level.passed]
    assert [level.threshold for level in failed] == [0.66]
    assert failed[0].agreement == pytest.approx(50 / 60)


def test_a_total_fit_replays_to_its_reported_agreement() -> None:
    fit = calibrate_cascade(stored(), ITEM_GOLD, per="total", ordering_share=0)
    results = replayed(fit.escalation)
    right = sum(r.consensus == ITEM_GOLD[r.query_id] for r in results)
    assert fit.agreement == pytest.approx(right / len(results))
    assert fit.tiers[1].asked == pytest.approx(20 / 60)


def test_on_the_total_the_strictest_level_sends_every_criterion_on() -> None:
    fit = calibrate_cascade(stored(), ITEM_GOLD, per="total", ordering_share=0)
    strictest = fit.levels[0]
    assert strictest.threshold == math.inf
    assert strictest.agreement == 1.0  # the strong tier is always right


def test_per_criterion_refuses_results_without_a_rubric() -> None:
    plain = stored()[0].tiers
    assert plain is not None
    bare = [
        EnsembleVerdict(
            query_id="i0",
            verdicts=[],
            consensus="PASS",
            voting="cascade",
            tiers=[t.model_copy(update={"criteria": None, "rubric": None}) for t in plain],
        )
    ]
    with pytest.raises(ConfigError, match="per='total'"):
        calibrate_cascade(bare, {"i0": {"x": "PASS"}}, per="criterion")


def test_per_criterion_refuses_gold_that_leaves_a_criterion_unlabelled() -> None:
    gold = {qid: {"x": labels["x"]} for qid, labels in CRITERION_GOLD.items()}
    with pytest.raises(ConfigError, match=r"\['y'\] have no gold label"):
        calibrate_cascade(stored(), gold, per="criterion")


def test_an_unknown_per_is_refused() -> None:
    with pytest.raises(ConfigError, match="per must be"):
        calibrate_cascade(stored(), ITEM_GOLD, per="item")  # type: ignore[arg-type]
