"""``cross-judge prompts list | show ID | validate FILE | check PROMPT``: the packaged judge
prompts, one prompt's fields as YAML, checking a new prompt file, and a prompt's self-check
on items with known answers (:mod:`._prompt_check`).

Loading and validating prompts is :mod:`cross_judge.critic._prompts`'s; this module prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._common import EXIT_OK, EXIT_USAGE, stdout_console
from ._prompt_check import add_check_parser, run_check

if TYPE_CHECKING:
    from ..critic import PromptSpec

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``prompts`` and its actions to ``sub``."""
    prompts = sub.add_parser("prompts", help="list, show or validate judge prompts")
    prompts.set_defaults(prompts_parser=prompts)
    actions = prompts.add_subparsers(dest="prompts_command", metavar="ACTION")
    actions.add_parser("list", help="the packaged prompts")
    show = actions.add_parser("show", help="print one prompt's fields")
    show.add_argument("ref", metavar="ID", help="e.g. taxonomy-review@1, or a file path")
    validate = actions.add_parser("validate", help="check a prompt file")
    validate.add_argument("file", metavar="FILE", help="a prompt YAML file")
    add_check_parser(actions)


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge prompts``; the exit code."""
    from ..critic import list_prompts, load_prompt

    if args.prompts_command == "list":
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD)
        table.add_column("prompt", no_wrap=True)
        table.add_column("labels")
        table.add_column("description")
        for spec in list_prompts():
            labels = ", ".join(spec.labels) if spec.labels else "(any)"
            table.add_row(spec.ref, labels, _first_sentence(spec.description))
        stdout_console().print(table)
        return EXIT_OK
    if args.prompts_command == "show":
        print(_prompt_yaml(load_prompt(args.ref)), end="")
        return EXIT_OK
    if args.prompts_command == "validate":
        path = Path(args.file)
        if not path.is_file():
            raise ConfigError(f"{path}: no such prompt file")
        spec = load_prompt(path)
        print(f"ok: {spec.ref}")
        return EXIT_OK
    if args.prompts_command == "check":
        return run_check(args)
    args.prompts_parser.print_help(sys.stderr)
    return EXIT_USAGE


def _first_sentence(text: str) -> str:
    words = " ".join(text.split())
    end = words.find(". ")
    return words if end == -1 else words[: end + 1]


def _prompt_yaml(spec: PromptSpec) -> str:
    """A prompt's fields as YAML, multi-line text in literal blocks, as it would be written."""
    from ..critic import dump_prompt_fields

    fields: dict[str, Any] = {"id": spec.id, "version": spec.version}
    if spec.description:
        fields["description"] = spec.description
    if spec.labels is not None:
        fields["labels"] = list(spec.labels)
    fields["output"] = list(spec.output)
    if spec.score is not None:
        fields["score"] = dict(spec.score)
    if spec.variables:
        fields["variables"] = list(spec.variables)
    fields["system_prompt"] = spec.system_prompt
    fields["user_prompt_template"] = spec.user_prompt_template
    header = f"# {spec.ref} from {spec.source}; sha256 {spec.sha256}\n"
    return header + dump_prompt_fields(fields)
