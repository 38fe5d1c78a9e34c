"""Batch mode's options and its ledger: what a wrong option says, and how the ledger of
submitted batches survives a kill and tells a resumed job which batch holds each answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge import BATCH_VENDORS, BatchOptions
from cross_judge.batch._provider_jobs import BatchLedger
from cross_judge.errors import ConfigError
from cross_judge.vendors import VendorConfig, get_vendor, with_base_url


def config(url: str = "https://user:pa55word@gateway.example.com/v1") -> VendorConfig:
    return with_base_url(get_vendor("custom"), url)


def test_the_default_batch_vendors_are_openai_and_anthropic() -> None:
    assert BatchOptions().vendors == BATCH_VENDORS == {"openai", "anthropic"}


def test_vendor_names_are_matched_without_case() -> None:
    assert BatchOptions(vendors={"Custom"}).takes(config())
    assert not BatchOptions().takes(config())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vendors": "openai"}, r"vendors=\{'openai'\}"),
        ({"poll_s": 0}, "poll_s"),
        ({"poll_s": float("nan")}, "poll_s"),
        ({"poll_s": 10, "max_poll_s": 5}, "at least as long"),
        ({"deadline_s": -1}, "deadline_s"),
        ({"window": 0}, "window"),
        ({"window": True}, "window"),
    ],
)
def test_a_wrong_option_says_what_to_pass(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BatchOptions(**kwargs)  # type: ignore[arg-type]


def test_a_recorded_batch_is_found_by_each_of_its_request_ids(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = BatchLedger(path)
    ledger.submitted("batch_1", config(), ["cj-a", "cj-b"])
    ledger.close()
    again = BatchLedger(path)
    assert again.batch_of("cj-a") == again.batch_of("cj-b") == "batch_1"
    assert again.batch_of("cj-c") is None
    assert again.batches == ["batch_1"]


def test_requests_that_failed_are_not_found_again(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = BatchLedger(path)
    ledger.submitted("batch_1", config(), ["cj-a", "cj-b"])
    ledger.ended("batch_1", "completed", ["cj-b"])
    ledger.close()
    again = BatchLedger(path)
    assert again.batch_of("cj-a") == "batch_1"
    assert again.batch_of("cj-b") is None  # submitted anew by the next run


def test_the_ledger_never_holds_the_endpoints_password(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = BatchLedger(path)
    ledger.submitted("batch_1", config(), ["cj-a"])
    ledger.close()
    text = path.read_text()
    assert "pa55word" not in text
    assert json.loads(text)["endpoint"] == "https://***@gateway.example.com/v1"


def test_a_line_torn_by_a_kill_is_ignored_and_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = BatchLedger(path)
    ledger.submitted("batch_1", config(), ["cj-a"])
    ledger.close()
    with path.open("ab") as f:
        f.write(b'{"event": "submitted", "batch_id": "batch_2", "custom_')
    again = BatchLedger(path)
    assert again.batches == ["batch_1"]
    again.submitted("batch_3", config(), ["cj-c"])
    again.close()
    assert BatchLedger(path).batches == ["batch_1", "batch_3"]


def test_a_file_that_is_not_a_ledger_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("not json\n{}\n")
    with pytest.raises(ConfigError, match=r"results.jsonl:1: not a batch ledger line"):
        BatchLedger(path)
