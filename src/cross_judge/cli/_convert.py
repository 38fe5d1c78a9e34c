"""``cross-judge items convert --from openai|anthropic|otlp IN [-o OUT] [--as FORM]``: other
tools' conversations and traces as an items file, one JSON item per line.

* ``--from openai``: IN is JSON or JSON Lines of OpenAI chat conversations: a list of
  messages, or an object with ``messages`` (and ``tools``), as a chat-completions request
  or a fine-tuning file's line holds them. A JSON file holding one conversation gives one
  item; a JSON array of conversations, or JSON Lines, one item per conversation.
* ``--from anthropic``: the same, of Anthropic Messages (an object may hold ``system``).
* ``--from otlp``: IN is OpenTelemetry spans as OTLP JSON (one export or JSON Lines of
  them): one item per trace, its id the trace id.

A conversation's ``id`` (an object's ``id`` key) is kept. ``--as conversation`` (the
default) writes ``messages``; ``--as trajectory`` the agent steps, the images and the
task (``context.task``). Images are written as ``{"url"}`` or ``{"base64"}``, or with
``--images-dir DIR`` as files there, named by their digest, and ``{"path"}`` relative to
OUT's folder, which is where ``review`` looks for them, so the items read back as they
were. OUT (default stdout) must not exist yet. A conversation that cannot be read is
reported with its line and skipped (exit 1); IN that is not JSON at all exits 2.

The reading is :mod:`cross_judge.content`'s; this module only reads files and writes lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ItemError
from ._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, counted, note, stderr_console

if TYPE_CHECKING:
    from ..content import Image, Step, Transcript, Turn

__all__ = ["add_parser", "item_record", "run"]

_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``items`` and its ``convert`` action to ``sub``."""
    items = sub.add_parser("items", help="convert other tools' conversations and traces to items")
    items.set_defaults(items_parser=items)
    actions = items.add_subparsers(dest="items_command", metavar="ACTION")
    convert = actions.add_parser(
        "convert",
        help="OpenAI or Anthropic conversations, or OTLP traces, as an items file",
        description=(
            "Write one JSON item per line for each conversation in IN (OpenAI chat messages "
            "or Anthropic Messages, JSON or JSON Lines) or each trace (OpenTelemetry spans as "
            "OTLP JSON), ready for cross-judge review."
        ),
    )
    convert.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=("openai", "anthropic", "otlp"),
        help="the format of IN",
    )
    convert.add_argument("input", metavar="IN", help="the file to read ('-': stdin)")
    convert.add_argument(
        "-o", "--out", metavar="OUT", help="the items file to write (default: stdout)"
    )
    convert.add_argument(
        "--as",
        dest="form",
        choices=("conversation", "trajectory"),
        default="conversation",
        help="judge the turns (messages, the default) or the agent steps (trajectory)",
    )
    convert.add_argument(
        "--images-dir",
        metavar="DIR",
        help="write images that are bytes to files in DIR, referenced by path",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge items``; the exit code."""
    if args.items_command != "convert":
        args.items_parser.print_help(sys.stderr)
        return EXIT_USAGE
    err = stderr_console()
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise ConfigError(f"-o {out} already exists; choose another path or delete it")
    images_dir = Path(args.images_dir) if args.images_dir else None
    base = (out.parent if out is not None else Path.cwd()).resolve()
    text = _read_input(args.input)
    written = skipped = 0
    records: list[str] = []
    for label, transcript, record_id in _transcripts(args.source, text, args.input):
        if isinstance(transcript, ItemError):
            skipped += 1
            note(err, f"{label}: skipped: {transcript}")
            continue
        try:
            record = item_record(transcript, args.form, images_dir=images_dir, base=base)
        except ItemError as exc:
            skipped += 1
            note(err, f"{label}: skipped: {exc}")
            continue
        if record_id is not None:
            record = {"id": record_id, **record}
        records.append(json.dumps(record, ensure_ascii=False) + "\n")
        written += 1
    _write(out, records)
    where = str(out) if out is not None else "stdout"
    note(
        err,
        f"wrote {counted(written, 'item')} to {where}"
        + (f", skipped {skipped}" if skipped else ""),
    )
    return EXIT_FAILED if skipped else EXIT_OK


def _read_input(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte {exc.start + 1}); re-encode it as UTF-8"
        ) from None


def _write(out: Path | None, lines: Sequence[str]) -> None:
    if out is None:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
        return
    try:
        with open(out, "x", encoding="utf-8") as handle:  # "x": never a clobber
            handle.writelines(lines)
    except FileExistsError:
        raise ConfigError(f"-o {out} already exists; choose another path or delete it") from None


def _transcripts(
    source: str, text: str, name: str
) -> Iterator[tuple[str, Transcript | ItemError, str | None]]:
    """``(label, transcript or why not, id)`` for each conversation or trace of IN."""
    from ..content import read_otlp_json

    if source == "otlp":
        try:
            runs = read_otlp_json(text)
        except ItemError as exc:
            raise ConfigError(f"{name}: {exc}") from None
        for run in runs:
            yield f"{name}: trace {run.trace_id}", run, run.trace_id
        return
    for label, value in _conversations(text, name):
        if isinstance(value, ItemError):
            yield label, value, None
            continue
        record: Mapping[str, Any] = value if isinstance(value, Mapping) else {"messages": value}
        record_id = record.get("id")
        shown_id = str(record_id) if isinstance(record_id, (str, int)) else None
        try:
            run = _MESSAGE_READERS[source](record)
        except ItemError as exc:
            yield label, exc, None
            continue
        yield label, run, shown_id


def _openai_record(record: Mapping[str, Any]) -> Transcript:
    from ..content import read_openai_chat

    return read_openai_chat(record.get("messages"), tools=record.get("tools"))


def _anthropic_record(record: Mapping[str, Any]) -> Transcript:
    from ..content import read_anthropic_messages

    messages = record.get("messages")
    return read_anthropic_messages(messages, system=record.get("system"), tools=record.get("tools"))


_MESSAGE_READERS = {"openai": _openai_record, "anthropic": _anthropic_record}
"""The reader of each ``--from`` format of conversations (OTLP is read whole)."""


def _conversations(text: str, name: str) -> Iterator[tuple[str, object]]:
    """``(label, value)`` for each conversation: the whole file when it is one JSON
    conversation, each element of a JSON array of them, else each line."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
        lines = True
    else:
        lines = False
    if not lines:
        if _is_conversation(whole):
            yield name, whole
            return
        if isinstance(whole, list):
            for index, value in enumerate(whole):
                yield f"{name}: conversation {index + 1}", value
            return
        raise ConfigError(
            f"{name}: expected a conversation (a list of messages, or an object with "
            "'messages'), a JSON array of them, or JSON Lines of them"
        )
    first = True
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label = f"{name}:{number}"
        try:
            value = json.loads(line)
        except ValueError as exc:
            if first:  # not one line of JSON: the file is not JSON Lines at all
                raise ConfigError(
                    f"{name} is not JSON or JSON Lines (line {number}: {exc}); give a "
                    "conversation, a JSON array of them, or one a line"
                ) from None
            yield label, ItemError(f"not JSON ({exc})")
            continue
        first = False
        yield label, value


def _is_conversation(value: object) -> bool:
    if isinstance(value, Mapping):
        return "messages" in value
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, Mapping) and "role" in v for v in value)
    )


# -- writing an item ---------------------------------------------------------------------------


def item_record(
    transcript: Transcript,
    form: str,
    *,
    images_dir: Path | None = None,
    base: Path | None = None,
) -> dict[str, Any]:
    """The items-file line of ``transcript`` judged as ``form``: plain JSON values that
    :meth:`cross_judge.batch.Item.from_value` reads back to the same item. Images are
    ``{"url"}`` or ``{"base64", "media_type"}``, or with ``images_dir`` files written
    there, named by digest, as ``{"path"}`` relative to ``base`` (absolute when it is on
    another drive).

    Raises:
        ItemError: the transcript has nothing of ``form`` (:meth:`Transcript.item_fields`).
    """
    fields = transcript.item_fields(form)

    def image(value: Image) -> dict[str, Any]:
        return _image_value(value, images_dir, base)

    record: dict[str, Any] = {}
    if "messages" in fields:
        record["messages"] = [_turn_value(turn, image) for turn in fields["messages"]]
    if "trajectory" in fields:
        record["trajectory"] = [_step_value(step) for step in fields["trajectory"]]
    if "images" in fields:
        record["images"] = [image(i) for i in fields["images"]]
    if "context" in fields:
        record["context"] = dict(fields["context"])
    return record


def _call_value(call: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"name": call.name}
    for key in ("id", "arguments", "result", "error"):
        if getattr(call, key) is not None:
            value[key] = getattr(call, key)
    return value


def _turn_value(turn: Turn, image: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"role": turn.role, "content": turn.content}
    if turn.tool_calls:
        value["tool_calls"] = [_call_value(call) for call in turn.tool_calls]
    if turn.name is not None:
        value["name"] = turn.name
    if turn.tool_call_id is not None:
        value["tool_call_id"] = turn.tool_call_id
    if turn.images:
        value["images"] = [image(i) for i in turn.images]
    return value


def _step_value(step: Step) -> dict[str, Any]:
    from ..content import ToolCall

    if isinstance(step, ToolCall):
        return {"kind": "tool_call", **_call_value(step)}
    return {"kind": step.kind, "text": step.text}


def _image_value(image: Image, images_dir: Path | None, base: Path | None) -> dict[str, Any]:
    if image.data is None:
        shown: dict[str, Any] = {"url": image.url}
        if image.media_type != "image/*":
            shown["media_type"] = image.media_type
        return shown
    if images_dir is None:
        return {"base64": image.base64(), "media_type": image.media_type}
    images_dir.mkdir(parents=True, exist_ok=True)
    path = images_dir / (image.sha256[:16] + _EXTENSIONS.get(image.media_type, ".img"))
    if not path.exists():
        path.write_bytes(image.data)
    target = path.resolve()
    try:
        shown_path = os.path.relpath(target, base) if base is not None else str(target)
    except ValueError:  # another drive (Windows)
        shown_path = str(target)
    return {"path": Path(shown_path).as_posix()}
