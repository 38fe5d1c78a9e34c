"""A rubric panel through the batch machinery, against the simulated vendor over a real
socket: ``judge_many`` with the response cache, a budget and the vendors' batch APIs, and
``cross-judge review`` with a panel file, resume and the run manifest. Each per-criterion
call is its own request, so each of these sees one request per criterion."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from cross_judge import BatchOptions, Critic, Ensemble, ErrorKind, ResponseCache, register_price
from cross_judge.cli import main as cli_main
from cross_judge.critic._prompts import parse_prompt
from cross_judge.report._manifest import manifest_path
from cross_judge.testing import Persona, VendorServer, rubric_items

pytestmark = [pytest.mark.integration]

RUBRIC = """\
id: batch-rubric
version: "1"
system_prompt: You grade answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Requirement: {criterion}
  Reply with JSON: {{"kind": "<PASS or FAIL>", "confidence": "<0-1>", "reasoning": "<why>"}}
criteria:
  - {id: correct, requirement: The answer is factually correct., weight: 2, gate: true}
  - {id: cites, requirement: The answer cites a source.}
  - {id: rude, requirement: The answer is rude to the reader., weight: -1}
"""
SPEC = parse_prompt(RUBRIC)
CRITERIA = {"correct": "The answer is factually correct.", "cites": "The answer cites a source.",
            "rude": "The answer is rude to the reader."}  # fmt: skip
MODELS = ("rb-a", "rb-b", "rb-c")
KEY = "sk-rubric-batches-secret-77aa"


@pytest.fixture
def server() -> Iterator[VendorServer]:
    truth = rubric_items(12, list(CRITERIA), seed=3)
    personas = [Persona(m, accuracy=0.8, labels=("PASS", "FAIL"), seed=i) for i, m in
                enumerate(MODELS)]  # fmt: skip
    with VendorServer(
        personas, criteria=CRITERIA, criteria_gold=truth, api_key=KEY, batch_polls=1
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def prices() -> None:
    for model in MODELS:
        register_price(model, vendor="custom", input=2.0, output=8.0, batch=0.5)


def panel(server: VendorServer, **kwargs: object) -> Ensemble:
    critics = [
        Critic(name=m, model=m, vendor="custom", base_url=server.url, api_key=KEY, prompt=SPEC)
        for m in MODELS
    ]
    return Ensemble(critics, **kwargs)  # type: ignore[arg-type]


def texts() -> list[str]:
    return sorted(rubric_items(12, list(CRITERIA), seed=3))


def test_judge_many_gives_every_item_a_total_and_a_result_per_criterion(
    server: VendorServer,
) -> None:
    async def main() -> None:
        async with panel(server) as jury:
            batch = await jury.judge_many(texts(), concurrency=8)
        for result in batch.verdicts:
            assert result.criteria is not None
            assert list(result.criteria) == ["correct", "cites", "rude"]
            assert result.consensus in ("PASS", "FAIL")
            assert result.score is not None and 0.0 <= result.score <= 1.0
        assert server.stats()["requests"] == len(texts()) * len(MODELS) * len(CRITERIA)

    anyio.run(main)


def test_a_cached_rubric_batch_is_judged_again_without_a_request(
    server: VendorServer, tmp_path: Path
) -> None:
    async def main() -> None:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        async with panel(server, cache=cache) as jury:
            first = await jury.judge_many(texts(), concurrency=8)
            sent = server.stats()["requests"]
            again = await jury.judge_many(texts(), concurrency=8)
        assert server.stats()["requests"] == sent
        assert [r.score for r in again.verdicts] == [r.score for r in first.verdicts]
        assert all(v.cached for r in again.verdicts for v in r.verdicts)

    anyio.run(main)


def test_a_budget_skips_criteria_it_cannot_pay_for_and_never_raises(
    server: VendorServer,
) -> None:
    async def main() -> None:
        async with panel(server) as jury:
            batch = await jury.judge_many(texts(), concurrency=4, budget_usd=0.002)
        skipped = [
            answer
            for r in batch.verdicts
            for v in r.verdicts
            for answer in (v.criteria or {}).values()
            if answer.error_kind is ErrorKind.BUDGET
        ]
        assert skipped, "a budget this small cannot pay for every per-criterion call"
        spent = sum(r.cost_usd or 0.0 for r in batch.verdicts)
        assert spent <= 0.002 + 1e-12

    anyio.run(main)


def test_provider_batch_mode_judges_every_criterion_at_the_batch_rate(
    server: VendorServer,
) -> None:
    async def main() -> list[float | None]:
        options = BatchOptions(vendors={"custom"}, poll_s=0.01, max_poll_s=0.05)
        async with panel(server) as jury:
            batch = await jury.judge_many(texts()[:4], mode="batch", batch=options)
        for result in batch.verdicts:
            assert result.criteria is not None
            assert all(c.n_valid == len(MODELS) for c in result.criteria.values())
        return [r.score for r in batch.verdicts]

    scores = anyio.run(main)
    assert all(s is not None for s in scores)
    assert server.stats()["requests"] == 0  # every call went through the batch API


def write_panel_file(folder: Path, server: VendorServer) -> Path:
    (folder / "rubric.yaml").write_text(RUBRIC, encoding="utf-8")
    critics = "".join(
        f"""
          - name: {m}
            model: {m}
            vendor: custom
            base_url: {server.url}
            api_key_env: RUBRIC_TEST_KEY
            prompt: rubric.yaml
            max_retries: 0"""
        for m in MODELS
    )
    text = textwrap.dedent(
        f"""\
        voting: majority
        early_stop: true
        pass_threshold: 0.4
        critics:{critics}
        """
    )
    path = folder / "panel.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_review_resumes_a_rubric_run_and_records_the_rubric_in_the_manifest(
    server: VendorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRIC_TEST_KEY", KEY)
    rows = [{"id": f"r{n}", "query": text} for n, text in enumerate(texts()[:6])]
    first = tmp_path / "first.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]), encoding="utf-8")
    every = tmp_path / "items.jsonl"
    every.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    panel_file, out = write_panel_file(tmp_path, server), tmp_path / "out.jsonl"
    assert cli_main(["review", str(first), "--panel", str(panel_file), "--out", str(out)]) == 0
    sent = server.stats()["requests"]
    assert (
        cli_main(["review", str(every), "--panel", str(panel_file), "--out", str(out), "--resume"])
        == 0
    )
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["query_id"] for line in lines) == [f"r{n}" for n in range(6)]
    assert all(set(line["criteria"]) == set(CRITERIA) for line in lines)
    assert all(line["rubric"]["threshold"] == 0.4 for line in lines)
    assert server.stats()["requests"] - sent <= 3 * len(MODELS) * len(CRITERIA)
    manifest = json.loads(manifest_path(out).read_text(encoding="utf-8"))
    prompt = manifest["runs"][-1]["prompts"]["rb-a"]
    assert [c["id"] for c in prompt["rubric"]["criteria"]] == list(CRITERIA)
    assert len(prompt["rubric_sha256"]) == 64
    assert KEY not in out.read_text(encoding="utf-8")
    assert KEY not in manifest_path(out).read_text(encoding="utf-8")
