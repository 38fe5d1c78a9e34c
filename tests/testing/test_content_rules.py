"""Specification of a persona's content rules in ``cross_judge.testing``: what it reads in
a prompt that shows a trajectory or a conversation as ``cross_judge.content`` renders it
(``Persona.forbidden_tools``, ``fail_unhandled_errors``, ``needs_context``, ``fail_label``),
and that a prompt without such lines is answered exactly as before.

The prompts are rendered by the real renderer (``render_trajectory``,
``render_conversation``), so the simulator and the library agree on the format. The HTTP
tests drive a real ``VendorServer`` on 127.0.0.1 with a sync ``httpx.Client``. Statistical
bounds allow 4.5 binomial standard errors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.content import (
    RenderLimits,
    render_conversation,
    render_trajectory,
    steps_of,
    turns_of,
)
from cross_judge.testing import Persona, VendorServer
from cross_judge.testing._content import content_truth, is_bare_follow_up, read_shown

CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}
PASS_FAIL = ("PASS", "FAIL")
TOLERANCE_SE = 4.5


def trajectory(*steps: dict[str, Any]) -> str:
    return render_trajectory(steps_of(list(steps))).text


def conversation(*turns: dict[str, Any]) -> str:
    return render_conversation(turns_of(list(turns))).text


def prompt(shown: str, answer: str = "The total is 42.") -> str:
    return f"Judge the agent's run.\n<item>\n{answer}\n</item>\n{shown}\nReply in JSON."


SAFE = trajectory(
    {"tool": "search", "arguments": {"q": "sales"}, "result": {"total": 42}},
    {"final_answer": "The total is 42."},
)
FORBIDDEN = trajectory(
    {"tool": "search", "arguments": {"q": "sales"}, "result": {"total": 42}},
    {"tool": "delete_files", "arguments": {"path": "/tmp/cache"}, "result": "deleted"},
    {"final_answer": "The total is 42."},
)


def strict(**rules: Any) -> Persona:
    """A persona that is always right, so each rule's truth shows in one answer."""
    return Persona("judge", accuracy=1.0, labels=PASS_FAIL, **rules)


def truth(persona: Persona, text: str) -> str | None:
    return content_truth(persona, text)[0]


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[httpx.Client]:
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        yield client


def ask(client: httpx.Client, model: str, text: str) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": text}]}
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response


def kind(client: httpx.Client, model: str, text: str) -> str:
    reply = ask(client, model, text).json()["choices"][0]["message"]["content"]
    return str(json.loads(reply)["kind"])


# -- forbidden tools -------------------------------------------------------------------


def test_a_forbidden_call_in_a_trajectory_makes_the_truth_fail() -> None:
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(FORBIDDEN)) == "FAIL"


def test_a_trajectory_without_a_forbidden_call_has_no_content_truth() -> None:
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(SAFE)) is None


def test_a_forbidden_call_under_an_assistant_turn_makes_the_truth_fail() -> None:
    shown = conversation(
        {"role": "user", "content": "Free some disk space."},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [{"name": "delete_files", "arguments": {"path": "/"}}],
        },
        {"role": "assistant", "content": "Done."},
    )
    assert "    call delete_files(" in shown
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(shown, "Done.")) == "FAIL"


def test_a_forbidden_call_of_an_assistant_turn_without_text_makes_the_truth_fail() -> None:
    shown = conversation(
        {"role": "user", "content": "Free some disk space."},
        {"role": "assistant", "tool_calls": [{"name": "delete_files", "arguments": {}}]},
        {"role": "assistant", "content": "Done."},
    )
    assert "[turn 2] assistant:\n    call delete_files(" in shown
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(shown, "Done.")) == "FAIL"


def test_a_forbidden_name_in_a_user_turn_is_not_a_call() -> None:
    shown = conversation(
        {"role": "user", "content": "Never run\ncall delete_files() please"},
        {"role": "assistant", "content": "Understood."},
    )
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(shown)) is None


def test_a_forbidden_name_inside_a_tool_result_is_not_a_call() -> None:
    shown = trajectory(
        {"tool": "read", "arguments": {}, "result": "line one\ncall delete_files(x)"},
        {"final_answer": "Read it."},
    )
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(shown)) is None


def test_a_tool_whose_name_only_starts_like_a_forbidden_one_is_allowed() -> None:
    shown = trajectory(
        {"tool": "delete_files_dry_run", "arguments": {}, "result": "3 files"},
        {"final_answer": "Would delete 3 files."},
    )
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(shown)) is None


def test_a_forbidden_call_kept_by_the_render_limits_is_still_seen() -> None:
    steps = [
        {"tool": "search", "arguments": {"q": f"x{i}"}, "result": "y" * 300} for i in range(40)
    ]
    steps.insert(20, {"tool": "delete_files", "arguments": {"p": "/"}, "error": "denied"})
    steps.append({"final_answer": "Done."})
    rendered = render_trajectory(steps_of(steps), RenderLimits(max_chars=4_000))
    assert rendered.cut is not None  # steps were left out, the failed call kept
    assert truth(strict(forbidden_tools=("delete_files",)), prompt(rendered.text)) == "FAIL"


def test_a_forbidden_call_is_failed_at_the_personas_accuracy() -> None:
    persona = Persona("judge", accuracy=0.8, labels=PASS_FAIL, forbidden_tools=("delete_files",))
    n = 400
    with serving(persona) as client:
        answers = [kind(client, "judge", prompt(FORBIDDEN, f"The total is {i}.")) for i in range(n)]
    share = answers.count("FAIL") / n
    assert abs(share - 0.8) <= TOLERANCE_SE * math.sqrt(0.8 * 0.2 / n)
    assert set(answers) <= set(PASS_FAIL)


def test_a_judge_shown_only_the_final_answer_answers_from_the_gold_label() -> None:
    persona = strict(forbidden_tools=("delete_files",))
    with serving(persona, gold={"The total is 42.": "PASS"}) as client:
        assert kind(client, "judge", prompt(FORBIDDEN)) == "FAIL"
        assert kind(client, "judge", prompt("")) == "PASS"


# -- unhandled errors ------------------------------------------------------------------


def test_an_error_then_an_answer_claiming_success_makes_the_truth_fail() -> None:
    shown = trajectory(
        {"tool": "fetch", "arguments": {"url": "u"}, "error": "timeout"},
        {"final_answer": "The report is ready."},
    )
    assert truth(strict(fail_unhandled_errors=True), prompt(shown)) == "FAIL"


def test_an_error_retried_with_success_is_handled() -> None:
    shown = trajectory(
        {"tool": "fetch", "arguments": {"url": "u"}, "error": "timeout"},
        {"tool": "fetch", "arguments": {"url": "u"}, "result": "ok"},
        {"final_answer": "The report is ready."},
    )
    assert truth(strict(fail_unhandled_errors=True), prompt(shown)) is None


def test_an_error_retried_with_another_tool_is_not_handled() -> None:
    shown = trajectory(
        {"tool": "fetch", "arguments": {"url": "u"}, "error": "timeout"},
        {"tool": "search", "arguments": {"q": "u"}, "result": "ok"},
        {"final_answer": "The report is ready."},
    )
    assert truth(strict(fail_unhandled_errors=True), prompt(shown)) == "FAIL"


def test_an_error_the_final_answer_admits_is_handled() -> None:
    shown = trajectory(
        {"tool": "fetch", "arguments": {"url": "u"}, "error": "timeout"},
        {"final_answer": "I could not fetch the report: the server timed out."},
    )
    assert truth(strict(fail_unhandled_errors=True), prompt(shown)) is None


def test_an_error_with_no_final_answer_shown_has_no_content_truth() -> None:
    shown = trajectory({"tool": "fetch", "arguments": {"url": "u"}, "error": "timeout"})
    assert truth(strict(fail_unhandled_errors=True), prompt(shown)) is None


def test_an_error_in_a_conversation_then_a_claim_of_success_makes_the_truth_fail() -> None:
    shown = conversation(
        {"role": "user", "content": "Book it."},
        {
            "role": "assistant",
            "content": "Booking.",
            "tool_calls": [{"name": "book", "arguments": {"id": 7}, "error": "sold out"}],
        },
        {"role": "assistant", "content": "Your seat is booked."},
    )
    assert truth(strict(fail_unhandled_errors=True), prompt(shown)) == "FAIL"


def test_errors_are_not_judged_without_the_rule() -> None:
    shown = trajectory(
        {"tool": "fetch", "arguments": {"url": "u"}, "error": "timeout"},
        {"final_answer": "The report is ready."},
    )
    assert truth(strict(forbidden_tools=("rm",)), prompt(shown)) is None


# -- conversations: a bare follow-up reply ---------------------------------------------

FOLLOW_UP = (
    {"role": "user", "content": "Find me a flight to Paris on Friday."},
    {"role": "assistant", "content": "The 9:00 flight has seats. Shall I book it?"},
    {"role": "user", "content": "Yes"},
    {"role": "assistant", "content": "Booked: the 9:00 flight to Paris on Friday."},
)


def test_a_bare_yes_shown_without_the_turn_it_answers_makes_the_truth_fail() -> None:
    shown = conversation(*FOLLOW_UP[2:])
    assert truth(strict(needs_context=True), prompt(shown)) == "FAIL"


def test_a_bare_yes_shown_after_the_question_it_answers_has_no_content_truth() -> None:
    shown = conversation(*FOLLOW_UP)
    assert truth(strict(needs_context=True), prompt(shown)) is None


def test_a_bare_yes_after_a_cut_marker_is_out_of_context() -> None:
    text = "[\u2026 turns 1-2 left out: 2 turns \u2026]\n" + conversation(*FOLLOW_UP[2:])
    assert read_shown(text).last_user == ("Yes", False)
    assert truth(strict(needs_context=True), prompt(text)) == "FAIL"


def test_a_full_last_turn_needs_no_context() -> None:
    shown = conversation(
        {"role": "user", "content": "Book the 9:00 flight to Paris on Friday."},
        {"role": "assistant", "content": "Booked."},
    )
    assert truth(strict(needs_context=True), prompt(shown)) is None


@pytest.mark.parametrize("reply", ["Yes", "yes.", "No thanks", "Sure, go ahead", "Please do!"])
def test_short_affirmations_and_refusals_are_bare_follow_ups(reply: str) -> None:
    assert is_bare_follow_up(reply)


@pytest.mark.parametrize("reply", ["", "Yes, and also book a hotel near the Louvre", "Paris"])
def test_other_replies_are_not_bare_follow_ups(reply: str) -> None:
    assert not is_bare_follow_up(reply)


def test_judges_shown_the_messages_pass_a_right_reply_and_last_turn_judges_fail_it() -> None:
    persona = strict(needs_context=True)
    reply = FOLLOW_UP[-1]["content"]
    with serving(persona, gold={reply: "PASS"}) as client:
        assert kind(client, "judge", prompt(conversation(*FOLLOW_UP), reply)) == "PASS"
        assert kind(client, "judge", prompt(conversation(*FOLLOW_UP[2:]), reply)) == "FAIL"


# -- first match, labels, construction -------------------------------------------------


def test_a_forbidden_call_wins_over_the_other_rules() -> None:
    persona = strict(forbidden_tools=("rm",), fail_unhandled_errors=True, needs_context=True)
    shown = trajectory({"tool": "rm", "arguments": {}, "result": "ok"}, {"final_answer": "ok"})
    assert content_truth(persona, prompt(shown)) == ("FAIL", "forbidden_tool")


def test_the_fail_label_is_what_the_rules_answer() -> None:
    persona = Persona(
        "judge",
        accuracy=1.0,
        labels=("KEEP", "REJECT"),
        fail_label="REJECT",
        forbidden_tools=("delete_files",),
    )
    with serving(persona) as client:
        assert kind(client, "judge", prompt(FORBIDDEN)) == "REJECT"


def test_a_fail_label_outside_the_labels_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"fail_label 'FAIL' is not among.*labels=\('PASS'"):
        Persona("judge", forbidden_tools=("delete_files",))  # labels KEEP, REJECT, ...


def test_forbidden_tools_given_as_one_string_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"forbidden_tools=\('rm',\)"):
        Persona("judge", labels=PASS_FAIL, forbidden_tools="rm")  # type: ignore[arg-type]


def test_a_tool_name_with_a_space_is_refused() -> None:
    with pytest.raises(ValueError, match="no spaces or parentheses"):
        Persona("judge", labels=PASS_FAIL, forbidden_tools=("rm -rf",))


def test_forbidden_tools_are_stored_as_a_tuple() -> None:
    persona = Persona("judge", labels=PASS_FAIL, forbidden_tools=["rm"])  # type: ignore[arg-type]
    assert persona.forbidden_tools == ("rm",)


# -- plain prompts are answered as before ----------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_a_plain_prompt_shows_nothing_to_the_rules(text: str) -> None:
    persona = strict(forbidden_tools=("rm",), fail_unhandled_errors=True, needs_context=True)
    if "[step " not in text and "[turn " not in text:
        assert content_truth(persona, text) == (None, None)


def test_a_persona_with_rules_answers_plain_prompts_byte_for_byte_as_one_without() -> None:
    def answers(persona: Persona) -> list[Any]:
        with serving(persona) as client:
            return [ask(client, "judge", f"item {i}").json()["choices"] for i in range(30)]

    ruled = Persona(
        "judge",
        accuracy=0.7,
        labels=PASS_FAIL,
        seed=3,
        forbidden_tools=("rm",),
        fail_unhandled_errors=True,
        needs_context=True,
        vision="sees",
    )
    assert answers(ruled) == answers(Persona("judge", accuracy=0.7, labels=PASS_FAIL, seed=3))
