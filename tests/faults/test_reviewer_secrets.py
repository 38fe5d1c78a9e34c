"""A legacy :class:`Reviewer` with an injected client keeps a key out of its verdicts and logs.

cross-judge 0.1's path: the reviewer calls ``client.chat.completions.create(...)`` itself,
so the core's redaction is not in the way; the reviewer redacts (``_redact.Redactor``, as
:class:`~cross_judge.critic._critic.Critic` does). A vendor that echoes the key back (OpenAI's 401
quotes it without its ``sk-`` prefix), or a model repeating it in its answer, must not
put it, or any 8-character piece of it, in ``error``, ``rationale``, ``raw_response``,
the label or a log line.

The clients are 0.1-style duck objects: nothing here touches the network. Each test asks
through ``ask_async`` (a worker thread) on asyncio and on trio.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import string
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from cross_judge.reviewer import Reviewer
from cross_judge.schema import Verdict as LegacyVerdict
from cross_judge.transport._redaction import MARKER

pytestmark = pytest.mark.anyio


def _random_secret() -> str:
    """32 random letters and digits: an 8-character piece turns up by chance nowhere."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(32))


SECRET = _random_secret()
KEY = f"sk-proj-{SECRET}"
"""Shaped like an OpenAI key; the vendor echoes it without the ``sk-`` prefix."""
PLAIN_KEY = f"CANARY{_random_secret()}"
"""No vendor shape: only redacting the configured key can hide it."""
ECHOED = KEY.removeprefix("sk-")
GOOD_ANSWER = '{"verdict": "KEEP", "confidence": 0.9, "rationale": "%s"}'


class DuckClient:
    """0.1's injected client: ``client.chat.completions.create(**kw)``, answering
    ``content`` or raising ``exc``; ``api_key`` and ``base_url`` as an ``openai.OpenAI``
    has them."""

    def __init__(
        self,
        content: str | None = None,
        *,
        exc: Exception | None = None,
        api_key: str | None = None,
        base_url: object = None,
    ) -> None:
        self.content = content
        self.exc = exc
        self.api_key = api_key
        self.base_url = base_url
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        if self.exc is not None:
            raise self.exc
        message = SimpleNamespace(content=self.content)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


class AuthenticationError(Exception):
    """Stands in for ``openai.AuthenticationError``: its text quotes the 401 body."""


def _unauthorized(echoed: str) -> AuthenticationError:
    body = {"error": {"message": f"Incorrect API key provided: {echoed}.", "code": "401"}}
    return AuthenticationError(f"Error code: 401 - {body}")


def _pieces(secret: str, size: int = 8) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def assert_hidden(secret: str, *surfaces: object) -> None:
    """No surface holds ``secret`` or any 8-character piece of it."""
    for surface in surfaces:
        text = surface if isinstance(surface, str) else repr(surface)
        found = sorted(p for p in _pieces(secret) if p in text)
        assert not found, f"{found[0]!r} of the secret in {text[:300]!r}"


def surfaces_of(verdict: LegacyVerdict) -> list[object]:
    return [verdict.model_dump_json(), repr(verdict), str(verdict), verdict.to_verdict()]


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="cross_judge")
    return caplog


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    records = [f"{r.getMessage()}\n{r.__dict__!r}" for r in caplog.records]
    return caplog.text + "\n".join(records)


# -- echoed in an error ------------------------------------------------------------------------


async def test_a_key_echoed_in_a_client_error_is_redacted_from_error_and_rationale() -> None:
    client = DuckClient(exc=_unauthorized(PLAIN_KEY))
    verdict = await Reviewer("r", "m", client=client, api_key=PLAIN_KEY).ask_async("x")
    assert verdict.verdict == "ERROR" and verdict.error == verdict.rationale
    assert verdict.error is not None and verdict.error.startswith("AuthenticationError: ")
    assert f"Incorrect API key provided: {MARKER}." in verdict.error
    assert_hidden(PLAIN_KEY, *surfaces_of(verdict))


async def test_a_key_known_only_to_the_injected_client_is_redacted_from_its_error() -> None:
    client = DuckClient(exc=_unauthorized(ECHOED), api_key=KEY)
    verdict = await Reviewer("r", "m", client=client).ask_async("x")
    assert verdict.error is not None and MARKER in verdict.error
    assert_hidden(SECRET, *surfaces_of(verdict))


async def test_a_piece_of_the_key_echoed_in_an_error_is_redacted() -> None:
    piece = PLAIN_KEY[11:19]
    client = DuckClient(exc=_unauthorized(f"...{piece}..."), api_key=PLAIN_KEY)
    verdict = await Reviewer("r", "m", client=client).ask_async("x")
    assert verdict.error is not None and f"...{MARKER}..." in verdict.error
    assert_hidden(PLAIN_KEY, *surfaces_of(verdict))


async def test_a_base_url_password_echoed_in_an_error_is_redacted() -> None:
    password = _random_secret()
    basic = base64.b64encode(f"user:{password}".encode()).decode()
    client = DuckClient(
        exc=RuntimeError(f"proxy refused password {password} (Basic {basic})"),
        base_url=httpx.URL(f"https://user:{password}@proxy.test/v1"),
    )
    verdict = await Reviewer("r", "m", client=client).ask_async("x")
    assert verdict.error is not None and MARKER in verdict.error
    assert_hidden(password, *surfaces_of(verdict))
    assert_hidden(basic, *surfaces_of(verdict))


async def test_a_reviewer_base_url_password_echoed_in_an_error_is_redacted() -> None:
    password = _random_secret()
    client = DuckClient(exc=RuntimeError(f"bad credentials {password}"))
    reviewer = Reviewer("r", "m", client=client, base_url=f"https://u:{password}@proxy.test/v1")
    verdict = await reviewer.ask_async("x")
    assert verdict.error == f"RuntimeError: bad credentials {MARKER}"


async def test_a_key_echoed_in_base64_in_a_client_error_is_redacted() -> None:
    # A proxy quoting the header it got, the key inside a longer base64 token.
    token = base64.b64encode(b'{"auth":"' + PLAIN_KEY.encode() + b'"}').decode()
    client = DuckClient(exc=RuntimeError(f"rejected token {token}"), api_key=PLAIN_KEY)
    verdict = await Reviewer("r", "m", client=client).ask_async("x")
    # What encodes the token's start ('{"auth":"') and end stays; the key becomes the marker.
    assert verdict.error is not None
    assert verdict.error.startswith(f"RuntimeError: rejected token {token[:12]}{MARKER}")
    assert token.endswith(verdict.error.rpartition(MARKER)[2])
    assert_hidden(base64.b64encode(PLAIN_KEY.encode()).decode()[2:-2], *surfaces_of(verdict))


# -- echoed in an answer ------------------------------------------------------------------------


async def test_a_key_in_an_answer_is_redacted_from_raw_response_and_rationale() -> None:
    answer = GOOD_ANSWER % f"you sent me {PLAIN_KEY}"
    client = DuckClient(answer, api_key=PLAIN_KEY)
    verdict = await Reviewer("r", "m", client=client).ask_async("x")
    assert (verdict.verdict, verdict.confidence, verdict.error) == ("KEEP", 0.9, None)
    assert verdict.rationale == f"you sent me {MARKER}"
    assert verdict.raw_response == answer.replace(PLAIN_KEY, MARKER)
    assert_hidden(PLAIN_KEY, *surfaces_of(verdict))


async def test_an_8_character_piece_of_the_key_in_an_answer_is_redacted() -> None:
    piece = PLAIN_KEY[20:28]
    answer = GOOD_ANSWER % f"it ends in {piece}"
    verdict = await Reviewer("r", "m", client=DuckClient(answer), api_key=PLAIN_KEY).ask_async("x")
    assert verdict.rationale == f"it ends in {MARKER}"
    assert verdict.raw_response is not None and piece not in verdict.raw_response


async def test_a_piece_shorter_than_8_characters_is_left_as_it_is() -> None:
    piece = PLAIN_KEY[20:27]
    answer = GOOD_ANSWER % f"it ends in {piece}"
    verdict = await Reviewer("r", "m", client=DuckClient(answer), api_key=PLAIN_KEY).ask_async("x")
    assert (verdict.rationale, verdict.raw_response) == (f"it ends in {piece}", answer)


async def test_a_key_spread_with_zero_width_characters_in_an_answer_is_redacted() -> None:
    spread = "\u200b".join(PLAIN_KEY)
    answer = json.dumps({"verdict": "KEEP", "confidence": 0.9, "rationale": f"key {spread}"})
    verdict = await Reviewer("r", "m", client=DuckClient(answer), api_key=PLAIN_KEY).ask_async("x")
    assert (verdict.verdict, verdict.rationale) == ("KEEP", f"key {MARKER}")
    assert verdict.raw_response is not None and MARKER in verdict.raw_response
    assert_hidden(PLAIN_KEY, *[str(s).replace("\u200b", "") for s in surfaces_of(verdict)])


async def test_a_key_as_the_label_is_redacted() -> None:
    answer = json.dumps({"verdict": PLAIN_KEY, "confidence": 0.5})
    verdict = await Reviewer("r", "m", client=DuckClient(answer), api_key=PLAIN_KEY).ask_async("x")
    assert_hidden(PLAIN_KEY, *surfaces_of(verdict))
    assert_hidden(PLAIN_KEY.upper(), *surfaces_of(verdict))


async def test_an_answer_without_a_secret_is_kept_as_it_is() -> None:
    answer = GOOD_ANSWER % "a whale is a mammal"
    verdict = await Reviewer("r", "m", client=DuckClient(answer), api_key=PLAIN_KEY).ask_async("x")
    assert (verdict.verdict, verdict.rationale, verdict.raw_response) == (
        "KEEP",
        "a whale is a mammal",
        answer,
    )


# -- logs ---------------------------------------------------------------------------------------


async def test_an_unparsable_answer_echoing_the_key_leaves_it_out_of_verdict_and_log(
    debug_logs: pytest.LogCaptureFixture,
) -> None:
    answer = f"I cannot judge this. Your key {ECHOED} is visible."
    client = DuckClient(answer, api_key=KEY)
    verdict = await Reviewer("r", "m", client=client).ask_async("x")
    assert (verdict.verdict, verdict.error) == ("PARSE_FAIL", "parse_fail")
    assert verdict.raw_response == f"I cannot judge this. Your key {MARKER} is visible."
    assert_hidden(SECRET, *surfaces_of(verdict), _logged(debug_logs))


async def test_nothing_logged_on_the_injected_client_path_holds_the_key(
    debug_logs: pytest.LogCaptureFixture,
) -> None:
    for client in (
        DuckClient(exc=_unauthorized(ECHOED), api_key=KEY),
        DuckClient(GOOD_ANSWER % f"key {ECHOED}", api_key=KEY),
        DuckClient(f"no verdict, just {ECHOED}", api_key=KEY),
    ):
        verdict = await Reviewer("r", "m", client=client).ask_async("x")
        assert_hidden(SECRET, *surfaces_of(verdict))
    assert_hidden(SECRET, _logged(debug_logs))
