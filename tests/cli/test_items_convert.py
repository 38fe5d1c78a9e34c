"""`cross-judge items convert`: OpenAI and Anthropic conversations and OTLP traces written as
items files that read back to the same items, images as base64 or as files beside OUT, bad
conversations skipped with their line, and OUT never overwritten."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Item
from cross_judge.content import read_anthropic_messages, read_openai_chat, read_otlp_json

from ..unit.content.otlp_helpers import TRACE, export, messages, span, text
from .conftest import run

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)
PNG = base64.b64decode(PNG_B64)

OPENAI_RUN = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is on this chart?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ocr", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"error": "unreadable"}'},
    {"role": "assistant", "content": "I cannot read it."},
]
CHAT = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_openai_jsonl_becomes_one_item_per_conversation_that_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(tmp_path / "chats.jsonl", [{"id": "r1", "messages": OPENAI_RUN}, CHAT])
    out = tmp_path / "items.jsonl"
    code, _, err = run(capsys, "items", "convert", "--from", "openai", source, "-o", out)
    assert code == 0, err
    first, second = (Item.from_value(row) for row in lines(out))
    assert first.id == "r1"
    assert first.messages == read_openai_chat(OPENAI_RUN).messages
    assert second == Item.from_transcript(read_openai_chat(CHAT))
    assert "wrote 2 items" in err


def test_as_trajectory_writes_the_steps_the_task_and_the_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(tmp_path / "chats.jsonl", [OPENAI_RUN])
    out = tmp_path / "items.jsonl"
    code, _, err = run(
        capsys, "items", "convert", "--from", "openai", source, "-o", out, "--as", "trajectory"
    )
    assert code == 0, err
    (row,) = lines(out)
    assert row["images"] == [{"base64": PNG_B64, "media_type": "image/png"}]
    assert row["context"] == {"task": "What is on this chart?"}
    item = Item.from_value(row)
    assert item.trajectory == read_openai_chat(OPENAI_RUN).trajectory
    assert item.query == "I cannot read it."


def test_images_dir_writes_files_named_by_digest_and_paths_relative_to_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(tmp_path / "chats.jsonl", [OPENAI_RUN])
    (tmp_path / "data").mkdir()
    out = tmp_path / "data" / "items.jsonl"
    images = tmp_path / "data" / "images"
    code, _, err = run(
        capsys, "items", "convert", "--from", "openai", source, "-o", out, "--images-dir", images
    )
    assert code == 0, err
    (row,) = lines(out)
    (shown,) = row["messages"][0]["images"]
    assert shown["path"].startswith("images/") and shown["path"].endswith(".png")
    assert (out.parent / shown["path"]).read_bytes() == PNG
    item = Item.from_value(row, base_dir=out.parent)  # its image's source is now the file
    assert item.id == Item.from_transcript(read_openai_chat(OPENAI_RUN)).id


def test_one_anthropic_conversation_in_a_json_file_is_one_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = {
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "weather", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "sunny"}],
            },
            {"role": "assistant", "content": "Sunny."},
        ],
    }
    source = tmp_path / "request.json"
    source.write_text(json.dumps(request, indent=2), encoding="utf-8")
    code, stdout, err = run(capsys, "items", "convert", "--from", "anthropic", source)
    assert code == 0, err
    (row,) = (json.loads(line) for line in stdout.splitlines())
    expected = read_anthropic_messages(request["messages"], system="Be brief.")
    assert Item.from_value(row).messages == expected.messages


def test_an_otlp_export_becomes_one_item_per_trace_named_by_its_trace_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def chat(trace: str, start: int, answer: str) -> dict[str, Any]:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": messages(text("user", "q")),
            "gen_ai.output.messages": messages(text("assistant", answer)),
        }
        return span("chat m", start, attributes, trace=trace)

    other = "f" * 32
    source = tmp_path / "traces.json"
    source.write_text(
        json.dumps(export([chat(TRACE, 1, "A"), chat(other, 2, "B")])), encoding="utf-8"
    )
    out = tmp_path / "items.jsonl"
    code, _, err = run(capsys, "items", "convert", "--from", "otlp", source, "-o", out)
    assert code == 0, err
    rows = lines(out)
    assert [row["id"] for row in rows] == [TRACE, other]
    runs = read_otlp_json(source.read_text(encoding="utf-8"))
    assert [Item.from_value(row).messages for row in rows] == [r.messages for r in runs]


def test_a_conversation_that_cannot_be_read_is_skipped_with_its_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [{"role": "user", "content": [{"type": "video"}]}]
    source = write(tmp_path / "chats.jsonl", [CHAT, bad])
    out = tmp_path / "items.jsonl"
    code, _, err = run(capsys, "items", "convert", "--from", "openai", source, "-o", out)
    assert code == 1
    assert f"{source}:2: skipped: messages[0].content[0] is a 'video' block" in err
    assert len(lines(out)) == 1


def test_an_existing_out_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(tmp_path / "chats.jsonl", [CHAT])
    out = tmp_path / "items.jsonl"
    out.write_text("keep me\n", encoding="utf-8")
    code, _, err = run(capsys, "items", "convert", "--from", "openai", source, "-o", out)
    assert code == 2 and "already exists" in err
    assert out.read_text(encoding="utf-8") == "keep me\n"


def test_input_that_is_not_json_exits_2_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "chats.csv"
    source.write_text("role,content\nuser,hi\n", encoding="utf-8")
    out = tmp_path / "items.jsonl"
    code, _, err = run(capsys, "items", "convert", "--from", "openai", source, "-o", out)
    assert code == 2 and "is not JSON or JSON Lines" in err
    assert not out.exists()


def test_otlp_without_recorded_messages_exits_2_naming_the_switch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "traces.json"
    source.write_text(json.dumps(export([span("chat m", 1, {"gen_ai.operation.name": "chat"})])))
    code, _, err = run(capsys, "items", "convert", "--from", "otlp", source)
    assert code == 2 and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in err


def test_items_without_an_action_prints_its_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "items")
    assert code == 2 and "convert" in err
