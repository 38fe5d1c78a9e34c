"""The answers journal of a resumable run (``cross_judge.critic._journal``): what it keeps,
for which items, and that a kill at any byte leaves it readable."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cross_judge import ConfigError, Usage, Verdict
from cross_judge.critic._journal import AnswerJournal, journal_path, judging_item
from cross_judge.transport import Completion, TokenLogprob

ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "a real subcategory"}'
USAGE = Usage(prompt_tokens=420, completion_tokens=37)


def completion(text: str = ANSWER) -> Completion:
    return Completion(text=text, usage=USAGE, model="m-1")


def verdict(cost: float | None = 0.0125, estimates: int = 0) -> Verdict:
    return Verdict(kind="KEEP", cost_usd=cost, cost_estimates=estimates)


def record(journal: AnswerJournal, item: str, key: str, **kwargs: object) -> None:
    with judging_item(item):
        journal.record(key, completion(), verdict(**kwargs))  # type: ignore[arg-type]


def reopened(path: Path, **kwargs: object) -> AnswerJournal:
    """The journal at ``path`` opened for a resume, and closed (what it kept stays readable)."""
    journal = AnswerJournal.open(path, resume=True, **kwargs)  # type: ignore[arg-type]
    journal.close()
    return journal


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return journal_path(tmp_path / "out.jsonl")


def test_the_journal_sits_beside_the_results_file(tmp_path: Path) -> None:
    assert journal_path(tmp_path / "out.jsonl") == tmp_path / "out.jsonl.journal.jsonl"


def test_a_recorded_answer_comes_back_on_resume_with_its_usage_and_cost(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1", cost=0.0125, estimates=1)
    journal.close()

    kept = reopened(path).take("k1", "critic-a")

    assert kept is not None
    assert (kept.item, kept.completion.text, kept.completion.usage) == ("id-1", ANSWER, USAGE)
    assert (kept.cost_usd, kept.cost_estimates) == (0.0125, 1)


def test_token_probabilities_and_a_lone_surrogate_come_back_as_they_were(path: Path) -> None:
    tokens = (TokenLogprob("KEEP", -0.1, (("KEEP", -0.1), ("REJECT", -2.5))),)
    text = '{"kind": "KEEP", "reasoning": "odd \ud800 text"}'
    journal = AnswerJournal.open(path)
    with judging_item("id-\udc80"):
        journal.record("k1", Completion(text=text, logprobs=tokens), verdict())
    journal.close()

    kept = reopened(path).take("k1", "a")

    assert kept is not None
    assert (kept.item, kept.completion.text, kept.completion.logprobs) == (
        "id-\udc80",
        text,
        tokens,
    )


def test_answers_of_items_already_in_the_results_are_dropped_from_the_file(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "written", "k1")
    record(journal, "in-flight", "k2")
    journal.close()

    again = reopened(path, done={"written"})

    assert (again.kept_answers, again.take("k1", "a")) == (1, None)
    assert [json.loads(line)["item"] for line in path.read_text().splitlines()] == ["in-flight"]


def test_each_kept_answer_serves_one_call(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "same-request")
    journal.close()
    again = reopened(path)

    assert again.take("same-request", "a") is not None
    assert again.take("same-request", "a") is None  # a second item with that text asks


def test_what_an_item_was_handed_is_its_share_once(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1", cost=0.01)
    record(journal, "id-1", "k2", cost=0.02, estimates=1)
    journal.close()
    again = reopened(path)
    with judging_item("id-1"):
        again.take("k1", "a")
        again.take("k2", "b")

    share = again.share_of("id-1")

    assert (share.calls, share.critics, share.cost_estimates) == (2, {"a", "b"}, 1)
    assert share.cost_usd == pytest.approx(0.03)
    assert share.usage.prompt_tokens == 2 * USAGE.prompt_tokens
    assert again.share_of("id-1").calls == 0


def test_the_kept_cost_leaves_out_the_items_counted_elsewhere(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1", cost=0.01)
    record(journal, "id-2", "k2", cost=0.02)
    record(journal, "id-3", "k3", cost=None)
    journal.close()

    again = reopened(path)

    assert again.kept_cost() == (pytest.approx(0.03), 1)
    assert again.kept_cost(excluding={"id-2"}) == (pytest.approx(0.01), 1)


def test_a_kill_at_any_byte_leaves_a_journal_that_opens_with_its_whole_lines(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # hundreds of rewrites: no disk flush
    journal = AnswerJournal.open(path)
    for item in ("i1", "i2"):
        with judging_item(item):
            journal.record(item, Completion(text="{}"), verdict())  # short lines: fewer cuts
    journal.close()
    whole = path.read_bytes()
    first_end = whole.index(b"\n") + 1

    for cut in range(len(whole) + 1):
        path.write_bytes(whole[:cut])
        again = reopened(path)
        whole_lines = whole[: first_end if cut < len(whole) else cut] if cut >= first_end else b""
        assert again.kept_answers == whole_lines.count(b"\n"), cut
        assert again.passed_over == (cut not in (0, first_end, len(whole))), cut
        assert path.read_bytes() == whole_lines, cut  # rewritten without the torn line


def test_answers_appended_after_a_torn_line_are_read_on_the_next_resume(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1")
    journal.close()
    path.write_bytes(path.read_bytes()[:-9])  # torn by a kill
    resumed = AnswerJournal.open(path, resume=True)
    record(resumed, "id-2", "k2")
    resumed.close()

    again = reopened(path)

    assert (again.kept_answers, again.passed_over) == (1, 0)
    assert again.take("k2", "a") is not None


def test_a_line_of_another_version_or_shape_is_passed_over(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1")
    journal.close()
    good = path.read_text()
    path.write_text(
        good.replace('"v":1', '"v":2')
        + good.replace('"cost_usd":0.0125', '"cost_usd":-1')
        + "[1, 2]\n"
        + good
    )

    again = reopened(path)

    assert (again.kept_answers, again.passed_over) == (1, 3)


def test_a_fresh_run_refuses_a_journal_holding_answers_naming_resume(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1")
    journal.close()

    with pytest.raises(ConfigError, match=r"interrupted run of out\.jsonl.*--resume.*delete"):
        AnswerJournal.open(path)


def test_the_journal_file_is_readable_by_its_owner_only(path: Path) -> None:
    AnswerJournal.open(path).close()

    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_remove_deletes_the_journal_of_a_complete_run(path: Path) -> None:
    journal = AnswerJournal.open(path)
    record(journal, "id-1", "k1")

    journal.remove()

    assert not path.exists()


def test_a_failed_write_is_counted_not_raised(path: Path) -> None:
    journal = AnswerJournal.open(path)
    journal.close()

    record(journal, "id-1", "k1")  # after close: the write fails

    assert (journal.recorded, journal.write_errors) == (0, 1)
