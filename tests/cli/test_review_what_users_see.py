"""``cross-judge review``, run in-process, as a user reads it: a budget of 0 refused before
anything starts; a run cut short by its budget saying so, with what the rest needs and the
command that judges it; the critics table saying which items a critic was not asked; and
every check of the options and files made before the simulated vendor starts."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble, ErrorKind, Verdict
from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.cli import main
from cross_judge.testing import VendorServer

from .conftest import run, write_items, write_panel

pytestmark = pytest.mark.integration


def write_prices(folder: Path, *models: str) -> Path:
    """$1 per million tokens in and out for each model, on vendor custom."""
    path = folder / "prices.yaml"
    listed = ", ".join(f"{m}: {{input: 1, output: 1}}" for m in models)
    path.write_text(f"vendors: {{custom: {{models: {{{listed}}}}}}}\n", encoding="utf-8")
    return path


# -- --budget-usd ---------------------------------------------------------------------------------


@pytest.mark.parametrize("zero", ["0", "0.0"])
def test_a_zero_budget_is_refused_before_any_call_naming_the_budget(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    tag: str,
    zero: str,
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    out = tmp_path / "out.jsonl"
    prices = write_prices(tmp_path, "m-a")
    server.reset_stats()
    code, stdout, err = run(
        capsys, "review", items, "--panel", panel, "--out", out,
        "--budget-usd", zero, "--prices", prices,
    )  # fmt: skip
    assert code == 2 and stdout == "" and "Traceback" not in err
    assert "--budget-usd 0 would make no call" in err and "leave --budget-usd out" in err
    assert not out.exists() and server.stats()["requests"] == 0


def test_a_run_cut_short_by_its_budget_says_so_and_gives_a_command_that_finishes_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(5)])
    out = tmp_path / "out.jsonl"
    prices = write_prices(tmp_path, "m-a")
    # A call costs about $0.0004 and reserves its worst case, about $0.0025: $0.003 lets
    # two calls through one after the other, then refuses the other three.
    code, _, err = run(
        capsys, "review", items, "--panel", panel, "--out", out,
        "--budget-usd", "0.003", "--prices", prices, "--concurrency", "1",
    )  # fmt: skip
    assert code == 1
    said = " ".join(err.split())
    assert "3 items not judged in full for lack of budget (3 calls not made" in said
    spent = BatchResult.from_jsonl(out).cost_usd
    assert spent is not None and f"has cost ${spent:.4f} of --budget-usd 0.003" in said
    assert re.search(r"need about \$0\.00\d\d more, at \$0\.000\d an item", said)
    command = err[err.index("raise the budget and retry:\n") :].splitlines()[1]
    words = shlex.split(command)
    assert words[:2] == ["cross-judge", "review"] and words[-1] == "--retry-failed"
    limit = float(words[words.index("--budget-usd") + 1])
    assert limit > 0.003

    code, _, err = run(capsys, *words[1:])  # the command as given
    assert code == 0, err
    kinds = [v.error_kind for r in ResultsFile.read(out) for v in r.verdicts]
    assert len(kinds) == 5 and ErrorKind.BUDGET not in kinds


def test_a_budget_below_one_calls_worst_case_is_priced_at_the_worst_case_of_the_rest(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)])
    out = tmp_path / "out.jsonl"
    prices = write_prices(tmp_path, "m-a")
    code, _, err = run(
        capsys, "review", items, "--panel", panel, "--out", out, "--no-item-text",
        "--budget-usd", "0.001", "--prices", prices, "--concurrency", "1",
    )  # fmt: skip
    assert code == 1
    said = " ".join(err.split())
    assert "4 items not judged in full for lack of budget (4 calls not made" in said
    assert "No item was judged in full to price one by" in said
    assert re.search(r"the 4 need up to \$0\.0\d{3} more \(4 calls; shorter answers", said)
    words = shlex.split(err[err.index("raise the budget and retry:\n") :].splitlines()[1])
    assert "--no-item-text" in words  # the command keeps the run's options
    code, _, err = run(capsys, *words[1:])
    assert code == 0, err
    assert all(r.item is None and r.verdicts[0].error is None for r in ResultsFile.read(out))


def test_the_budget_note_names_the_other_failed_items_the_command_retries_too() -> None:
    from cross_judge.budget import Budget
    from cross_judge.cli._review_budget import Shortfall, shortfall_note

    budget = Budget(0.01, spent_usd=0.008)
    assert not budget.reserve(0.003)  # one call refused, its worst case $0.003
    shortfall = Shortfall(
        over_budget=1, over_budget_ids=["b1"], calls_not_made=1, calls_to_redo=1,
        failed=2, failed_ids=["e1", "e2"], judged=4, judged_usd=0.008,
    )  # fmt: skip
    said = shortfall_note(shortfall, budget, Path("out.jsonl"), lambda limit: f"RUN {limit:g}")
    assert "1 item not judged in full for lack of budget (1 call not made" in said
    assert "It needs about $0.0020 more, at $0.0020 an item" in said
    assert "2 other items had a failed call ('e1', 'e2'): the same command judges" in said
    assert said.endswith("raise the budget and retry:\n  RUN 0.013")  # 0.008 + 0.002 + 0.003


# -- the critics table ----------------------------------------------------------------------------


def test_the_critics_table_shows_skipped_items_and_rates_over_the_items_asked(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # c was asked on two items of four (early stop settled the others without it) and
    # agreed with the consensus on one of them: 50%, not 1 of 4.
    critics = [
        Critic(name=n, model="m", vendor="custom", base_url="http://127.0.0.1:9/v1") for n in "abc"
    ]
    ensemble = Ensemble(critics)
    stopped = Verdict(
        kind="SKIPPED",
        error="early_stop: not asked; the outcome was decided after 2 of 3 critics",
        error_kind=ErrorKind.EARLY_STOP,
        critic_id="c",
    )
    votes = {"u1": "KK-", "u2": "KK-", "s1": "KRR", "d1": "KKR"}
    labels = {"K": "KEEP", "R": "REJECT"}
    rows = [
        ensemble.aggregate_verdicts(
            [
                stopped
                if kind == "-"
                else Verdict(kind=labels[kind], confidence=0.9, critic_id=name)
                for name, kind in zip("abc", kinds, strict=True)
            ],
            query_id=item,
        )
        for item, kinds in votes.items()
    ]
    out = tmp_path / "out.jsonl"
    BatchResult(verdicts=rows, critics=list("abc"), voting="majority").to_jsonl(out)
    items = write_items(tmp_path, [{"id": item, "query": item} for item in votes])
    panel = write_panel(tmp_path, server, models=("m-a", "m-b", "m-c"))
    # Resuming a finished file judges nothing and prints the summary of the whole file.
    code, stdout, err = run(
        capsys, "review", items, "--panel", panel, "--out", out, "--resume", "--no-progress"
    )
    assert code == 0, err
    lines = [line.split() for line in stdout.splitlines()]
    header = next(words for words in lines if words[:2] == ["critic", "valid"])
    assert "skipped" in header
    row = next(words for words in lines if words[:1] == ["c"])
    assert row[1:7] == ["2", "0", "0", "2", "0.0%", "50.0%"]
    caption = " ".join(stdout[stdout.index("skipped: ") :].split())
    assert "early stop: the vote was decided without it" in caption
    assert "valid, error rate and agrees count only the items it was asked" in caption


def test_the_critics_table_has_no_skipped_column_when_every_critic_was_asked(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server)
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    code, stdout, _ = run(
        capsys, "review", items, "--panel", panel, "--out", tmp_path / "out.jsonl"
    )
    assert code == 0
    assert "skipped" not in stdout


# -- checks before the simulated vendor starts --------------------------------------------------


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each start of a simulated vendor (the server still starts)."""
    started: list[str] = []
    start = VendorServer.start

    def recorded(self: VendorServer) -> VendorServer:
        started.append("started")
        return start(self)

    monkeypatch.setattr(VendorServer, "start", recorded)
    return started


SIMULATED = """\
    critics:
      - {name: a, vendor: simulated, model: sim-a, prompt: taxonomy-review@1,
         persona: {accuracy: 0.9, seed: 1}}
    """


def simulated_review(folder: Path) -> list[object]:
    """``review`` of three items with one simulated critic, into ``folder/out.jsonl``."""
    panel = folder / "simulated.yaml"
    panel.write_text(textwrap.dedent(SIMULATED), encoding="utf-8")
    items = write_items(folder, [{"id": f"i{n}", "query": f"item {n}"} for n in range(3)])
    return ["review", items, "--panel", panel, "--out", folder / "out.jsonl", "--no-progress"]


@pytest.mark.parametrize(
    ("more", "says"),
    [
        ([], "already holds results; pass --resume"),
        (["--resume", "--budget-usd", "1"], "--budget-usd needs the price of every critic"),
        (["--resume", "--shard", "1/2"], "--resume with another shard"),
    ],
)
def test_review_refuses_bad_options_before_the_simulated_vendor_starts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    starts: list[str],
    more: list[str],
    says: str,
) -> None:
    argv = simulated_review(tmp_path)
    assert main([str(a) for a in argv]) == 0  # OUT holds three results now
    capsys.readouterr()
    starts.clear()
    code, stdout, err = run(capsys, *argv, *more)
    assert code == 2 and stdout == ""
    assert says in err and "Traceback" not in err
    assert starts == [] and "SIMULATED" not in err


def test_a_resumed_simulated_review_records_the_simulators_address_in_its_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], starts: list[str]
) -> None:
    argv = simulated_review(tmp_path)
    assert main([str(a) for a in argv]) == 0
    code, _, err = run(capsys, *argv, "--resume")
    assert code == 0 and len(starts) == 2
    manifest = (tmp_path / "out.jsonl.manifest.json").read_text(encoding="utf-8")
    urls = set(re.findall(r'"base_url": "([^"]*)"', manifest))
    assert len(urls) == 2 and "http://127.0.0.1:9/v1" not in urls  # never the placeholder
    assert "SIMULATED" in err
