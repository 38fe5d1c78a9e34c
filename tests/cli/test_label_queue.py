"""``cross-judge label-queue``: the page and the queue it writes, what it prints, and its
errors (exit 2 with the fix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult
from cross_judge.stats._gold import load_gold
from cross_judge.stats.label_queue import LabelQueue

from .conftest import run


def test_writes_the_page_and_the_queue_beside_it(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    page = tmp_path / "queue.html"
    code, _, err = run(capsys, "label-queue", results, "-n", 3, "--seed", 5, "--out", page)
    assert code == 0, err
    queue = LabelQueue.read(tmp_path / "queue.jsonl")
    assert len(queue) == 3 and queue.strategy == "uncertain" and queue.seed == 5
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert all(item in text for item in queue.items)
    assert queue.population == len(BatchResult.from_jsonl(results))


def test_the_draw_is_the_librarys_for_the_same_seed(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    page = tmp_path / "q.html"
    args = ("label-queue", results, "-n", 2, "--strategy", "disputed", "--seed", 9)
    assert run(capsys, *args, "--out", page)[0] == 0
    expected = BatchResult.from_jsonl(results).label_queue(2, strategy="disputed", seed=9)
    assert LabelQueue.read(tmp_path / "q.jsonl") == expected


def test_prints_what_it_chose_and_how_to_use_the_export(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    page = tmp_path / "queue.html"
    code, out, _ = run(
        capsys, "label-queue", results, "-n", 2, "--strategy", "uniform", "--out", page
    )
    assert code == 0
    queue = LabelQueue.read(tmp_path / "queue.jsonl")
    assert "2 of 4 items, chosen by uniform" in out
    assert all(repr(item) in out for item in queue.items)
    assert str(page) in out and str(tmp_path / "queue.jsonl") in out
    assert f"cross-judge stats {results} --gold labels.jsonl" in out


def test_exported_labels_go_straight_into_stats_gold(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    """Lines as the page's Export writes them (id, label, probability) are a gold file."""
    assert run(capsys, "label-queue", results, "-n", 2, "--out", tmp_path / "q.html")[0] == 0
    queue = LabelQueue.read(tmp_path / "q.jsonl")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"id": i, "label": "KEEP", "probability": queue.probabilities[i]}) + "\n"
            for i in queue.items
        ),
        encoding="utf-8",
    )
    assert load_gold(labels) == dict.fromkeys(queue.items, "KEEP")
    code, out, err = run(capsys, "stats", results, "--gold", labels)
    assert code == 0, err
    assert "gold" in out.lower()


def test_the_page_hides_the_jury_by_default_and_says_how_to_show_it(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    page = tmp_path / "q.html"
    code, out, err = run(capsys, "label-queue", results, "-n", 2, "--out", page)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert '"showJury":false' in text.replace(" ", "")
    assert "The jury's answers are hidden" in text and 'id="jury-button"' in text
    assert "the jury's answers stay hidden unless the labeller presses h" in out


def test_show_jury_starts_the_page_with_the_jury_shown_and_says_so(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    page = tmp_path / "q.html"
    code, out, err = run(capsys, "label-queue", results, "-n", 2, "--show-jury", "--out", page)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert '"showJury":true' in text.replace(" ", "")
    assert "shown on every item (--show-jury)" in text
    assert '"jury_shown": true' in out and "allow_jury_shown=True" in out


def test_the_page_offers_the_labels_of_every_result_not_only_the_queued_ones(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    page = tmp_path / "q.html"
    gold = tmp_path / "gold.jsonl"  # leaves only the unanimous KEEP items to queue
    gold.write_text('{"id": "s1", "label": "KEEP"}\n{"id": "s2", "label": "REJECT"}\n')
    code, _, err = run(capsys, "label-queue", results, "-n", 1, "--exclude", gold, "--out", page)
    assert code == 0, err
    assert 'data-label="REJECT"' in page.read_text(encoding="utf-8")


def test_stats_gold_notes_exported_labels_made_with_the_jury_shown(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"id": "u1", "label": "KEEP", "probability": 0.5, "jury_shown": True},
        {"id": "s1", "label": "REJECT", "probability": 0.5, "jury_shown": False},
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, err = run(capsys, "stats", results, "--gold", labels)
    assert code == 0, err
    assert "1 of the 2 gold labels were made with the jury's answers shown" in out


@pytest.mark.parametrize("label", ["keep", "MAYBE", " KEEP ", "ERROR"])
def test_stats_gold_refuses_what_every_gold_reader_refuses(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path, label: str
) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "u1", "label": label}) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "stats", results, "--gold", labels)
    assert code == 2 and repr(label) in err and "Traceback" not in err


def test_exclude_never_queues_labelled_items(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "s1", "label": "KEEP"}\n{"id": "u1", "label": "KEEP"}\n')
    code, _, err = run(
        capsys, "label-queue", results, "-n", 2, "--exclude", gold, "--out", tmp_path / "q.html"
    )
    assert code == 0, err
    queue = LabelQueue.read(tmp_path / "q.jsonl")
    assert sorted(queue.items) == ["s2", "u2"] and queue.population == 2


@pytest.mark.parametrize("n", ["0", "5"])
def test_n_out_of_range_exits_2_saying_the_range(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path, n: str
) -> None:
    code, _, err = run(capsys, "label-queue", results, "-n", n, "--out", tmp_path / "q.html")
    assert code == 2
    assert f"-n {n}: choose from 1 to 4" in err
    assert not (tmp_path / "q.html").exists() and not (tmp_path / "q.jsonl").exists()


def test_n_counts_only_items_not_excluded(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "s1", "label": "KEEP"}\n')
    code, _, err = run(
        capsys, "label-queue", results, "-n", 4, "--exclude", gold, "--out", tmp_path / "q.html"
    )
    assert code == 2 and "choose from 1 to 3" in err and "(1 excluded)" in err


def test_an_unknown_strategy_exits_2_naming_the_strategies(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        "label-queue",
        results,
        "-n",
        2,
        "--strategy",
        "random",
        "--out",
        tmp_path / "q.html",
    )
    assert code == 2
    assert "'random' is not one of uncertain, disputed, uniform, stratified" in err


def test_missing_results_exit_2_saying_what_to_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, "label-queue", tmp_path / "none.jsonl", "-n", 2, "--out", tmp_path / "q.html"
    )
    assert code == 2 and "no such results file; pass the OUT.jsonl of cross-judge review" in err


def test_a_missing_exclude_file_exits_2(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        "label-queue",
        results,
        "-n",
        2,
        "--exclude",
        tmp_path / "none.jsonl",
        "--out",
        tmp_path / "q.html",
    )
    assert code == 2 and "--exclude" in err and "no such file" in err


def test_a_bad_floor_exits_2(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, "label-queue", results, "-n", 2, "--floor", "0", "--out", tmp_path / "q.html"
    )
    assert code == 2 and "floor must be a number > 0" in err


def test_a_page_that_would_write_the_queue_over_the_results_is_refused(
    capsys: pytest.CaptureFixture[str], results: Path
) -> None:
    before = results.read_bytes()
    code, _, err = run(
        capsys, "label-queue", results, "-n", 2, "--out", results.with_suffix(".html")
    )
    assert code == 2 and "would write the queue over" in err
    assert results.read_bytes() == before


def test_out_must_be_an_html_page(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "label-queue", results, "-n", 2, "--out", tmp_path / "q.jsonl")
    assert code == 2 and "name the page QUEUE.html" in err


def test_a_missing_folder_for_the_page_exits_2(
    capsys: pytest.CaptureFixture[str], results: Path, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "label-queue", results, "-n", 2, "--out", tmp_path / "no" / "q.html")
    assert code == 2 and "does not exist" in err
