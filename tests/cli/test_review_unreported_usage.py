"""``cross-judge review --budget-usd`` against a gateway that reports no usage: the calls are
charged their worst case, the budget holds, and the end-of-run summary says how many calls
were priced that way (before: every call made, and "$0.0000 of $X")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic, pricing
from cross_judge.pricing import price_for, register_price, worst_case_cost
from cross_judge.testing import Persona, Reply, VendorServer

from .conftest import run, write_items

pytestmark = pytest.mark.integration

MODEL = "usage-less"
ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'


@pytest.fixture
def gateway() -> Iterator[VendorServer]:
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER},
                "finish_reason": "stop",
            }
        ],
    }  # no "usage", as many gateways answer
    with VendorServer([Persona(MODEL)]) as srv:
        srv.always(MODEL, Reply.raw(json.dumps(body).encode()))
        yield srv


@pytest.fixture(autouse=True)
def _forget_prices() -> Iterator[None]:
    yield
    pricing._clear_registered()


def item(i: int) -> str:
    return f"Candidate category number {i:04d}"  # the same length, so the same worst case


def test_review_charges_calls_without_usage_their_worst_case_and_says_so(
    tmp_path: Path, gateway: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        f"vendors:\n  custom:\n    models:\n      {MODEL}: {{input: 0.5, output: 20}}\n"
    )
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        f"critics:\n  - name: g\n    model: {MODEL}\n    vendor: custom\n"
        f"    base_url: {gateway.url}\n    prompt: taxonomy-review@1\n    max_tokens: 24\n"
        "    max_retries: 0\n",
        encoding="utf-8",
    )
    register_price(MODEL, vendor="custom", input=0.5, output=20.0)
    price = price_for("custom", MODEL)
    assert price is not None
    probe = Critic(
        name="g",
        model=MODEL,
        vendor="custom",
        base_url=gateway.url,
        prompt="taxonomy-review@1",
        max_tokens=24,
    )
    worst = worst_case_cost(price, probe.build_request(item(0)))
    limit = round(10.5 * worst, 6)
    items = write_items(tmp_path, [{"id": f"i{n}", "query": item(n)} for n in range(40)])
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(
        capsys,
        "review",
        items,
        "--panel",
        panel,
        "--out",
        out,
        "--no-progress",
        "--prices",
        prices,
        "--budget-usd",
        f"{limit}",
        "--concurrency",
        "16",
    )
    assert code == 1, err  # the skipped items are worth judging again: exit 1
    assert gateway.stats()["requests"] == 10  # before: 40, every call "free"
    assert "10 calls priced at worst case: the vendor reported no usable usage" in stdout
    assert "30 calls not made (over budget)" in stdout
    assert "10 calls charged at worst case" in stdout
    spent = re.search(r"in this run = \$([0-9.]+) of", stdout)
    assert spent is not None and limit - worst < float(spent.group(1)) <= limit
    assert re.search(r"calls priced at worst case \(usage not reported\) +10 *\n", stdout)
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text())
    assert manifest["runs"][-1]["totals"]["calls_priced_at_worst_case"] == 10
