"""``cross-judge review`` on an items file that is not UTF-8: one error naming the line, the
byte and how to re-encode the file, never a guess at another format; a later line that is
not UTF-8 is skipped with the same detail while the rest is judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.testing import VendorServer

from .conftest import ids_in, run, write_panel

pytestmark = pytest.mark.integration


def latin1_line(item_id: str, query: str) -> bytes:
    return json.dumps({"id": item_id, "query": query}, ensure_ascii=False).encode("latin-1")


def test_review_of_a_latin1_items_file_names_the_encoding_not_a_format(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items.jsonl"
    items.write_bytes(
        latin1_line("1", "café au lait, süß") + b"\n" + latin1_line("2", "naïve, résumé") + b"\n"
    )
    out = tmp_path / "out.jsonl"
    server.reset_stats()
    code, stdout, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 2 and stdout == "" and not out.exists()
    assert f"{items} is not UTF-8 text: line 1 has byte 0xE9 at position 26 of the line" in err
    assert "re-encode it as UTF-8, e.g. iconv -f WINDOWS-1252 -t UTF-8" in err
    assert "CSV" not in err and "Traceback" not in err
    assert server.stats()["requests"] == 0


def test_a_later_line_that_is_not_utf8_is_skipped_naming_its_byte_and_the_fix(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = tmp_path / "items.jsonl"
    good = [json.dumps({"id": f"i{n}", "query": f"{tag} {n}"}).encode() for n in range(5)]
    items.write_bytes(b"\n".join([*good, latin1_line("bad", f"{tag} café")]) + b"\n")
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 1
    assert sorted(ids_in(out)) == [f"i{n}" for n in range(5)]
    assert f"{items}:6: skipped: not UTF-8 text (byte 0xE9 at position" in err
    assert "re-encode the file as UTF-8" in err
