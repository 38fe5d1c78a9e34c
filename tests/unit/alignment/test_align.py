"""``align`` end to end against the simulated vendor over HTTP: the mistakes refused before
any call, what a plan writes (and refuses to), and a resumed measuring run."""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from cross_judge import AlignmentRefused, BatchResult, ConfigError, Critic, Ensemble
from cross_judge.alignment import AlignmentPlan
from cross_judge.prompts import load_prompt
from cross_judge.testing import Persona, VendorServer

pytestmark = pytest.mark.anyio

KEY = "sk-align-unit-0123456789abcdef"
ITEMS = {f"i{n}": f"topic{n % 5} submission number {n}" for n in range(60)}
GOLD = {i: random.Random(i).choice(["PASS", "FAIL"]) for i in ITEMS}
NAMES = ("a", "b", "c")


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    personas = [
        Persona(name, accuracy=0.7 + 0.05 * k, labels=("PASS", "FAIL"), seed=k)
        for k, name in enumerate(NAMES)
    ]
    with VendorServer(personas, api_key=KEY, gold={ITEMS[i]: g for i, g in GOLD.items()}) as s:
        yield s


def panel_of(server: VendorServer, prompt: str = "pass-fail@3") -> Ensemble:
    return Ensemble(
        [
            Critic(
                name=n, model=n, vendor="custom", base_url=server.url, api_key=KEY, prompt=prompt
            )
            for n in NAMES
        ]
    )


@pytest.fixture
async def judged(server: VendorServer) -> AsyncIterator[tuple[Ensemble, BatchResult]]:
    panel = panel_of(server)
    batch = await panel.judge_many([{"id": i, "query": q} for i, q in ITEMS.items()])
    yield panel, batch
    await panel.aclose()


async def aligned(panel: Ensemble, batch: BatchResult, **options: object) -> AlignmentPlan:
    plan: AlignmentPlan = await batch.align(GOLD, panel, k=3, seed=1, resamples=200, **options)
    return plan


async def test_a_prompt_without_a_place_for_examples_says_how_to_add_one(
    server: VendorServer,
) -> None:
    panel = panel_of(server, "pass-fail@2")
    batch = await panel.judge_many([{"id": i, "query": q} for i, q in list(ITEMS.items())[:5]])
    with pytest.raises(
        ConfigError,
        match=r"uses prompt pass-fail@2, whose user_prompt_template has no \{examples\}",
    ):
        await batch.align(GOLD, panel)


async def test_a_critic_with_an_inline_template_is_refused(server: VendorServer) -> None:
    panel = Ensemble(
        [Critic(name=n, model=n, vendor="custom", base_url=server.url, api_key=KEY) for n in NAMES]
    )
    batch = await panel.judge_many(["one"])
    with pytest.raises(ConfigError, match="has no prompt file \\(an inline template\\)"):
        await batch.align({"one": "PASS"}, panel)


async def test_gold_labels_off_the_prompts_labels_are_refused(
    judged: tuple[Ensemble, BatchResult],
) -> None:
    panel, batch = judged
    with pytest.raises(ConfigError, match=r"gold labels \['MAYBE'\] are not among the labels"):
        await batch.align({**GOLD, "i0": "MAYBE"}, panel)


async def test_too_few_labels_for_a_held_out_split_are_refused_before_any_call(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    panel, batch = judged
    before = server.stats()["requests"]
    with pytest.raises(ConfigError, match="label at least 34 items"):
        await batch.align(dict(list(GOLD.items())[:20]), panel)
    assert server.stats()["requests"] == before


async def test_a_batch_judged_with_another_prompt_is_refused(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    _, batch = judged
    with pytest.raises(ConfigError, match="judged the batch with another prompt"):
        await batch.align(GOLD, panel_of(server, "pass-fail@1"))


async def test_results_without_item_text_need_the_items(server: VendorServer) -> None:
    panel = panel_of(server)
    batch = await panel.judge_many(
        [{"id": i, "query": q} for i, q in ITEMS.items()], item_text=False
    )
    with pytest.raises(ConfigError, match=r"stored no item text .* pass the items themselves"):
        await batch.align(GOLD, panel)
    plan = await aligned(panel, batch, items=ITEMS)
    assert plan.figures.n_items == len(plan.split.held_out)


async def test_each_critic_gets_its_own_next_version_with_its_examples(
    judged: tuple[Ensemble, BatchResult],
) -> None:
    panel, batch = judged
    plan = await aligned(panel, batch)
    assert {s.ref for s in plan.prompts.values()} == {f"pass-fail-{n}@4" for n in NAMES}
    for name, spec in plan.prompts.items():
        assert [e.id for e in spec.examples] == list(plan.examples[name].ids)
        assert all(e.label == GOLD[e.id] for e in spec.examples)
        assert spec.provenance is not None and spec.provenance["derived_from"] == "pass-fail@3"
    assert plan.panel().critics[0].prompt_sha256 == plan.prompts["a"].sha256


async def test_no_example_is_a_held_out_item(judged: tuple[Ensemble, BatchResult]) -> None:
    panel, batch = judged
    plan = await aligned(panel, batch)
    shown = {e.id for spec in plan.prompts.values() for e in spec.examples}
    assert shown and not shown & set(plan.split.held_out)


async def test_a_plan_without_a_clear_gain_writes_nothing(
    judged: tuple[Ensemble, BatchResult], tmp_path: Path
) -> None:
    panel, batch = judged
    plan = await aligned(panel, batch)  # the simulator answers by item: nothing changes
    assert plan.refusals and "does not exclude 0" in plan.refusals[0]
    with pytest.raises(AlignmentRefused, match="not written: the jury's consensus kappa"):
        plan.write(tmp_path)
    assert not any(os.scandir(tmp_path))


async def test_forced_the_plan_writes_versions_and_a_panel_that_uses_them(
    judged: tuple[Ensemble, BatchResult], tmp_path: Path
) -> None:
    panel, batch = judged
    source = tmp_path / "panel.yaml"
    source.write_text(
        yaml.safe_dump(
            {
                "critics": [
                    {"name": n, "model": n, "vendor": "simulated", "prompt": "pass-fail@3"}
                    for n in NAMES
                ]
            }
        ),
        encoding="utf-8",
    )
    plan = await aligned(panel, batch, panel_file=source)
    written = plan.write(tmp_path / "out", force=True)
    assert sorted(p.name for p in written) == sorted(
        [f"pass-fail-{n}@4.yaml" for n in NAMES] + ["alignment.json", "panel.yaml"]
    )
    for name in NAMES:
        again = load_prompt(tmp_path / "out" / f"pass-fail-{name}@4.yaml")
        assert again.sha256 == plan.prompts[name].sha256
    rewritten = yaml.safe_load((tmp_path / "out" / "panel.yaml").read_text(encoding="utf-8"))
    assert [c["prompt"] for c in rewritten["critics"]] == [f"pass-fail-{n}@4.yaml" for n in NAMES]


async def test_the_same_seed_and_answers_write_the_same_bytes(
    judged: tuple[Ensemble, BatchResult], tmp_path: Path
) -> None:
    panel, batch = judged
    one = (await aligned(panel, batch)).write(tmp_path / "one", force=True)
    two = (await aligned(panel, batch)).write(tmp_path / "two", force=True)
    assert [p.read_bytes() for p in one] == [p.read_bytes() for p in two]


async def test_nothing_is_overwritten(judged: tuple[Ensemble, BatchResult], tmp_path: Path) -> None:
    panel, batch = judged
    plan = await aligned(panel, batch)
    plan.write(tmp_path, force=True)
    with pytest.raises(ConfigError, match="exist already; an alignment never overwrites a file"):
        plan.write(tmp_path, force=True)


async def test_a_resumed_alignment_asks_only_for_the_held_out_items_not_done(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    panel, batch = judged
    seen = []
    first = await aligned(panel, batch, on_result=seen.append)
    assert len(seen) == len(first.split.held_out)
    before = server.stats()["requests"]
    again = await aligned(panel, batch, done=seen[:5])
    assert server.stats()["requests"] - before == (len(seen) - 5) * len(NAMES)
    assert again.figures == first.figures


async def test_a_results_made_by_other_prompts_are_judged_again_on_resume(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    panel, batch = judged
    before = server.stats()["requests"]
    plan = await aligned(panel, batch, done=batch.verdicts)  # judged by the old prompts
    assert server.stats()["requests"] - before == len(plan.split.held_out) * len(NAMES)


async def test_the_table_lists_the_jury_and_each_critic(
    judged: tuple[Ensemble, BatchResult],
) -> None:
    panel, batch = judged
    text = str(await aligned(panel, batch))
    assert "jury: consensus kappa" in text and "a: accuracy" in text
    assert "refused: the jury's consensus kappa" in text


async def test_the_checks_before_any_call_need_no_results(server: VendorServer) -> None:
    from cross_judge.alignment import check_alignment

    check_alignment(panel_of(server), GOLD, list(ITEMS))
    with pytest.raises(ConfigError, match="whose user_prompt_template has no \\{examples\\}"):
        check_alignment(panel_of(server, "pass-fail@2"), GOLD, list(ITEMS))
    with pytest.raises(ConfigError, match="label at least 34 items"):
        check_alignment(panel_of(server), GOLD, list(ITEMS)[:20])


async def test_instructions_need_an_editor(judged: tuple[Ensemble, BatchResult]) -> None:
    panel, batch = judged
    with pytest.raises(ConfigError, match="method='instructions' needs editor=Critic"):
        await batch.align(GOLD, panel, method="instructions")


async def test_an_unknown_method_is_refused(judged: tuple[Ensemble, BatchResult]) -> None:
    panel, batch = judged
    with pytest.raises(ConfigError, match="method must be 'examples', 'instructions' or 'both'"):
        await batch.align(GOLD, panel, method="rewrite")


def editor_of(server: VendorServer) -> Critic:
    return Critic(name="ed", model="c", vendor="custom", base_url=server.url, api_key=KEY)


async def test_instructions_are_added_to_each_critics_system_prompt(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    panel, batch = judged
    plan = await aligned(panel, batch, method="instructions", editor=editor_of(server))
    assert set(plan.instructions) == set(NAMES)
    for name, spec in plan.prompts.items():
        assert spec.system_prompt.endswith(
            f"Guidance from people's labels:\n- {plan.instructions[name]}\n"
        )
        assert spec.examples == ()  # instructions only
        assert spec.provenance is not None
        assert spec.provenance["instruction"] == plan.instructions[name]
        assert spec.provenance["cases"]
        assert f"+- {plan.instructions[name]}" in plan.diffs[name]


async def test_instructions_need_no_place_for_examples(server: VendorServer) -> None:
    panel = panel_of(server, "pass-fail@2")
    batch = await panel.judge_many([{"id": i, "query": q} for i, q in ITEMS.items()])
    plan = await aligned(panel, batch, method="instructions", editor=editor_of(server))
    assert {s.ref for s in plan.prompts.values()} == {f"pass-fail-{n}@3" for n in NAMES}
    await panel.aclose()


async def test_both_adds_examples_and_instructions(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    panel, batch = judged
    plan = await aligned(panel, batch, method="both", editor=editor_of(server))
    spec = plan.prompts["a"]
    assert len(spec.examples) == 3 and "Guidance from people's labels:" in spec.system_prompt


async def test_drafts_handed_back_ask_the_editor_nothing(
    judged: tuple[Ensemble, BatchResult], server: VendorServer
) -> None:
    panel, batch = judged
    kept: list[dict[str, str]] = []
    first = await aligned(
        panel, batch, method="instructions", editor=editor_of(server), on_drafts=kept.append
    )
    assert kept == [first.instructions]
    before = server.stats()["by_model"].get("c", 0)
    again = await aligned(
        panel, batch, method="instructions", editor=editor_of(server), drafts=kept[0]
    )
    assert again.instructions == first.instructions
    calls_of_c = server.stats()["by_model"].get("c", 0) - before
    assert calls_of_c == len(again.split.held_out)  # its own judging only: no edit request


async def test_a_measuring_run_over_the_budget_is_refused_before_any_call() -> None:
    from cross_judge import register_price

    models = [f"align-priced-{n}" for n in NAMES]  # priced here only, for this test
    for model in models:
        register_price(model, vendor="custom", input=1.0, output=4.0)
    personas = [Persona(m, labels=("PASS", "FAIL"), seed=k) for k, m in enumerate(models)]
    with VendorServer(personas, api_key=KEY, gold={ITEMS[i]: g for i, g in GOLD.items()}) as s:
        critics = [
            Critic(name=n, model=m, vendor="custom", base_url=s.url, api_key=KEY,
                   prompt="pass-fail@3")
            for n, m in zip(NAMES, models, strict=True)
        ]  # fmt: skip
        panel = Ensemble(critics)
        batch = await panel.judge_many([{"id": i, "query": q} for i, q in ITEMS.items()])
        before = s.stats()["requests"]
        with pytest.raises(ConfigError, match=r"about \$.*over budget_usd=\$0\.0001; raise"):
            await batch.align(GOLD, panel, budget_usd=0.0001)
        assert s.stats()["requests"] == before
        await panel.aclose()
