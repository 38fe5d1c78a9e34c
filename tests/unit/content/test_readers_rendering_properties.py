"""Properties of conversations read from OpenAI messages: whatever their text, rendering
them never raises, and the trajectory numbers every tool call, in order, once."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings, strategies as st

from cross_judge.content import (
    RenderLimits,
    ToolCall,
    read_openai_chat,
    render_conversation,
    render_trajectory,
)

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
TEXT = st.text(max_size=60)
RESULTS = st.one_of(
    TEXT,
    st.builds(lambda e: json.dumps({"error": e}), st.text(min_size=1, max_size=20)),
    st.builds(json.dumps, st.dictionaries(NAMES, st.integers() | TEXT, max_size=3)),
)
SMALL = RenderLimits(max_chars=200, max_value_chars=20, keep_first=1, keep_last=1)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int]:
    """OpenAI messages of a run, and how many tool calls it makes."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(TEXT)}]
    calls = 0
    for exchange in range(draw(st.integers(0, 4))):
        names = draw(st.lists(NAMES, max_size=3))
        ids = [f"call_{exchange}_{i}" for i in range(len(names))]
        arguments = [draw(st.dictionaries(NAMES, TEXT | st.integers(), max_size=3)) for _ in names]
        messages.append(
            {
                "role": "assistant",
                "content": draw(st.none() | TEXT),
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a)},
                    }
                    for i, n, a in zip(ids, names, arguments, strict=True)
                ],
            }
        )
        for call_id in draw(st.permutations(ids)):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": draw(RESULTS)})
        calls += len(names)
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(TEXT)})
    if draw(st.booleans()):
        messages.append({"role": "assistant", "content": draw(TEXT)})
    return messages, calls


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_the_trajectory_numbers_every_tool_call_once_in_order(
    run: tuple[list[dict[str, Any]], int],
) -> None:
    messages, calls = run
    steps = read_openai_chat(messages).trajectory
    assert sum(isinstance(step, ToolCall) for step in steps) == calls
    text = render_trajectory(steps, RenderLimits(max_chars=10**7, max_value_chars=10**6)).text
    numbers = [int(n) for n in re.findall(r"^\[step (\d+)\]", text, flags=re.MULTILINE)]
    assert numbers == list(range(1, len(steps) + 1))
    for number, step in enumerate(steps, start=1):
        if isinstance(step, ToolCall):
            assert f"[step {number}] call {step.name}(" in text


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_rendering_within_tight_limits_never_raises_and_stays_within_the_cap(
    run: tuple[list[dict[str, Any]], int],
) -> None:
    transcript = read_openai_chat(run[0])
    for rendered in (
        render_trajectory(transcript.trajectory, SMALL),
        render_conversation(transcript.messages, SMALL),
    ):
        assert len(rendered.text) <= SMALL.max_chars
