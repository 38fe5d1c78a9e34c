"""The critic's shape: a frozen configuration snapshot read by collaborators.

A field assigned after construction reaches the next call; the snapshot is reused while
nothing changed; the collaborators work from a configuration alone, without a critic.
"""

from __future__ import annotations

import ast
import copy
import json
import pickle
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from cross_judge import ConfigError, Critic, PromptError, set_vendor_limits
from cross_judge.critic import _config
from cross_judge.critic._assembly import VerdictAssembler
from cross_judge.critic._config import CriticConfig
from cross_judge.critic._request import RequestBuilder
from cross_judge.transport import Completion, TextPart
from cross_judge.vendors import get_vendor

pytestmark = pytest.mark.anyio

KEY = "sk-unit-test-key-0123456789"
URL = "https://api.deepseek.com/v1/chat/completions"
ANSWER = {
    "id": "x",
    "object": "chat.completion",
    "model": "deepseek-chat",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"kind": "KEEP", "confidence": 0.9}'},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
}
CRITIC_DIR = Path(__file__).resolve().parents[3] / "src" / "cross_judge" / "critic"
COLLABORATORS = ("_config.py", "_request.py", "_calls.py", "_assembly.py", "_rubric.py")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def plain_critic(**kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    return Critic(name="c1", model="deepseek-chat", **kwargs)


def config_alone(**kwargs: Any) -> CriticConfig:
    """A configuration made without any critic."""
    kwargs.setdefault("prompt_template", "Judge {query}; answer in JSON.")
    kwargs.setdefault("system_prompt", "Be strict.")
    return CriticConfig.build(name="solo", model="m", endpoint=get_vendor("openai"), **kwargs)


@respx.mock
async def test_a_field_assigned_after_construction_reaches_the_next_request(
    client: httpx.AsyncClient,
) -> None:
    route = respx.post(URL).respond(json=ANSWER)
    critic = plain_critic(http_client=client)
    await critic.judge("q")
    critic.temperature = 0.3
    critic.max_tokens = 77
    await critic.judge("q")
    body = json.loads(route.calls.last.request.content)
    assert (body["temperature"], body["max_tokens"]) == (0.3, 77)


@respx.mock
async def test_labels_assigned_after_construction_judge_the_next_answer(
    client: httpx.AsyncClient,
) -> None:
    respx.post(URL).respond(json=ANSWER)
    critic = plain_critic(http_client=client, labels=["KEEP", "REJECT"])
    assert (await critic.judge("q")).kind == "KEEP"
    critic.labels = ["REJECT"]
    assert (await critic.judge("q")).kind == "PARSE_FAIL"


def test_a_template_assigned_after_construction_is_the_next_prompt() -> None:
    critic = plain_critic()
    critic.build_request("q")
    critic.prompt_template = "New: {query}"
    assert critic.render_prompt("item") == "New: item"


def test_answer_keys_set_after_construction_read_the_next_answer() -> None:
    critic = plain_critic()
    critic.build_request("q")
    critic.use_answer_keys(["verdict"], ["rationale"])
    completion = Completion(text='{"verdict": "KEEP", "kind": "REJECT", "rationale": "ok"}')
    verdict = critic.verdict_from_batch(completion)
    assert (verdict.kind, verdict.reasoning) == ("KEEP", "ok")


def test_an_invalid_template_assigned_later_raises_at_the_next_request() -> None:
    critic = plain_critic()
    critic.prompt_template = "no placeholder"
    with pytest.raises(PromptError, match=r"\{query\}"):
        critic.build_request("q")


def test_a_malformed_calibration_assigned_later_raises_before_the_next_request() -> None:
    critic = plain_critic()
    critic.calibration = {"not": "a calibration"}
    with pytest.raises(ConfigError, match="calibration"):
        critic.build_request("q")


def test_the_snapshot_is_reused_while_no_field_is_assigned() -> None:
    critic = plain_critic()
    taken = critic.snapshot()
    critic.build_request("q")
    critic.render_prompt("q")
    critic.price()
    assert critic.snapshot() is taken


def test_a_call_takes_no_new_snapshot_while_no_field_is_assigned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    critic = plain_critic()
    critic.snapshot()
    builds: list[str] = []
    real = CriticConfig.build

    def counted(**kwargs: Any) -> CriticConfig:
        builds.append(kwargs["name"])
        return real(**kwargs)

    monkeypatch.setattr(CriticConfig, "build", counted)
    for _ in range(3):
        critic.build_request("q")
        critic.verdict_from_batch(Completion(text='{"kind": "KEEP"}'))
    assert builds == []


def test_assigning_a_field_takes_a_new_snapshot_with_it() -> None:
    critic = plain_critic()
    before = critic.snapshot()
    critic.temperature = 0.5
    after = critic.snapshot()
    assert after is not before
    assert (before.temperature, after.temperature) == (0.0, 0.5)


def test_replacing_the_vendors_registration_takes_a_new_snapshot(vendor_registry: None) -> None:
    critic = plain_critic()
    before = critic.snapshot()
    set_vendor_limits("deepseek", max_concurrency=3)
    after = critic.snapshot()
    assert after is not before
    assert after.endpoint is critic.endpoint()


def test_the_configuration_is_frozen() -> None:
    config = plain_critic().snapshot()
    with pytest.raises(AttributeError):
        config.temperature = 1.0  # type: ignore[misc]


def test_a_request_is_built_from_a_configuration_alone() -> None:
    request = RequestBuilder(config_alone(temperature=0.2, seed=7)).build_request("the item")
    system, user = request.messages
    assert system.parts == (TextPart("Be strict."),)
    assert user.parts == (TextPart("Judge the item; answer in JSON."),)
    assert (request.model, request.temperature, request.seed) == ("m", 0.2, 7)


def test_a_verdict_is_assembled_from_a_configuration_alone() -> None:
    assembler = VerdictAssembler(config_alone(labels=("KEEP", "REJECT")))
    completion = Completion(text='{"kind": "reject", "confidence": 0.7, "reasoning": "dup"}')
    verdict = assembler.from_completion(completion, 1, time.perf_counter(), price=None)
    assert (verdict.kind, verdict.confidence, verdict.critic_id) == ("REJECT", 0.7, "solo")
    assert verdict.vendor == "openai"


def test_a_configuration_digests_its_prompt_as_the_critic_does() -> None:
    critic = plain_critic()
    alone = config_alone(prompt_template=critic.prompt_template, system_prompt=critic.system_prompt)
    assert alone.prompt_sha256 == critic.prompt_sha256


def test_no_collaborator_imports_the_critic_class_at_run_time() -> None:
    for name in COLLABORATORS:
        tree = ast.parse((CRITIC_DIR / name).read_text())
        for node in tree.body:  # module level, outside `if TYPE_CHECKING:`
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("critic", "critic.critic"), f"{name} imports Critic"


def test_no_collaborator_declares_another_ones_members_for_the_type_checker() -> None:
    for name in COLLABORATORS:
        tree = ast.parse((CRITIC_DIR / name).read_text())
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            hidden = [
                n
                for n in cls.body
                if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
            ]
            assert not hidden, f"{name}: {cls.name} declares members under TYPE_CHECKING"


def test_a_pickled_critic_takes_its_own_snapshot() -> None:
    critic = plain_critic(temperature=0.4)
    critic.snapshot()
    restored = pickle.loads(pickle.dumps(critic))
    assert restored.snapshot() is not critic.snapshot()
    assert restored.build_request("q").temperature == 0.4


def test_a_field_assigned_on_a_copy_leaves_the_original_alone() -> None:
    critic = plain_critic()
    critic.snapshot()
    twin = copy.copy(critic)
    twin.temperature = 0.9
    assert twin.build_request("q").temperature == 0.9
    assert critic.build_request("q").temperature == 0.0


def test_the_construction_checks_are_functions_of_the_fields() -> None:
    with pytest.raises(ConfigError, match="temperature must be a number"):
        _config.check_fields({**vars(plain_critic()), "temperature": 3.0})
