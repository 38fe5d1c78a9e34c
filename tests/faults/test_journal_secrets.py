"""The answers journal beside a results file holds no API key, not even a piece of one, when
the vendor quotes the key in its answers (the rule of ``tests/faults/test_secrets.py``)."""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble
from cross_judge.batch import ResultsFile
from cross_judge.critic._journal import journal_path, journaling
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport._redaction import MARKER

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SECRET = "".join(secrets.choice(string.ascii_letters) for _ in range(24)) + "9aZ"
KEY = f"sk-JOURNALCANARY-{SECRET}"
WINDOW = 8  # no run of this many characters of the secret may appear


@pytest.fixture
def vendor() -> Iterator[VendorServer]:
    with VendorServer(api_key=KEY, default_persona=Persona("default")) as srv:
        yield srv


def answer(reasoning: str) -> Reply:
    return Reply.content(json.dumps({"kind": "KEEP", "confidence": 0.9, "reasoning": reasoning}))


async def test_the_journal_holds_no_piece_of_a_key_the_vendor_quotes_in_its_answers(
    vendor: VendorServer, tmp_path: Path
) -> None:
    echoes = [KEY, SECRET, SECRET[5:21]]  # whole, without its prefix, a piece of it
    for n, echoed in enumerate(echoes):
        vendor.script(f"quoting-{n}", answer(f"Checked with {echoed}: fine"))
    critics = [
        Critic(
            name=f"c{n}", model=f"quoting-{n}", vendor="custom", base_url=vendor.url, api_key=KEY
        )
        for n in range(len(echoes))
    ]
    out = tmp_path / "out.jsonl"
    with ResultsFile.open(out, journal=True) as results:
        async with Ensemble(critics) as panel:
            with journaling(results.journal):
                batch = await panel.judge_many(["Is a whale a fish?"])
    assert all(v.is_valid for v in batch.verdicts[0].verdicts)

    journal = journal_path(out).read_text()
    assert journal.count(MARKER) == len(echoes)  # each answer kept, the key redacted
    pieces = {SECRET[i : i + WINDOW] for i in range(len(SECRET) - WINDOW + 1)}
    assert not [piece for piece in pieces if piece in journal]
