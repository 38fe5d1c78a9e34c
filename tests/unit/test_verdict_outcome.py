"""What an EnsembleVerdict says when printed: ``str()``, ``repr()``, ``outcome`` and the
notebook view name the consensus and, when no critic answered, each critic and why."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

import cross_judge  # noqa: F401  (registers the notebook views)
from cross_judge import ErrorKind
from cross_judge.verdict import EnsembleVerdict, Verdict, failure_reason

MISSING_DEEPSEEK = (
    "Missing API key for vendor 'deepseek': set the DEEPSEEK_API_KEY environment variable "
    "or pass api_key=..."
)
REFUSED_OLLAMA = (
    "connection: ClientConnectorError: Cannot connect to host localhost:11434 ssl:default "
    "[Connect call failed ('127.0.0.1', 11434)] (after 3 attempts)"
)


def failed(critic: str, vendor: str, model: str, kind: ErrorKind, message: str) -> Verdict:
    return Verdict(
        kind="ERROR",
        reasoning=message,
        error=message,
        error_kind=kind,
        critic_id=critic,
        vendor=vendor,
        model=model,
    )


def vote(critic: str, kind: str, **fields: Any) -> Verdict:
    return Verdict(kind=kind, confidence=0.8, critic_id=critic, **fields)


def nobody_answered() -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id="Felines (see also: Cats)",
        verdicts=[
            failed("ds", "deepseek", "deepseek-flash", ErrorKind.MISSING_KEY, MISSING_DEEPSEEK),
            failed("llama", "ollama", "llama3.1", ErrorKind.CONNECTION, REFUSED_OLLAMA),
        ],
        consensus="UNCLEAR",
        voting="majority",
        n_errors=2,
        fallback=True,
    )


def test_str_of_a_result_no_critic_answered_names_each_critic_and_why() -> None:
    text = str(nobody_answered())
    assert text.splitlines()[0].startswith("Felines (see also: Cats): no critic answered")
    assert "ds (deepseek/deepseek-flash): missing API key (set DEEPSEEK_API_KEY" in text
    assert "llama (ollama/llama3.1): connection refused: Cannot connect to host" in text


def test_repr_of_a_result_no_critic_answered_says_so_on_one_line() -> None:
    text = repr(nobody_answered())
    assert "\n" not in text
    assert text.startswith("EnsembleVerdict(query_id='Felines (see also: Cats)'")
    assert "no critic answered" in text
    assert "missing API key (set DEEPSEEK_API_KEY" in text and "connection refused" in text


def test_outcome_of_a_result_no_critic_answered_lists_every_reason() -> None:
    outcome = nobody_answered().outcome
    assert outcome.startswith("no critic answered (UNCLEAR is the fallback, not a vote): ")
    assert outcome.count("; ") == 1


def test_the_notebook_view_of_a_result_no_critic_answered_says_why() -> None:
    html = nobody_answered()._repr_html_()
    assert "no critic answered" in html
    assert "missing API key (set DEEPSEEK_API_KEY" in html


def test_str_of_a_decided_result_gives_the_label_and_the_votes() -> None:
    result = EnsembleVerdict(
        query_id="q1",
        verdicts=[vote("a", "KEEP"), vote("b", "KEEP"), vote("c", "KEEP")],
        consensus="KEEP",
        voting="majority",
        n_valid=3,
        agreement_pct=1.0,
    )
    assert str(result) == "q1: KEEP (majority, 3 of 3 valid votes)"


def test_str_lists_dissenters_and_failed_critics_under_the_consensus() -> None:
    result = EnsembleVerdict(
        query_id="q1",
        verdicts=[
            vote("a", "REJECT"),
            vote("b", "KEEP"),
            failed("c", "openai", "gpt-4o-mini", ErrorKind.TIMEOUT, "timeout: no response in 60s"),
        ],
        consensus="REJECT",
        voting="majority",
    )
    assert str(result).splitlines() == [
        "q1: REJECT (majority, 1 of 2 valid votes)",
        "  against: b voted KEEP",
        "  failed: c (openai/gpt-4o-mini): timed out: no response in 60s",
    ]


def test_a_fallback_with_votes_says_no_vote_decided() -> None:
    result = EnsembleVerdict(
        query_id="q1",
        verdicts=[vote("a", "KEEP"), vote("b", "REJECT")],
        consensus="UNCLEAR",
        voting="unanimous",
        fallback=True,
    )
    assert str(result) == "q1: no consensus (UNCLEAR is the fallback; votes: KEEP 1, REJECT 1)"


def test_a_result_without_verdicts_says_no_critic_was_asked() -> None:
    result = EnsembleVerdict(query_id="q", verdicts=[], consensus="UNCLEAR", voting="majority")
    assert result.outcome.startswith("no critic was asked")


def test_early_stop_skips_are_counted_not_listed_as_failures() -> None:
    skipped = Verdict(
        kind="SKIPPED", error="early_stop", error_kind=ErrorKind.EARLY_STOP, critic_id="c"
    )
    result = EnsembleVerdict(
        query_id="q",
        verdicts=[vote("a", "KEEP"), vote("b", "KEEP"), skipped],
        consensus="KEEP",
        voting="majority",
        calls_saved=1,
    )
    assert str(result).splitlines() == [
        "q: KEEP (majority, 2 of 2 valid votes)",
        "  1 call saved by early stop",
    ]


def test_failure_reason_classifies_each_error_kind_in_words() -> None:
    assert failure_reason(failed("a", "x", "m", ErrorKind.AUTH, "auth: HTTP 401: bad key")) == (
        "API key rejected: HTTP 401: bad key"
    )
    assert (
        failure_reason(
            failed("a", "x", "m", ErrorKind.CONNECTION, "connection: ConnectError: reset by peer")
        )
        == "connection failed: reset by peer"
    )
    assert failure_reason(vote("a", "KEEP")) is None


def test_a_key_shaped_string_in_an_error_never_reaches_the_text() -> None:
    key = "sk-proj-" + "a1B2c3D4" * 4
    leaky = failed("a", "openai", "m", ErrorKind.AUTH, f"auth: HTTP 401: bad key {key}")
    result = EnsembleVerdict(
        query_id="q", verdicts=[leaky], consensus="UNCLEAR", voting="majority", fallback=True
    )
    for text in (str(result), repr(result), result.outcome, failure_reason(leaky) or ""):
        assert key not in text and key[:12] not in text


def test_control_characters_from_a_vendor_are_escaped_not_printed() -> None:
    hostile = failed("a\x1b[2J", "x", "m", ErrorKind.SERVER, "server: HTTP 500: \x1b[31mred\x07")
    result = EnsembleVerdict(
        query_id="q\r\nX", verdicts=[hostile], consensus="UNCLEAR", voting="m", fallback=True
    )
    text = str(result)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert len(text.splitlines()) == 2  # the headline and the one failed critic


# -- never raises, whatever the verdicts hold -----------------------------------------------

texts = st.text(max_size=40)
error_kinds = st.sampled_from([*ErrorKind, None])


@st.composite
def any_verdict(draw: st.DrawFn) -> Verdict:
    failed_call = draw(st.booleans())
    fields: dict[str, Any] = {
        "kind": draw(st.sampled_from(["KEEP", "ERROR", "PARSE_FAIL", "SKIPPED"]) | texts),
        "critic_id": draw(texts),
        "vendor": draw(st.none() | texts),
        "model": draw(st.none() | texts),
        "error": draw(texts) if failed_call else None,
        "error_kind": draw(error_kinds) if failed_call else None,
        "reasoning": draw(texts),
        "written_label": draw(st.none() | texts),
    }
    # model_construct: a hand-built or stored verdict need not have passed validation.
    if draw(st.booleans()):
        return Verdict.model_construct(**fields)
    return Verdict(**fields)


@st.composite
def any_result(draw: st.DrawFn) -> EnsembleVerdict:
    verdicts = draw(st.lists(any_verdict(), max_size=5))
    return EnsembleVerdict.model_construct(
        query_id=draw(texts),
        verdicts=verdicts,
        consensus=draw(texts),
        voting=draw(texts),
        fallback=draw(st.booleans()),
        score=draw(st.none() | st.floats(allow_nan=True)),
        tier=draw(st.none() | st.integers(0, 3)),
        tiers=None,
        agreement_pct=draw(st.floats(0, 1)),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_result())
def test_printing_a_result_never_raises_and_prints_no_control_character(
    result: EnsembleVerdict,
) -> None:
    text, line, short = str(result), result.outcome, repr(result)
    html = result._repr_html_()
    assert all(isinstance(t, str) for t in (text, line, short, html))
    assert "\n" not in line and "\n" not in short
    assert all(c == "\n" or c.isprintable() for c in text)
    assert all(c.isprintable() for c in line)
    valid = [v for v in result.verdicts if v.error is None and v.kind != "SKIPPED"]
    if result.verdicts and not valid:
        assert line.startswith("no critic answered")
