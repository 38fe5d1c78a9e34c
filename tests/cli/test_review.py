"""The ``cross-judge`` command, run in-process: ``review``'s happy path, each bad input
with its exit code and message (never a traceback), items files that are not JSON Lines,
text that is not Unicode, and why calls failed."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from cross_judge.batch import ResultsFile
from cross_judge.testing import Reply, VendorServer

from .conftest import EXAMPLES, ids_in, run, write_items, write_panel

pytestmark = pytest.mark.integration


# -- review -------------------------------------------------------------------------------------


def test_review_judges_every_item_and_prints_the_summary(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(5)])
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 0, err
    assert sorted(ids_in(out)) == [f"i{n}" for n in range(5)]
    assert "consensus" in stdout and "Krippendorff's alpha" in stdout
    assert "this run: judged 5 items" in stdout
    assert "Traceback" not in err


def test_review_keeps_extra_keys_in_meta(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    row = {"id": "x", "query": tag, "meta": {"source": "s"}, "batch": 7}
    out = tmp_path / "out.jsonl"
    code, _, _ = run(
        capsys,
        "review",
        write_items(tmp_path, [row]),
        "--panel",
        write_panel(tmp_path, server),
        "--out",
        out,
    )
    assert code == 0
    assert next(ResultsFile.read(out)).meta == {"source": "s", "batch": 7}


def test_review_missing_items_file_exits_2_before_any_call(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    before = server.stats()["requests"]
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys,
        "review",
        tmp_path / "nope.jsonl",
        "--panel",
        write_panel(tmp_path, server),
        "--out",
        out,
    )
    assert code == 2
    assert err.startswith("cross-judge: error: ") and "nope.jsonl: no such items file" in err
    assert not out.exists() and server.stats()["requests"] == before


def test_review_missing_panel_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = write_items(tmp_path, [{"query": "q"}])
    code, _, err = run(
        capsys, "review", items, "--panel", tmp_path / "nope.yaml", "--out", tmp_path / "o"
    )
    assert code == 2 and "nope.yaml: no such panel file" in err


def test_review_unknown_vendor_exits_2_naming_field_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text("critics:\n  - name: a\n    model: m\n    vendor: acme\n", encoding="utf-8")
    items = write_items(tmp_path, [{"query": "q"}])
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", tmp_path / "o.jsonl")
    assert code == 2
    assert f"cross-judge: error: {panel}:4: critics[0].vendor: unknown vendor 'acme'" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_review_unknown_prompt_exits_2(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    panel = write_panel(tmp_path, server)
    panel.write_text(panel.read_text().replace("taxonomy-review@1", "nope@1"), encoding="utf-8")
    items = write_items(tmp_path, [{"query": "q"}])
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", tmp_path / "o.jsonl")
    assert code == 2 and "critics[0].prompt: no packaged prompt 'nope'" in err


def test_review_missing_key_variable_exits_2_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        "critics:\n  - name: a\n    model: deepseek-chat\n    api_key_env: CJ_TEST_UNSET_KEY\n",
        encoding="utf-8",
    )
    items = write_items(tmp_path, [{"query": "q"}])
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", tmp_path / "o.jsonl")
    assert code == 2 and "CJ_TEST_UNSET_KEY is not set" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_review_reports_a_non_json_line_and_goes_on(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(
        tmp_path, [{"id": "a", "query": tag}, "{not json", {"id": "b", "query": tag + "b"}]
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 1
    assert f"{items}:2: skipped: not JSON" in err
    assert sorted(ids_in(out)) == ["a", "b"]


def test_review_skips_a_later_duplicate_id_naming_both_lines(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    rows: list[object] = [{"id": "a", "query": tag}, {"id": "b", "query": tag + "b"}]
    rows.append({"id": "a", "query": tag + " again"})
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys,
        "review",
        write_items(tmp_path, rows),
        "--panel",
        write_panel(tmp_path, server),
        "--out",
        out,
    )
    assert code == 1
    assert ":3: skipped: duplicate id 'a' (first on line 1)" in err
    assert sorted(ids_in(out)) == ["a", "b"]
    assert server.item_requests().get(tag + " again") is None


def test_review_skips_an_item_without_query(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, [{"id": "a"}, {"id": "b", "query": tag}])
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 1
    assert ":1: skipped: 'query' must be the text to judge, got nothing" in err
    assert ids_in(out) == ["b"]


def test_review_skips_an_item_whose_context_lacks_a_template_field(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    (tmp_path / "domain.yaml").write_text(
        textwrap.dedent(
            """\
            id: domain-review
            version: "1"
            variables: [domain]
            user_prompt_template: |
              Judge this {domain} item; answer JSON {{"kind": "KEEP"}}.
              <item>
              {query}
              </item>
            """
        ),
        encoding="utf-8",
    )
    panel = write_panel(tmp_path, server)
    panel.write_text(
        panel.read_text().replace("taxonomy-review@1", "domain.yaml"), encoding="utf-8"
    )
    rows: list[object] = [{"id": "a", "query": tag}]
    rows.append({"id": "b", "query": tag + "b", "context": {"domain": "biology"}})
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), "--panel", panel, "--out", out
    )
    assert code == 1
    assert ":1: skipped: id 'a':" in err and "domain" in err
    assert ids_in(out) == ["b"]


def test_review_refuses_a_results_file_without_resume(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n", encoding="utf-8")
    items = write_items(tmp_path, [{"query": "q"}])
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 2 and "already holds results; pass --resume" in err
    assert out.read_text(encoding="utf-8") == "keep me\n"


def test_review_refuses_the_items_file_as_out(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items = write_items(tmp_path, [{"query": "q"}])
    code, _, err = run(
        capsys,
        "review",
        items,
        "--panel",
        write_panel(tmp_path, server),
        "--out",
        items,
        "--resume",
    )
    assert code == 2 and "is the items file" in err


def test_review_resume_skips_done_items_and_sends_them_no_request(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(5)]
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:3]), "--panel", panel, "--out", out)[0]
        == 0
    )
    code, stdout, err = run(
        capsys, "review", write_items(tmp_path, rows), "--panel", panel, "--out", out, "--resume"
    )
    assert code == 0
    assert "resuming:" in err and "holds 3 results" in err
    assert "3 items already in" in stdout
    assert sorted(ids_in(out)) == [f"i{n}" for n in range(5)]
    counts = server.item_requests()
    assert [counts[f"{tag} {n}"] for n in range(5)] == [3] * 5  # one request per critic


def test_review_items_with_failed_calls_exit_1_and_are_named(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    server.always("m-broken", Reply.status(400))
    try:
        panel = write_panel(tmp_path, server, models=("m-ok", "m-broken"))
        out = tmp_path / "out.jsonl"
        items = write_items(tmp_path, [{"id": "a", "query": tag}])
        code, stdout, err = run(capsys, "review", items, "--panel", panel, "--out", out)
    finally:
        server.always("m-broken", None)
    assert code == 1
    assert "1 item with a failed call: 'a'" in err and "--retry-failed" in err
    assert "items to retry (call failed or over budget)" in stdout


def test_review_retry_failed_judges_only_the_failed_items_again(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-ok", "m-flaky"))
    out = tmp_path / "out.jsonl"
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)])
    server.script("m-flaky", Reply.status(400))  # the first item's call fails, once
    code, _, _ = run(capsys, "review", items, "--panel", panel, "--out", out, "--concurrency", "1")
    assert code == 1
    server.reset_stats()
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--retry-failed")
    assert code == 0
    assert "removed 1 result with a failed call, to judge again: 'i0'" in err
    assert sorted(ids_in(out)) == ["i0", "i1", "i2", "i3"]
    assert server.item_requests() == {f"{tag} 0": 2}  # only i0, once per critic


def test_review_draws_progress_when_stderr_is_a_terminal(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tag: str,
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    items = write_items(tmp_path, [{"query": tag}])
    code, _, err = run(
        capsys,
        "review",
        items,
        "--panel",
        write_panel(tmp_path, server),
        "--out",
        tmp_path / "o.jsonl",
    )
    assert code == 0 and "judging" in err


def test_review_no_progress_turns_the_bar_off(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tag: str,
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    items = write_items(tmp_path, [{"query": tag}])
    code, _, err = run(
        capsys,
        "review",
        items,
        "--panel",
        write_panel(tmp_path, server),
        "--out",
        tmp_path / "o.jsonl",
        "--no-progress",
    )
    assert code == 0 and "judging" not in err


def test_review_takes_concurrency_from_the_panel(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server)
    panel.write_text("concurrency: 1\n" + panel.read_text(), encoding="utf-8")
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)])
    server.reset_stats()
    code, _, _ = run(capsys, "review", items, "--panel", panel, "--out", tmp_path / "o.jsonl")
    assert code == 0
    assert server.stats()["max_in_flight"] <= 3  # one item at a time, three critics


def test_review_rejects_a_concurrency_below_1(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items = write_items(tmp_path, [{"query": "q"}])
    panel = write_panel(tmp_path, server)
    code, _, err = run(
        capsys, "review", items, "--panel", panel, "--out", tmp_path / "o", "--concurrency", "0"
    )
    assert code == 2 and "expected a whole number >= 1" in err


def test_review_of_the_shipped_example_runs_offline_and_prints_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "review.jsonl"
    code, stdout, err = run(
        capsys, "review", EXAMPLES / "items.jsonl", "--panel", EXAMPLES / "panel.yaml", "--out", out
    )
    assert code == 0, err
    assert len(ids_in(out)) == 30
    assert "critics careful, lenient, reasoner are SIMULATED" in err
    assert "Krippendorff's alpha" in stdout and "consensus" in stdout
    assert "were simulated" in stdout


def test_real_vendor_example_panel_loads_and_needs_its_keys() -> None:
    from cross_judge.panel_file import PanelError, load_panel

    spec = load_panel(EXAMPLES / "panel.real.yaml")
    assert [c.vendor for c in spec.critics] == ["deepseek", "openai", "openrouter"]
    with pytest.raises(PanelError, match="DEEPSEEK_API_KEY is not set"):
        spec.build(environ={})
    keys = {"DEEPSEEK_API_KEY": "k1", "OPENAI_API_KEY": "k2", "OPENROUTER_API_KEY": "k3"}
    assert len(spec.build(environ=keys).critics) == 3


# -- items files that are not JSON Lines: one diagnosis, nothing billed --------------------------


@pytest.mark.parametrize(
    ("name", "content", "diagnosis"),
    [
        ("items.jsonl", b"", "is empty: there are no items to judge"),
        ("items.jsonl", b"\n  \n\n", "is empty: there are no items to judge"),
        (
            "items.json",
            b'[{"id": "1", "query": "a"}, {"id": "2", "query": "b"}]\n',
            "holds a JSON array, not JSON Lines",
        ),
        (
            "items.json",
            b'[\n  {\n    "id": "1",\n    "query": "a"\n  },\n  {\n    "id": "2"\n  }\n]\n',
            "holds a JSON array, not JSON Lines",
        ),
        (
            "items.json",
            b'{\n  "items": [\n    {"id": "1", "query": "a"}\n  ]\n}\n',
            "holds a JSON document spread over several lines",
        ),
        (
            "items.csv",
            b"id,query\n1,first text\n2,second text\n",
            "looks like CSV (comma-separated",
        ),
        ("items.txt", b"id\tquery\n1\tfirst\n2\tsecond\n", "looks like CSV (tab-separated"),
        ("items.jsonl", '{"query": "a"}\n'.encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
        ("items.txt", b"just some text\nanother line\n", "none of its first 2 lines is a JSON"),
    ],
)
def test_review_of_a_file_that_is_not_json_lines_gives_one_diagnosis(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes,
    diagnosis: str,
) -> None:
    items = tmp_path / name
    items.write_bytes(content)
    out = tmp_path / "out.jsonl"
    server.reset_stats()
    code, stdout, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 2
    assert diagnosis in err and "expected JSON Lines: one JSON object per line" in err
    assert err.count("cross-judge: error:") == 1 and "skipped" not in err
    assert stdout == "" and not out.exists()
    assert server.stats()["requests"] == 0


def test_a_json_array_diagnosis_shows_how_to_convert_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items.json"
    items.write_text('[{"query": "a"}]\n')
    _, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", "x.jsonl"
    )
    assert f"jq -c '.[]' {items} > items.jsonl" in err


def test_review_of_json_lines_with_a_bad_first_line_reports_that_line_and_goes_on(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, ["id,query", {"id": "a", "query": f"{tag} a"}])
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 1
    assert f"{items}:1: skipped: not JSON" in err
    assert ids_in(out) == ["a"]


# -- ids and text that are not Unicode -----------------------------------------------------------


def test_review_keeps_a_lone_surrogate_id_and_resumes_past_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    # json.dumps writes the id as the escape "\udc80": valid JSON, which json.loads keeps.
    items = write_items(
        tmp_path, [{"id": "\udc80", "query": f"{tag} odd"}, {"id": "b", "query": f"{tag} b"}]
    )
    assert '"\\udc80"' in items.read_text()
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out)
    assert code == 0, err
    assert "Traceback" not in err
    assert set(ids_in(out)) == {"\udc80", "b"}
    assert "\\udc80" in out.read_text(encoding="utf-8")  # written as an ASCII escape
    server.reset_stats()
    code, stdout, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")
    assert code == 0, err
    assert "2 items already in" in stdout
    assert server.stats()["requests"] == 0


def test_review_skips_a_query_holding_a_lone_surrogate_naming_its_line(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(
        tmp_path, [{"id": "a", "query": f"{tag} a"}, '{"id": "b", "query": "x\\ud800"}']
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 1
    assert f"{items}:2: skipped: 'query' holds a lone surrogate ('\\ud800' at character 1)" in err
    assert "Traceback" not in err and ids_in(out) == ["a"]


# -- why calls failed, and consensus that is no vote ---------------------------------------------


def test_review_says_why_every_call_of_a_critic_failed(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    server.always("m-gone", Reply.status(404, message="The model `m-gone` does not exist"))
    try:
        panel = write_panel(tmp_path, server, models=("m-ok", "m-gone"))
        items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
        code, stdout, err = run(
            capsys, "review", items, "--panel", panel, "--out", tmp_path / "o.jsonl"
        )
    finally:
        server.always("m-gone", None)
    assert code == 1
    assert (
        "critic 'gone': every call failed (3 of 3): bad_request (3): HTTP 404: The model "
        "`m-gone` does not exist. Check its model, base_url and key in"
    ) in err
    assert "failed calls" in stdout and "bad_request" in stdout and "HTTP 404" in stdout


def test_review_counts_a_fallback_consensus_apart_from_a_voted_unclear(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-fa", "m-fb"))
    panel.write_text(panel.read_text().replace("voting: majority", "voting: unanimous"))
    # Item 1: both answer UNCLEAR (a vote). Item 2: KEEP against REJECT: no unanimity, so
    # the strategy falls back to UNCLEAR, which is no vote for UNCLEAR.
    server.script("m-fa", Reply.content('{"kind": "UNCLEAR"}'), Reply.content('{"kind": "KEEP"}'))
    server.script("m-fb", Reply.content('{"kind": "UNCLEAR"}'), Reply.content('{"kind": "REJECT"}'))
    items = write_items(
        tmp_path, [{"id": "voted", "query": f"{tag} 1"}, {"id": "split", "query": f"{tag} 2"}]
    )
    code, stdout, err = run(
        capsys,
        "review",
        items,
        "--panel",
        panel,
        "--out",
        tmp_path / "o.jsonl",
        "--concurrency",
        "1",
    )
    assert code == 0, err
    assert re.search(r"^\s*UNCLEAR\s+1\s+50\.0%", stdout, re.MULTILINE)
    assert re.search(r"^\s*no consensus \(fallback UNCLEAR\)\s+1\s+50\.0%", stdout, re.MULTILINE)
