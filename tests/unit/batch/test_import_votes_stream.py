"""Votes voted item by item (``import_votes``, what ``cross-judge import`` runs) give the same
results file as ``BatchResult.from_votes``, from a compact table of the votes
(``VoteTable``, ``TextIds``); no network."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from cross_judge import ConfigError
from cross_judge.batch import BatchResult, dump_result, load_result
from cross_judge.batch._vote_table import TextIds, VoteTable
from cross_judge.batch.votes import NamedRows, import_votes, read_votes_file


def random_rows(seed: int) -> list[dict[str, Any]]:
    """Votes of up to five voters on 40 items, shuffled, with confidences, reasoning (some
    long), repeated rows and ids outside ASCII."""
    rng = random.Random(seed)
    rows = []
    for i in range(40):
        for voter in rng.sample(["ann", "bob", "cat", "dan", "eve"], rng.randint(1, 4)):
            row = {
                "item": f"q{i}" if i % 7 else f"é\u2028{i}",
                "critic": voter,
                "label": rng.choice(["PASS", "FAIL", "pass", "MAYBE"]),
                "p": rng.choice([None, 0.5, 0.9, "0.25", 1]),
                "why": rng.choice([None, "ok", "", "long " * 80]),
            }
            rows.append(row)
            if rng.random() < 0.1:
                rows.append(dict(row))
    rng.shuffle(rows)
    return rows


@pytest.mark.parametrize(
    ("voting", "kwargs"),
    [
        ("majority", {}),
        ("majority", {"priority": ["FAIL"]}),
        ("weighted", {}),
        ("unanimous", {}),
        ("dawid_skene", {}),
    ],
)
def test_import_votes_writes_the_lines_from_votes_would(
    voting: str, kwargs: dict[str, Any], tmp_path: Path
) -> None:
    for seed in range(3):
        rows = random_rows(seed)
        options: dict[str, Any] = {"confidence": "p", "reasoning": "why", "voting": voting}
        batch = BatchResult.from_votes(rows, voting_kwargs=kwargs, people=["ann"], **options)
        imported = import_votes(
            rows, voting_kwargs=kwargs, people=["ann"], spill=tmp_path, **options
        )
        lines = list(imported.lines())
        assert lines == [dump_result(r) for r in batch.verdicts]
        assert imported.n_votes == sum(len(r.verdicts) for r in batch.verdicts)
        assert imported.critics == batch.critics and imported.human_critics == ["ann"]


def test_items_with_the_same_votes_each_keep_their_own_id() -> None:
    rows = [(f"q{i}", voter, "PASS") for i in range(3) for voter in ("ann", "bob")]
    seen: list[tuple[str, str, int]] = []
    lines = list(
        import_votes(rows).lines(lambda r: seen.append((r.query_id, r.consensus, len(r.verdicts))))
    )
    assert seen == [("q0", "PASS", 2), ("q1", "PASS", 2), ("q2", "PASS", 2)]
    assert [load_result(line).query_id for line in lines] == ["q0", "q1", "q2"]


def test_import_votes_names_both_lines_of_a_voters_two_labels(tmp_path: Path) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_text("item,critic,label\nq1,ann,PASS\nq2,ann,PASS\nq1,ann,FAIL\n")
    imported = import_votes(read_votes_file(votes))
    with pytest.raises(ConfigError, match=rf"{votes} line 4: 'ann' labels .* {votes} line 2"):
        list(imported.lines())


def test_import_votes_refuses_arguments_the_strategy_refuses_before_reading_a_row() -> None:
    def rows() -> Any:
        raise AssertionError("read")
        yield

    with pytest.raises(ConfigError, match="priority"):
        import_votes(rows(), voting_kwargs={"priority": "FAIL"})


def test_text_ids_number_texts_in_first_seen_order_past_the_first_table() -> None:
    ids = TextIds()
    texts = [f"item-{i}" for i in range(5000)] + ["é", "\ud800", ""]
    assert [ids.number(t) for t in texts] == list(range(len(texts)))
    assert [ids.number(t) for t in reversed(texts)] == list(reversed(range(len(texts))))
    assert [ids.text(n) for n in range(len(texts))] == texts


def test_vote_table_keeps_reasoning_in_a_temporary_file_beside_the_output(tmp_path: Path) -> None:
    table = VoteTable(spill=str(tmp_path))
    table.add("q1", "ann", "PASS", None, "", 1)
    table.add("q1", "bob", "PASS", 0.5, "clear é", 2)
    grouped = list(table.items(lambda *clash: pytest.fail(f"clash {clash}")))
    assert grouped == [("q1", [0, 1])]
    assert [table.reasoning(v) for v in (0, 1)] == ["", "clear é"]
    assert [table.confidence(v) for v in (0, 1)] == [None, 0.5]
    table.close()
    assert list(tmp_path.iterdir()) == []  # the file has no name


def test_a_csv_file_read_by_its_columns_gives_the_votes_its_rows_give(tmp_path: Path) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_text(
        "item,critic,label,label,p,why\n"  # a repeated column: the last one counts
        'q1,ann,X,PASS,0.9,"two\nlines"\n'
        "q1,bob,X,FAIL,,\n"
        "\n"
        "q2,ann,X,PASS,0.5\n"  # a short row: its missing cells are missing
        "q2,cat,X,FAIL, 1 ,ok\n"
    )
    options: dict[str, Any] = {"confidence": "p", "reasoning": "why", "label": "label"}
    by_columns = list(import_votes(read_votes_file(votes), **options).lines())
    by_rows = list(import_votes(NamedRows(iter(read_votes_file(votes))), **options).lines())
    assert by_columns == by_rows
    first, second = (load_result(line) for line in by_columns)
    assert [v.reasoning for v in first.verdicts] == ["two\nlines", ""]
    assert [(v.kind, v.confidence) for v in second.verdicts] == [("PASS", 0.5), ("FAIL", 1.0)]
