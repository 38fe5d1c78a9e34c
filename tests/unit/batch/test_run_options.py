"""RunOptions: the batch options declared once, and every entry point taking them with
today's keywords, defaults and errors. Nothing here reaches a vendor: each check fails (or
passes) before the first call."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from cross_judge import ConfigError, Critic, Ensemble
from cross_judge.batch import PanelRunOptions, RunOptions, _run_options, judge_many, stream
from cross_judge.batch._panel_methods import PanelMethods
from cross_judge.batch._run_options import RUN_DEFAULTS, split_options, with_defaults
from cross_judge.cascade import Cascade, Escalation

pytestmark = pytest.mark.anyio


def offline(name: str) -> Critic:
    return Critic(
        name=name, model="m", vendor="custom", base_url="http://127.0.0.1:9/v1", api_key="k"
    )


def test_every_option_has_a_default_and_nothing_else_does() -> None:
    assert set(RUN_DEFAULTS) == set(RunOptions.__optional_keys__)
    assert with_defaults({}, "judge_many") == RUN_DEFAULTS
    assert RUN_DEFAULTS["concurrency"] == 32 and RUN_DEFAULTS["item_text"] is True


def test_panel_run_options_are_the_run_options_and_all_tiers() -> None:
    assert set(PanelRunOptions.__optional_keys__) == {*RunOptions.__optional_keys__, "all_tiers"}


def test_every_option_is_documented_once_on_run_options() -> None:
    tree = ast.parse(inspect.getsource(_run_options))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RunOptions"]
    documented = [
        statement.target.id
        for statement, after in zip(cls.body, cls.body[1:], strict=False)
        if isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    ]
    assert documented == list(RUN_DEFAULTS)


@pytest.mark.parametrize(
    "entry",
    [
        judge_many,
        stream,
        PanelMethods.judge_many,
        PanelMethods.judge_many_sync,
        PanelMethods.stream,
    ],
    ids=lambda fn: fn.__qualname__,
)
def test_every_batch_entry_point_takes_the_one_declaration(entry: Callable[..., Any]) -> None:
    kinds = {p.name: p.kind for p in inspect.signature(entry).parameters.values()}
    assert kinds["options"] is inspect.Parameter.VAR_KEYWORD
    assert not set(kinds) & set(RUN_DEFAULTS)  # no option declared again
    annotation = str(inspect.signature(entry).parameters["options"].annotation)
    assert annotation in ("Unpack[RunOptions]", "Unpack[PanelRunOptions]")


def test_split_keeps_the_run_options_and_hands_the_rest_to_the_panel() -> None:
    run, panel = split_options({"concurrency": 2, "all_tiers": True, "mode": "live"})
    assert (run, panel) == ({"concurrency": 2, "mode": "live"}, {"all_tiers": True})


async def test_an_unknown_keyword_to_the_runner_is_a_type_error_naming_it() -> None:
    ensemble = Ensemble([offline("a")])
    with pytest.raises(
        TypeError, match="judge_many\\(\\) got an unexpected keyword argument 'conc'"
    ):
        await judge_many(ensemble, ["x"], conc=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="stream\\(\\) got an unexpected keyword argument 'conc'"):
        stream(ensemble, ["x"], conc=2)  # type: ignore[call-arg]


async def test_an_unknown_keyword_to_a_panel_is_a_type_error_naming_it() -> None:
    ensemble = Ensemble([offline("a")])
    with pytest.raises(TypeError, match="Ensemble takes no batch option conc"):
        await ensemble.judge_many(["x"], conc=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="Ensemble takes no batch option all_tiers"):
        ensemble.stream(["x"], all_tiers=True)


async def test_concurrency_zero_gives_the_same_error_through_every_entry_point() -> None:
    ensemble = Ensemble([offline("a")])
    message = "concurrency must be an integer >= 1, got 0"
    with pytest.raises(ConfigError, match=message):
        await ensemble.judge_many(["x"], concurrency=0)
    with pytest.raises(ConfigError, match=message):
        ensemble.judge_many_sync(["x"], concurrency=0)
    with pytest.raises(ConfigError, match=message):
        ensemble.stream(["x"], concurrency=0)
    with pytest.raises(ConfigError, match=message):
        await judge_many(ensemble, ["x"], concurrency=0)


async def test_a_cascade_takes_all_tiers_beside_the_run_options() -> None:
    cascade = Cascade(
        [Ensemble([offline("a"), offline("b")]), Ensemble([offline("c")])],
        escalate=Escalation(agreement_below=0.9),
    )
    # all_tiers is taken (no TypeError); the run option after it is then checked.
    with pytest.raises(ConfigError, match="concurrency must be an integer >= 1"):
        await cascade.judge_many(["x"], all_tiers=True, concurrency=0)
    with pytest.raises(ConfigError, match="batch= options apply to mode='batch' only"):
        cascade.stream(["x"], all_tiers=True, batch=object())  # type: ignore[typeddict-item]
