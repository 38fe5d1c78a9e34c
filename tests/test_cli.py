"""The ``cross-judge`` command, run in-process: each subcommand's happy path, and each bad
input with its exit code and message (never a traceback)."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble, Verdict
from cross_judge._version import __version__
from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.cli import main
from cross_judge.testing import Persona, Reply, VendorServer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    default = Persona("default", labels=("KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR"))
    with VendorServer(default_persona=default, count_items=True) as srv:
        yield srv


def write_panel(
    folder: Path,
    server: VendorServer,
    *,
    models: tuple[str, ...] = ("m-a", "m-b", "m-c"),
) -> Path:
    critics = "".join(
        f"""
  - name: {model.removeprefix("m-")}
    model: {model}
    vendor: custom
    base_url: {server.url}
    prompt: taxonomy-review@1
    max_retries: 0"""
        for model in models
    )
    path = folder / "panel.yaml"
    path.write_text(f"voting: majority\ncritics:{critics}\n", encoding="utf-8")
    return path


def write_items(folder: Path, rows: list[object]) -> Path:
    """Rows: dicts become JSON lines, strings are written verbatim."""
    path = folder / "items.jsonl"
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ids_in(path: Path) -> list[str]:
    return [r.query_id for r in ResultsFile.read(path)]


@pytest.fixture
def tag(request: pytest.FixtureRequest) -> str:
    """Makes item texts unique to the test, so the shared server's counts stay apart."""
    return request.node.name


# -- basics -------------------------------------------------------------------------------------


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "version")[:2] == (0, f"cross-judge {__version__}\n")


def test_usage_error_returns_2_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "review", "items.jsonl", "--out", "x.jsonl")
    assert code == 2
    assert "the following arguments are required: --panel" in err


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


# -- revote -------------------------------------------------------------------------------------


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Four stored results: two unanimous KEEP, two 2-1 splits (majority REJECT)."""
    critics = [
        Critic(name=n, model="m", vendor="custom", base_url="http://127.0.0.1:9/v1") for n in "abc"
    ]
    ensemble = Ensemble(critics)
    votes = {"u1": "KKK", "u2": "KKK", "s1": "RRK", "s2": "KRR"}
    labels = {"K": "KEEP", "R": "REJECT"}
    batch = BatchResult(
        verdicts=[
            ensemble.aggregate_verdicts(
                [
                    Verdict(kind=labels[k], confidence=0.9, critic_id=n)
                    for n, k in zip("abc", ks, strict=True)
                ],
                query_id=item,
            )
            for item, ks in votes.items()
        ],
        critics=list("abc"),
        voting="majority",
    )
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    return path


def test_revote_writes_the_new_file_and_counts_consensus_changes(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new.jsonl"
    code, stdout, _ = run(
        capsys,
        "revote",
        results,
        "--voting",
        "unanimous",
        "--voting-kwargs",
        '{"fallback": "UNCLEAR"}',
        "--out",
        new,
    )
    assert code == 0
    assert "consensus changed on 2 of 4 items (majority -> unanimous)" in stdout
    assert "REJECT" in stdout and "UNCLEAR" in stdout
    revoted = {r.query_id: r.consensus for r in ResultsFile.read(new)}
    assert revoted == {"u1": "KEEP", "u2": "KEEP", "s1": "UNCLEAR", "s2": "UNCLEAR"}


def test_revote_without_out_writes_nothing(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(tmp_path.iterdir())
    code, stdout, _ = run(capsys, "revote", results, "--voting", "unanimous")
    assert code == 0 and "nothing written" in stdout
    assert sorted(tmp_path.iterdir()) == before


def test_revote_refuses_an_existing_out_and_leaves_it_untouched(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new.jsonl"
    new.write_text("precious\n", encoding="utf-8")
    code, _, err = run(capsys, "revote", results, "--voting", "unanimous", "--out", new)
    assert code == 2 and "already exists; revote never overwrites results" in err
    assert new.read_text(encoding="utf-8") == "precious\n"


def test_revote_refuses_to_overwrite_the_results_it_reads(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = results.read_bytes()
    code, _, err = run(capsys, "revote", results, "--voting", "unanimous", "--out", results)
    assert code == 2 and "is the results file being re-voted" in err
    assert results.read_bytes() == before


def test_revote_invalid_voting_kwargs_json_exits_2(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "revote", results, "--voting", "majority", "--voting-kwargs", "{bad")
    assert code == 2 and "--voting-kwargs is not valid JSON" in err


def test_revote_unknown_strategy_exits_2(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "revote", results, "--voting", "plurality")
    assert code == 2 and "Unknown voting strategy 'plurality'" in err


def test_revote_missing_results_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "revote", tmp_path / "nope.jsonl", "--voting", "majority")
    assert code == 2 and "no such results file" in err


# -- stats --------------------------------------------------------------------------------------


def test_stats_prints_agreement_tables(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "stats", results)
    assert code == 0
    for heading in (
        "Krippendorff's alpha (nominal)",
        "Fleiss' kappa",
        "pairwise agreement",
        "Cohen's kappa",
        "critics",
        "consensus",
    ):
        assert heading in stdout
    assert "items with disagreement" in stdout


def test_stats_numeric_level_on_text_labels_exits_2_with_a_hint(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "stats", results, "--level", "interval")
    assert code == 2 and "needs numbers" in err and "--order" in err


def test_stats_ordinal_level_takes_the_label_order(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "stats", results, "--level", "ordinal", "--order", "REJECT,KEEP")
    assert code == 0 and "Krippendorff's alpha (ordinal)" in stdout


def test_stats_empty_results_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "out.jsonl"
    empty.write_text("", encoding="utf-8")
    code, _, err = run(capsys, "stats", empty)
    assert code == 2 and "holds no results" in err


def test_stats_on_a_torn_results_file_says_to_resume(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = results.read_bytes()
    results.write_bytes(data[: len(data) - 10])
    code, _, err = run(capsys, "stats", results)
    assert code == 2 and "the last line is torn" in err and "--resume" in err


def test_stats_file_that_is_not_results_exits_2_with_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "out.jsonl"
    bad.write_text('{"query": "q"}\n', encoding="utf-8")
    code, _, err = run(capsys, "stats", bad)
    assert code == 2 and "line 1: not a result record" in err


# -- prompts ------------------------------------------------------------------------------------


def test_prompts_list_shows_refs_and_labels(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "prompts", "list")
    assert code == 0
    assert "taxonomy-review@1" in stdout and "pass-fail@1" in stdout and "PASS, FAIL" in stdout


def test_prompts_show_prints_the_yaml_fields(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    code, stdout, _ = run(capsys, "prompts", "show", "taxonomy-review@1")
    assert code == 0
    fields = yaml.safe_load(stdout)
    assert fields["id"] == "taxonomy-review" and fields["version"] == "1"
    assert "{query}" in fields["user_prompt_template"]
    assert fields["labels"] == ["KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR"]


def test_prompts_show_unknown_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "prompts", "show", "nope@1")
    assert code == 2 and "no packaged prompt 'nope'" in err


def test_prompts_validate_accepts_a_good_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        'id: mine\nversion: "3"\nuser_prompt_template: "<item>{query}</item>"\n', encoding="utf-8"
    )
    assert run(capsys, "prompts", "validate", path)[:2] == (0, "ok: mine@3\n")


def test_prompts_validate_reports_field_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text('id: mine\nversion: "3"\nuser_promt_template: "{query}"\n', encoding="utf-8")
    code, _, err = run(capsys, "prompts", "validate", path)
    assert code == 2
    assert "cross-judge: error:" in err and "'user_promt_template' (line 3)" in err


def test_prompts_validate_missing_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "prompts", "validate", tmp_path / "nope.yaml")
    assert code == 2 and "no such prompt file" in err


def test_prompts_without_an_action_prints_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "prompts")
    assert code == 2 and "validate" in err


# -- cache --------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default cache location, inside the test's tmp folder (never the user's)."""
    folder = tmp_path / "cache-dir"
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(folder))
    return folder


def fill_cache(path: Path, entries: int) -> None:
    import anyio

    from cross_judge.critic.cache import ResponseCache
    from cross_judge.transport import Completion

    async def fill() -> None:
        async with ResponseCache(path) as cache:
            for i in range(entries):
                await cache.put(f"key-{i}", Completion(text=f"answer {i}", model="m"))

    anyio.run(fill)


def entries_in(path: Path) -> int:
    from cross_judge.critic.cache import ResponseCache

    with ResponseCache(path) as cache:
        return cache.stats().entries


def test_cache_stats_prints_the_file_entries_and_size(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 3)
    code, stdout, _ = run(capsys, "cache", "stats", "--path", path)
    assert code == 0
    assert f"response cache: {path}" in stdout
    assert re.search(r"entries\s+3\b", stdout)
    assert re.search(r"size on disk\s+[\d.]+ kB", stdout)
    assert "oldest entry" in stdout and "newest entry" in stdout
    assert not cache_dir.exists()


def test_cache_stats_reads_the_default_cache_in_cross_judge_cache_dir(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill_cache(cache_dir / "responses.sqlite3", 2)
    code, stdout, _ = run(capsys, "cache", "stats")
    assert code == 0 and str(cache_dir / "responses.sqlite3") in stdout
    assert re.search(r"entries\s+2\b", stdout)


def test_cache_stats_of_a_missing_cache_says_so_and_creates_nothing(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "cache", "stats")
    assert code == 0 and "no response cache at" in stdout
    assert not cache_dir.exists()


def test_cache_stats_of_a_damaged_file_exits_2_with_the_fix(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 1)
    with open(path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff" * 3000)
    code, _, err = run(capsys, "cache", "stats", "--path", path)
    assert code == 2 and err.startswith("cross-judge: error:")
    assert "damaged" in err and f"cross-judge cache clear --path {path}" in err


def test_cache_clear_yes_removes_every_entry(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = cache_dir / "responses.sqlite3"
    fill_cache(path, 4)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, stdout, _ = run(capsys, "cache", "clear", "--yes")
    assert code == 0 and f"removed 4 cached answers from {path}" in stdout
    assert entries_in(path) == 0


def test_cache_clear_without_yes_on_a_pipe_exits_2_and_removes_nothing(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 2)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    code, _, err = run(capsys, "cache", "clear", "--path", path)
    assert code == 2
    assert "cross-judge: error:" in err and "pass --yes" in err
    assert entries_in(path) == 2


def test_cache_clear_on_a_terminal_asks_and_clears_on_yes(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 2)
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    code, stdout, err = run(capsys, "cache", "clear", "--path", path)
    assert code == 0
    assert f"Remove all 2 cached answers from {path}? [y/N]" in err
    assert "removed 2 cached answers" in stdout
    assert entries_in(path) == 0


@pytest.mark.parametrize("answer", ["n\n", "\n", "", "yes please\n"], ids=repr)
def test_cache_clear_on_a_terminal_keeps_everything_unless_the_answer_is_yes(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 2)
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    code, _, err = run(capsys, "cache", "clear", "--path", path)
    assert code == 1 and "nothing removed" in err
    assert entries_in(path) == 2


def test_cache_clear_removes_a_damaged_cache_file(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 1)
    with open(path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff" * 3000)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, stdout, _ = run(capsys, "cache", "clear", "--path", path, "--yes")
    assert code == 0 and f"removed the unusable response cache {path}" in stdout
    assert list(tmp_path.glob("mine.sqlite3*")) == []
    fill_cache(path, 1)  # a new cache can take its place
    assert entries_in(path) == 1


def test_cache_clear_never_touches_a_file_that_is_not_a_cache(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "1", "query": "Felines"}\n' * 20, encoding="utf-8")
    before = path.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, "cache", "clear", "--path", path, "--yes")
    assert code == 2 and "not a cross-judge response cache" in err
    assert path.read_bytes() == before


def test_cache_clear_of_a_missing_cache_creates_nothing(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, stdout, _ = run(capsys, "cache", "clear", "--yes")
    assert code == 0 and "nothing to clear" in stdout
    assert not cache_dir.exists()


def test_cache_without_an_action_prints_help_and_exits_2(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "cache")
    assert code == 2 and "stats" in err and "clear" in err


# -- cache, budget and the run manifest on review ------------------------------------------------


@pytest.fixture(autouse=True)
def _no_registered_prices() -> Iterator[None]:
    from cross_judge import pricing

    yield
    pricing._clear_registered()  # --prices registers for the whole process


def test_a_review_rerun_with_the_cache_makes_no_call_and_gives_the_same_statistics(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server)
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(200)])
    cache = tmp_path / "responses.sqlite3"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    code, _, _ = run(capsys, "review", items, "--panel", panel, "--out", first, "--cache", cache)
    assert code == 0
    server.reset_stats()
    code, stdout, _ = run(
        capsys, "review", items, "--panel", panel, "--out", second, "--cache", cache
    )
    assert code == 0
    assert sum(server.item_requests().values()) == 0  # the server's own count
    assert "0 calls, 600 answers from the cache" in stdout
    a, b = BatchResult.from_jsonl(first), BatchResult.from_jsonl(second)
    # Files are in completion order, which differs between runs: compare by id.
    assert {r.query_id: r.consensus for r in a.verdicts} == {
        r.query_id: r.consensus for r in b.verdicts
    }
    assert a.reliability_alpha() == pytest.approx(b.reliability_alpha(), abs=1e-12)
    assert all(v.cached and v.cost_usd == 0 for r in b.verdicts for v in r.verdicts)


def test_review_with_a_budget_needs_prices_and_skips_calls_that_do_not_fit(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(5)])
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--budget-usd", "1")
    assert code == 2 and "--prices FILE" in err and "m-a" in err and not out.exists()
    assert "register_price" not in err  # a command-line user cannot call it

    prices = tmp_path / "prices.yaml"
    prices.write_text("vendors: {custom: {models: {m-a: {input: 1, output: 1}}}}\n")
    # At $1/M a call costs about $0.0004 but reserves its worst case, about $0.0025
    # (max_tokens=2000): $0.003 lets two calls through one after the other, then refuses.
    code, stdout, err = run(
        capsys, "review", items, "--panel", panel, "--out", out,
        "--budget-usd", "0.003", "--prices", prices, "--concurrency", "1",
    )  # fmt: skip
    assert code == 1
    assert "3 calls not made (over budget)" in stdout and "--retry-failed" in err
    kinds = [r.verdicts[0].error_kind for r in ResultsFile.read(out)]
    assert kinds.count("budget") == 3


def test_the_budget_error_shows_a_price_file_that_works_once_filled_in(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a", "m-b"))
    items = write_items(tmp_path, [{"id": "i0", "query": f"{tag} 0"}])
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--budget-usd", "1")
    assert code == 2
    shown = err[err.index("    vendors:") :].split("(USD", 1)[0]
    prices = tmp_path / "prices.yaml"
    prices.write_text(textwrap.dedent(shown).replace("...", "1"))
    code, _, err = run(
        capsys, "review", items, "--panel", panel, "--out", out,
        "--budget-usd", "1", "--prices", prices,
    )  # fmt: skip
    assert code == 0, err


def test_review_writes_a_run_manifest_without_secrets(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tag: str,
) -> None:
    key = "sk-manifest-secret-0123456789abcdef"
    monkeypatch.setenv("PANEL_KEY", key)
    panel = write_panel(tmp_path, server)
    panel.write_text(
        panel.read_text().replace(
            "    max_retries: 0", "    max_retries: 0\n    api_key_env: PANEL_KEY"
        )
    )
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    out = tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out)[0] == 0
    assert run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")[0] == 0
    text = (tmp_path / "out.jsonl.manifest.json").read_text()
    manifest = json.loads(text)
    first, second = manifest["runs"]
    assert (first["status"], second["status"]) == ("done", "done")
    assert first["totals"]["items_judged"] == 3 and first["totals"]["calls"] == 9
    assert second["totals"]["items_already_done"] == 3 and second["totals"]["calls"] == 0
    assert first["cross_judge"] == __version__ and first["command"][:2] == ["cross-judge", "review"]
    assert first["prompts"]["a"]["id"] == "taxonomy-review"
    assert len(first["prompts"]["a"]["sha256"]) == 64
    assert [c["name"] for c in first["panel"]["critics"]] == ["a", "b", "c"]
    assert key not in text and key not in out.read_text()


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


# -- one review per results file ----------------------------------------------------------------


def test_review_refuses_an_out_another_review_holds_naming_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    from cross_judge.batch.lock import ResultsLock

    items = write_items(tmp_path, [{"id": "a", "query": f"{tag} a"}])
    out = tmp_path / "out.jsonl"
    server.reset_stats()
    with ResultsLock.acquire(out, command=["cross-judge", "review", "other.jsonl"]) as held:
        code, _, err = run(
            capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
        )
        assert held.path.exists()  # the refused run leaves the holder's lock alone
    assert code == 2
    assert f"{out} is being written by another cross-judge review (pid {os.getpid()} " in err
    assert "cross-judge review other.jsonl" in err and "--resume" in err
    assert not out.exists() and server.stats()["requests"] == 0


def test_review_removes_its_lock_file_when_done(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, [{"id": "a", "query": f"{tag} a"}])
    out = tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out)[0] == 0
    )
    assert not (tmp_path / "out.jsonl.lock").exists()


# -- resuming with another panel ----------------------------------------------------------------


def test_review_resume_with_a_changed_panel_is_refused_saying_what_changed(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out)[0] == 0
    before = out.read_bytes()
    text = panel.read_text().replace("voting: majority", "voting: unanimous")
    text = text.replace("model: m-a", "model: m-z")
    text = text.replace(
        "    prompt: taxonomy-review@1\n    max_retries: 0\n  - name: c",
        "    max_retries: 0\n  - name: c",
        1,
    )
    text += f"  - name: d\n    model: m-d\n    vendor: custom\n    base_url: {server.url}\n"
    panel.write_text(text)
    server.reset_stats()

    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")

    assert code == 2
    assert "--resume with a changed panel" in err
    assert "voting: strategy majority -> unanimous" in err
    assert "critics: added 'd'; 'a' model m-a -> m-z" in err
    assert "prompts: 'b' taxonomy-review@1 (sha256 " in err and "-> unnamed prompt" in err
    assert "--allow-panel-change" in err
    assert out.read_bytes() == before and server.stats()["requests"] == 0


def test_review_resume_with_allow_panel_change_continues_and_records_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)]
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:2]), "--panel", panel, "--out", out)[0]
        == 0
    )
    panel.write_text(panel.read_text().replace("voting: majority", "voting: unanimous"))
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), "--panel", panel, "--out", out,
        "--resume", "--allow-panel-change",
    )  # fmt: skip
    assert code == 0, err
    assert "warning: resuming with a changed panel (--allow-panel-change)" in err
    assert sorted(ids_in(out)) == [f"i{n}" for n in range(4)]
    runs = json.loads((tmp_path / "out.jsonl.manifest.json").read_text())["runs"]
    assert [r["panel"]["voting"] for r in runs] == ["majority", "unanimous"]
    assert runs[1]["options"]["allow_panel_change"] is True


def test_review_resume_after_changing_only_how_critics_are_asked_is_not_a_panel_change(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)]
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:2]), "--panel", panel, "--out", out)[0]
        == 0
    )
    panel.write_text(
        "# retries and timeouts do not change an answer\n"
        + panel.read_text().replace("max_retries: 0", "max_retries: 3\n    timeout: 30")
    )
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), "--panel", panel, "--out", out, "--resume"
    )
    assert code == 0, err
    assert "changed panel" not in err


# -- --budget-usd caps the results file as a whole ------------------------------------------------


def test_review_budget_counts_what_the_results_file_already_spent(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    prices = tmp_path / "prices.yaml"
    prices.write_text("vendors: {custom: {models: {m-a: {input: 1, output: 1}}}}\n")
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(6)]
    out = tmp_path / "out.jsonl"
    common = ["--panel", panel, "--out", out, "--prices", prices, "--concurrency", "1"]
    code, _, _ = run(
        capsys, "review", write_items(tmp_path, rows[:3]), *common, "--budget-usd", "1"
    )
    assert code == 0
    spent = BatchResult.from_jsonl(out).cost_usd
    assert spent is not None and spent > 0

    # $0.003 more than the file has spent: room for two calls (each reserves about
    # $0.0025 and costs about $0.0004), not three. A budget per run would allow all three.
    limit = f"{spent + 0.003:.6f}"
    code, stdout, _ = run(
        capsys, "review", write_items(tmp_path, rows), *common, "--resume", "--budget-usd", limit
    )
    assert code == 1
    assert re.search(
        rf"budget \(all of .*\): \${spent:.4f} before this run \+ \$0\.000\d in this run", stdout
    )
    assert "1 call not made (over budget)" in stdout
    kinds = [r.verdicts[0].error_kind for r in ResultsFile.read(out)]
    assert kinds.count("budget") == 1


def test_review_resume_on_a_file_that_spent_its_budget_exits_2_before_any_call(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    prices = tmp_path / "prices.yaml"
    prices.write_text("vendors: {custom: {models: {m-a: {input: 1, output: 1}}}}\n")
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)]
    out = tmp_path / "out.jsonl"
    common = ["--panel", panel, "--out", out, "--prices", prices]
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:2]), *common, "--budget-usd", "1")[0] == 0
    )
    spent = BatchResult.from_jsonl(out).cost_usd
    assert spent is not None
    server.reset_stats()
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), *common, "--resume",
        "--budget-usd", f"{spent / 2:.9f}",
    )  # fmt: skip
    assert code == 2
    assert "caps" in err and "have already cost" in err and "Raise --budget-usd" in err
    assert server.stats()["requests"] == 0


def test_review_help_says_the_budget_is_for_the_results_file_as_a_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, stdout, _ = run(capsys, "review", "--help")
    help_text = " ".join(stdout.split())
    assert code == 0
    assert "spend at most X dollars on OUT as a whole" in help_text
    assert "already cost" in help_text


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
