"""Structured answers and confidence sources, against the real vendor named by
``CROSS_JUDGE_LIVE_*`` (issue 27).

Twenty short code reviews with the packaged ``pass-fail@2`` prompt, judged one after the
other (a local server answers one request at a time) by a critic with
``structured="auto"`` and the vendor's preset (``CROSS_JUDGE_LIVE_VENDOR``): the strongest
answer shape the endpoint takes, learned from its refusals. With a schema the endpoint
enforces, at least 19 of the 20 answers must carry a label of the prompt's vocabulary,
even from a small model that cannot write the JSON asked for on its own. On an
OpenAI-protocol endpoint the critic also has ``confidence="auto"``: every answer says
where its confidence came from (token probabilities where the endpoint serves them). The
twenty calls are made once per run and shared by the tests of this module; they run under
asyncio only (the event loop is not what they check).

A check that does not apply is skipped with the reason: the 19-of-20 check when the
endpoint took no schema (the critic stepped down to JSON mode or plain text), the
confidence check on the Anthropic protocol (it serves no token probabilities).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from cross_judge import Verdict
from cross_judge.critic._stepdown import steps_taken
from cross_judge.vendors import get_vendor

from .conftest import LiveTarget, calls_in_sequence, skip_module_unless_live

skip_module_unless_live()

pytestmark = pytest.mark.anyio

PROMPT = "pass-fail@2"
LABELS = ("PASS", "FAIL")
ITEMS = [
    "Task: return the sum of two ints.\ndef add(a, b):\n    return a + b",
    "Task: return the sum of two ints.\ndef add(a, b):\n    return a - b",
    "Task: return the larger of a and b.\ndef biggest(a, b):\n    return max(a, b)",
    "Task: return the larger of a and b.\ndef biggest(a, b):\n    return min(a, b)",
    "Task: reverse a string.\ndef rev(s):\n    return s[::-1]",
    "Task: reverse a string.\ndef rev(s):\n    return s",
    "Task: is n even?\ndef even(n):\n    return n % 2 == 0",
    "Task: is n even?\ndef even(n):\n    return n % 2 == 1",
    "Task: length of a list.\ndef size(xs):\n    return len(xs)",
    "Task: length of a list.\ndef size(xs):\n    return len(xs) + 1",
    "Task: square a number.\ndef square(x):\n    return x * x",
    "Task: square a number.\ndef square(x):\n    return x * 2",
    "Task: first element of a non-empty list.\ndef head(xs):\n    return xs[0]",
    "Task: first element of a non-empty list.\ndef head(xs):\n    return xs[-1]",
    "Task: absolute value.\ndef absolute(x):\n    return x if x >= 0 else -x",
    "Task: absolute value.\ndef absolute(x):\n    return -x",
    "Task: upper-case a string.\ndef shout(s):\n    return s.upper()",
    "Task: upper-case a string.\ndef shout(s):\n    return s.lower()",
    "Task: sum of a list.\ndef total(xs):\n    return sum(xs)",
    "Task: sum of a list.\ndef total(xs):\n    return sum(xs[1:])",
]
ENFORCED = ("schema", "tool")

_verdicts: list[Verdict] = []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(live: LiveTarget) -> dict[str, Any]:
    options: dict[str, Any] = {"prompt": PROMPT, "structured": "auto", "temperature": 0.0}
    if live.protocol == "openai":
        options["confidence"] = "auto"
    return options


async def twenty_verdicts(live: LiveTarget) -> list[Verdict]:
    """The twenty answers, judged on first use and kept for the other tests."""
    if not _verdicts:
        async with live.critic("live-structured", **settings(live)) as critic:
            for item in ITEMS:
                _verdicts.append(await critic.judge(item))
    return _verdicts


def describe(verdicts: list[Verdict]) -> str:
    kinds = Counter(v.kind for v in verdicts)
    forms = Counter(str(v.structured) for v in verdicts)
    failed = [v.error or v.raw_response for v in verdicts if v.kind not in LABELS][:3]
    return f"labels {dict(kinds)}, forms {dict(forms)}, first failures {failed}"


@calls_in_sequence(len(ITEMS))
async def test_with_an_enforced_schema_nineteen_of_twenty_answers_carry_a_label(
    live: LiveTarget,
) -> None:
    verdicts = await twenty_verdicts(live)
    assert not [v for v in verdicts if v.kind == "ERROR"], describe(verdicts)
    if not any(v.structured in ENFORCED for v in verdicts):
        forms = sorted({str(v.structured) for v in verdicts})
        pytest.skip(
            f"the endpoint took no schema (structured='auto' sent {forms}; steps: "
            f"{[(s.asked, s.now, s.reason[:80]) for s in steps_taken()]}): the 19-of-20 "
            "check applies to an enforced schema"
        )
    labelled = [v for v in verdicts if v.kind in LABELS]
    assert len(labelled) >= 19, describe(verdicts)


@calls_in_sequence(len(ITEMS))
async def test_confidence_auto_says_where_each_confidence_came_from(live: LiveTarget) -> None:
    if live.protocol != "openai":
        pytest.skip("the Anthropic protocol serves no token probabilities")
    verdicts = await twenty_verdicts(live)
    labelled = [v for v in verdicts if v.kind in LABELS]
    if not labelled:
        pytest.skip(f"no answer carried a label: {describe(verdicts)}")
    for verdict in labelled:
        assert verdict.confidence_source in ("logprob", "stated", "none"), verdict
        if verdict.confidence_source == "none":
            assert not verdict.confidence_stated, verdict
        else:
            assert verdict.confidence is not None and 0.0 <= verdict.confidence <= 1.0
    sources = Counter(v.confidence_source for v in labelled)
    if get_vendor(live.vendor).logprobs:  # the preset says the endpoint serves them
        assert sources["logprob"] >= len(labelled) - 1, (dict(sources), describe(verdicts))
