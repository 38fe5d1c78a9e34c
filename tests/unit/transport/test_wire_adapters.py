"""The wire-protocol seam: the adapter registry, no protocol name compared outside the
adapter modules (checked on the source with :mod:`ast`), ``ChatRequest`` made of messages
with the cache keys of plain requests unchanged, and the Responses adapter's body."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from cross_judge.errors import ConfigError
from cross_judge.transport import (
    AnswerSchema,
    ChatRequest,
    Message,
    TextPart,
    protocol_adapter,
    protocol_names,
)
from cross_judge.vendors import get_vendor, register_vendor

SOURCE = Path(__file__).resolve().parents[3] / "src" / "cross_judge"

ADAPTER_MODULES = {
    "transport/_adapter.py",
    "transport/_anthropic_batch.py",
    "transport/_openai_batch.py",
    "transport/_responses.py",
    "transport/_anthropic.py",
    "transport/_openai_compat.py",
}
"""Where a protocol's name may be compared: the adapters themselves."""


def _protocol_comparisons(path: Path) -> list[str]:
    names = set(protocol_names())
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        literals: list[str] = []
        for operand in operands:
            if isinstance(operand, ast.Constant) and operand.value in names:
                literals.append(str(operand.value))
            elif isinstance(operand, (ast.Tuple, ast.List, ast.Set)):
                literals += [
                    str(e.value)
                    for e in operand.elts
                    if isinstance(e, ast.Constant) and e.value in names
                ]
        if literals and any(
            isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops
        ):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_the_adapters_compares_a_protocol_name() -> None:
    offending = []
    for path in sorted(SOURCE.rglob("*.py")):
        relative = str(path.relative_to(SOURCE))
        if relative in ADAPTER_MODULES or relative.startswith("testing/"):
            continue  # the simulated vendor imports nothing of the package's protocols
        offending += _protocol_comparisons(path)
    assert offending == []


def test_the_checker_finds_a_protocol_comparison(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        'if config.protocol == "anthropic":\n    pass\n'
        'ok = protocol in ("openai", "x")\n'
        'name = "openai-responses"\n'  # an assignment, not a comparison
    )
    assert _protocol_comparisons(probe) == [
        "probe.py:1: config.protocol == 'anthropic'",
        "probe.py:3: protocol in ('openai', 'x')",
    ]


def test_the_registry_knows_the_three_protocols() -> None:
    assert {"openai", "anthropic", "openai-responses"} <= set(protocol_names())
    assert protocol_adapter("openai-responses").name == "openai-responses"


def test_an_unknown_protocol_names_the_known_ones_and_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        protocol_adapter("grpc")
    message = str(caught.value)
    assert "'grpc'" in message and "'openai-responses'" in message
    assert "register_vendor" in message


def test_register_vendor_refuses_an_unknown_protocol() -> None:
    with pytest.raises(ConfigError, match="unknown wire protocol 'soap'"):
        register_vendor("soap-vendor", "https://soap.example/v1", protocol="soap")


def test_a_plain_request_keeps_the_cache_key_it_had_before_messages() -> None:
    # Computed with the code of main 0a9a0a9, before ChatRequest carried messages.
    plain = ChatRequest(
        model="m1", system="You judge.", user="Item: x", temperature=0.0, max_tokens=64
    )
    assert plain.cache_key(get_vendor("openai")) == (
        "be6d98c1785cd001871e7c5c52920e5d4a9cbcef553f79796eef996c94f8c150"
    )
    assert plain.cache_key(get_vendor("anthropic")) == (
        "443c6ac7084c3d3001ae35afc6a967f6bb5f9addba770a37bef7f5087881f8f1"
    )
    positional = ChatRequest("m1", "", "Item: y", 0.5, 32, seed=3, sample=2)
    assert positional.cache_key(get_vendor("deepseek")) == (
        "208293ea624656216c2e4248984b68e390c3421795976d5510e0d2cd434c2ee8"
    )
    schema = AnswerSchema("verdict", '{"type":"object"}')
    shaped = ChatRequest(
        model="m1", system="S", user="U", temperature=0.0, max_tokens=64,
        structured="schema", schema=schema, effort="low", logprobs=5,
    )  # fmt: skip
    assert shaped.cache_key(get_vendor("openai")) == (
        "bf8ceda75a0a20db844f5632e1a49993a9bd01805528995f63b6ac1a47cb0849"
    )


def test_a_request_given_as_plain_messages_is_the_request_given_as_text() -> None:
    messages = (
        Message("system", (TextPart("You judge."),)),
        Message("user", (TextPart("Item: x"),)),
    )
    given = ChatRequest("m1", "", "", 0.0, 64, messages=messages)
    text = ChatRequest("m1", "You judge.", "Item: x", 0.0, 64)
    assert (given.system, given.user) == ("You judge.", "Item: x")
    assert given.cache_key(get_vendor("openai")) == text.cache_key(get_vendor("openai"))


def test_a_richer_request_adds_its_messages_to_the_key() -> None:
    parts = Message("user", (TextPart("Item: "), TextPart("x")))
    rich = ChatRequest("m1", "", "", 0.0, 64, messages=(parts,))
    plain = ChatRequest("m1", "", "Item: x", 0.0, 64)
    assert rich.user == "Item: x"
    assert rich.cache_key(get_vendor("openai")) != plain.cache_key(get_vendor("openai"))


def test_replacing_the_user_text_rebuilds_the_messages() -> None:
    request = ChatRequest("m1", "S", "old", 0.0, 64)
    changed = dataclasses.replace(request, user="new")
    assert changed.messages[-1] == Message("user", (TextPart("new"),))


def test_text_and_rich_messages_together_are_refused() -> None:
    rich = (Message("user", (TextPart("a"), TextPart("b"))),)
    with pytest.raises(ValueError, match="not both"):
        ChatRequest("m1", "S", "other", 0.0, 64, messages=rich)


def test_the_responses_body_puts_the_system_prompt_in_instructions() -> None:
    config = dataclasses.replace(get_vendor("openai"), protocol="openai-responses")
    request = ChatRequest("m1", "Be strict.", "Item", 0.3, 99, seed=4)
    body = protocol_adapter("openai-responses").payload(config, request)
    assert body == {
        "model": "m1",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Item"}]}],
        "instructions": "Be strict.",
        "temperature": 0.3,
        "max_output_tokens": 99,
    }
    assert request.unsent_settings(config) == {"seed": 4}


def test_the_responses_protocol_refuses_a_thinking_budget() -> None:
    config = dataclasses.replace(get_vendor("openai"), protocol="openai-responses")
    problem = protocol_adapter("openai-responses").reasoning_problem(config, None, 2048, None)
    assert problem is not None and "effort" in problem
