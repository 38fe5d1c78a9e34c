"""``cross-judge review --shard i/N``: N runs, one shard each, judge every item of a file
exactly once, whatever the input order, split by :func:`cross_judge.batch.shard_of` on the
item's id; a bad value is a usage error; ``--resume`` refuses another shard."""

from __future__ import annotations

import gc
import json
import random
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult, Item, shard_of
from cross_judge.cli import main

pytestmark = pytest.mark.integration

PANEL = """\
critics:
  - name: first
    vendor: simulated
    persona: {accuracy: 0.8}
  - name: second
    vendor: simulated
    persona: {accuracy: 0.7}
"""
N_ITEMS = 200


def item_lines(n: int = N_ITEMS) -> list[str]:
    """``n`` items; every seventh has no id, so its default id (from its query) decides."""
    lines = []
    for i in range(n):
        query = f"category {i}: is this a well-formed taxonomy node?"
        value: dict[str, object] = {"query": query} if i % 7 == 0 else {"id": f"item-{i}"}
        value["query"] = query
        lines.append(json.dumps(value) + "\n")
    return lines


def write(folder: Path, lines: list[str]) -> tuple[Path, Path]:
    items, panel = folder / "items.jsonl", folder / "panel.yaml"
    items.write_text("".join(lines), encoding="utf-8")
    panel.write_text(PANEL, encoding="utf-8")
    return items, panel


def review(items: Path, panel: Path, out: Path, *extra: str) -> int:
    return main(["review", str(items), "--panel", str(panel), "--out", str(out), *extra])


def ids_in(out: Path) -> list[str]:
    return [result.query_id for result in BatchResult.from_jsonl(out).verdicts]


def expected_ids(lines: list[str]) -> set[str]:
    return {Item.from_value(json.loads(line)).id for line in lines}


@pytest.mark.parametrize("n", [1, 3, 8])
def test_the_shards_of_a_file_judge_every_item_exactly_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int
) -> None:
    lines = item_lines()
    items, panel = write(tmp_path, lines)
    judged: list[str] = []
    for i in range(1, n + 1):
        out = tmp_path / f"shard-{i}.jsonl"
        assert review(items, panel, out, "--shard", f"{i}/{n}", "--no-progress") == 0
        shard_ids = ids_in(out)
        assert all(shard_of(item_id, n) == i for item_id in shard_ids)
        judged += shard_ids
    assert len(judged) == len(set(judged)) == N_ITEMS  # no overlap, nothing missing
    assert set(judged) == expected_ids(lines)
    gc.collect()  # panel-file simulators stop with their panels


def test_the_split_does_not_depend_on_the_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = item_lines(60)
    shuffled = lines[:]
    random.Random(3).shuffle(shuffled)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_order, panel = write(tmp_path / "a", lines)
    reordered, _ = write(tmp_path / "b", shuffled)
    assert shuffled != lines
    for i in (1, 2, 3):
        first, second = tmp_path / f"a-{i}.jsonl", tmp_path / f"b-{i}.jsonl"
        assert review(in_order, panel, first, "--shard", f"{i}/3", "--no-progress") == 0
        assert review(reordered, panel, second, "--shard", f"{i}/3", "--no-progress") == 0
        assert ids_in(first) and set(ids_in(first)) == set(ids_in(second))
    gc.collect()


def test_the_summary_and_manifest_count_only_the_shards_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = item_lines(40)
    items, panel = write(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    mine = sum(shard_of(item_id, 4) == 2 for item_id in expected_ids(lines))
    assert review(items, panel, out, "--shard", "2/4", "--no-progress") == 0  # not an error
    stdout = " ".join(capsys.readouterr().out.split())
    assert f"this run: judged {mine} items" in stdout
    assert f"shard 2/4: {40 - mine} items of other shards passed over" in stdout
    manifest = json.loads((tmp_path / "out.jsonl.manifest.json").read_text("utf-8"))
    (run,) = manifest["runs"]
    assert run["shard"] == {"index": 2, "count": 4}
    assert run["totals"]["items_judged"] == mine
    assert run["totals"]["items_other_shards"] == 40 - mine
    assert run["totals"]["lines_skipped"] == 0
    gc.collect()


@pytest.mark.parametrize("value", ["3/2", "0/4", "a/b", "2", "2/0", "-1/4", "1/2/3", ""])
def test_a_bad_shard_is_a_usage_error_that_says_the_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    items, panel = write(tmp_path, item_lines(3))
    out = tmp_path / "out.jsonl"
    assert review(items, panel, out, f"--shard={value}") == 2  # "=": "-1/4" is no option
    err = " ".join(capsys.readouterr().err.split())
    assert "--shard" in err and "1 <= i <= N" in err and "e.g. --shard 2/8" in err
    assert not out.exists()  # refused before anything was judged


@pytest.mark.parametrize(
    ("first", "then", "said", "fix"),
    [
        (["--shard", "2/4"], ["--shard", "3/4"], "shard 2/4 -> 3/4", "--shard 2/4"),
        (["--shard", "2/4"], [], "shard 2/4 -> none (the whole file)", "--shard 2/4"),
        ([], ["--shard", "1/2"], "shard none (the whole file) -> 1/2", "without --shard"),
        (["--shard", "2/4"], ["--shard", "2/3"], "shard 2/4 -> 2/3", "--shard 2/4"),
    ],
)
def test_resume_with_another_shard_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    first: list[str],
    then: list[str],
    said: str,
    fix: str,
) -> None:
    items, panel = write(tmp_path, item_lines(30))
    out = tmp_path / "out.jsonl"
    assert review(items, panel, out, *first, "--no-progress") == 0
    before = out.read_bytes()
    capsys.readouterr()
    for resume in ("--resume", "--retry-failed"):
        assert review(items, panel, out, *then, resume, "--no-progress") == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"--resume with another shard ({said})" in err
        assert f"Resume it {fix}, or write" in err and "another --out" in err
    # --allow-panel-change is about the panel; the shard is still refused
    assert review(items, panel, out, *then, "--resume", "--allow-panel-change") == 2
    assert out.read_bytes() == before
    gc.collect()


def test_resume_with_the_same_shard_continues_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = item_lines(30)
    items, panel = write(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    assert review(items, panel, out, "--shard", "1/2", "--no-progress") == 0
    first = ids_in(out)
    kept = out.read_text("utf-8").splitlines(keepends=True)[: len(first) // 2]
    out.write_text("".join(kept), encoding="utf-8")  # as if stopped half-way
    assert review(items, panel, out, "--shard", "1/2", "--resume", "--no-progress") == 0
    assert sorted(ids_in(out)) == sorted(first)
    gc.collect()


def test_an_id_on_another_shard_is_not_reported_as_a_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = item_lines(20)
    other = next(line for line in lines if shard_of(Item.from_value(json.loads(line)).id, 2) == 2)
    items, panel = write(tmp_path, [*lines, other])
    assert review(items, panel, tmp_path / "one.jsonl", "--shard", "1/2", "--no-progress") == 0
    assert "duplicate" not in capsys.readouterr().err
    assert review(items, panel, tmp_path / "two.jsonl", "--shard", "2/2", "--no-progress") == 1
    assert "duplicate id" in capsys.readouterr().err  # its own shard reports it
    gc.collect()


def test_the_progress_total_counts_the_shards_items_still_to_judge(tmp_path: Path) -> None:
    from cross_judge.cli._items import count_shard_items

    lines = item_lines(50)
    items, _ = write(tmp_path, [*lines, "not json\n", "[1, 2]\n", '"a bare string"\n'])
    mine = {item_id for item_id in expected_ids(lines) if shard_of(item_id, 3) == 3}
    assert count_shard_items(items, (3, 3), set()) == len(mine)
    assert count_shard_items(items, (3, 3), set(list(mine)[:4])) == len(mine) - 4


# -- the split itself (the library function) ------------------------------------------------


def test_known_ids_keep_their_shards() -> None:
    # Pinned: a change to the hash would move items between machines mid-job.
    assert [shard_of(item_id, 8) for item_id in ("a", "b", "item-1", "42")] == [4, 6, 4, 2]
    assert shard_of("item-1", 3) == 1 and shard_of("item-1", 1000) == 452


def test_an_item_without_an_id_is_placed_by_its_default_id() -> None:
    item = Item.from_value({"query": "x" * 200})
    assert item.id != "x" * 200  # a long query's default id is a prefix and a digest
    assert shard_of(item.id, 5) == shard_of(Item.from_value("x" * 200).id, 5)


def test_every_shard_gets_a_fair_part() -> None:
    counts = [0] * 8
    for n in range(8000):
        counts[shard_of(f"id-{n}", 8) - 1] += 1
    assert min(counts) > 850 and max(counts) < 1150  # 1000 each, give or take 5 sigma


@pytest.mark.parametrize("n", [0, -3, True, 2.0])
def test_a_shard_count_below_one_is_refused(n: object) -> None:
    with pytest.raises(ValueError, match="whole number >= 1"):
        shard_of("a", n)  # type: ignore[arg-type]  # the wrong type is the point
