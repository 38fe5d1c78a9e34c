"""``cross_judge.voting`` as a package: the public path stays the one users, pickles and the
docs know, whichever private module a name lives in."""

from __future__ import annotations

import inspect
import pickle

import pytest

from cross_judge import ensemble, voting
from cross_judge.voting import LABEL_STRATEGIES, SCORE_STRATEGIES, VOTING_STRATEGIES, Vote
from cross_judge.voting._policy import POLICY_DEFAULTS

# Made by cross-judge before the split (voting.py at 0a9a0a9):
# pickle.dumps(Vote("KEEP", True, 0.75, fallback=True), protocol=2 and 5), and
# pickle.dumps([Vote("X", False), majority_vote, Vote], protocol=4).
PICKLED_BEFORE_PROTOCOL_2 = (
    b"\x80\x02ccross_judge.voting\n_rebuild_vote\nq\x00(X\x04\x00\x00\x00KEEPq\x01\x88G?"
    b"\xe8\x00\x00\x00\x00\x00\x00\x88tq\x02Rq\x03."
)
PICKLED_BEFORE_PROTOCOL_5 = (
    b"\x80\x05\x95?\x00\x00\x00\x00\x00\x00\x00\x8c\x12cross_judge.voting\x94\x8c\r"
    b"_rebuild_vote\x94\x93\x94(\x8c\x04KEEP\x94\x88G?\xe8\x00\x00\x00\x00\x00\x00\x88t"
    b"\x94R\x94."
)
PICKLED_BEFORE_WITH_FUNCTION_AND_CLASS = (
    b"\x80\x04\x95W\x00\x00\x00\x00\x00\x00\x00]\x94(\x8c\x12cross_judge.voting\x94\x8c\r"
    b"_rebuild_vote\x94\x93\x94(\x8c\x01X\x94\x89N\x89t\x94R\x94h\x01\x8c\rmajority_vote"
    b"\x94\x93\x94h\x01\x8c\x04Vote\x94\x93\x94e."
)


@pytest.mark.parametrize("data", [PICKLED_BEFORE_PROTOCOL_2, PICKLED_BEFORE_PROTOCOL_5])
def test_a_vote_pickled_before_the_split_loads_with_its_score_and_fallback(data: bytes) -> None:
    vote = pickle.loads(data)
    assert type(vote) is Vote
    assert (vote, vote.score, vote.fallback) == (("KEEP", True), 0.75, True)


def test_a_strategy_and_the_vote_class_pickled_before_the_split_load() -> None:
    vote, strategy, cls = pickle.loads(PICKLED_BEFORE_WITH_FUNCTION_AND_CLASS)
    assert (vote, strategy, cls) == (("X", False), voting.majority_vote, Vote)


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_a_vote_pickled_now_is_the_bytes_it_was_before_the_split(protocol: int) -> None:
    data = pickle.dumps(Vote("KEEP", True, 0.75, fallback=True), protocol=protocol)
    before = PICKLED_BEFORE_PROTOCOL_2 if protocol == 2 else PICKLED_BEFORE_PROTOCOL_5
    assert data == before


def test_a_strategy_and_the_vote_class_pickle_under_the_public_path() -> None:
    data = pickle.dumps([Vote("X", False), voting.majority_vote, Vote], protocol=4)
    assert data == PICKLED_BEFORE_WITH_FUNCTION_AND_CLASS


def test_every_public_class_and_function_shows_the_package_as_its_module() -> None:
    shown = {
        name: getattr(voting, name).__module__
        for name in voting.__all__
        if inspect.isclass(getattr(voting, name)) or inspect.isfunction(getattr(voting, name))
    }
    assert shown and set(shown.values()) == {"cross_judge.voting"}, shown


def test_the_label_and_score_strategies_are_every_registered_built_in_once() -> None:
    assert set(LABEL_STRATEGIES).isdisjoint(SCORE_STRATEGIES)
    builtins = {id(fn) for fn in VOTING_STRATEGIES.values()}
    assert {id(fn) for fn in (*LABEL_STRATEGIES, *SCORE_STRATEGIES)} == builtins


@pytest.mark.parametrize(
    "strategy", [*LABEL_STRATEGIES, *SCORE_STRATEGIES], ids=lambda fn: fn.__name__
)
def test_every_built_in_has_every_policy_keyword_with_its_shared_default(strategy: object) -> None:
    assert callable(strategy)
    params = inspect.signature(strategy).parameters
    assert {name: params[name].default for name in POLICY_DEFAULTS if name in params} == (
        POLICY_DEFAULTS
    )


def test_names_voting_kept_for_old_code_still_import() -> None:
    from cross_judge.voting import (  # noqa: F401
        StrategyT,
        _label_counts,
        _lookup_strategy,
        _strategy_name,
        _valid,
    )

    assert _strategy_name(voting.majority_vote) == "majority_vote"


def test_the_strategies_still_import_from_the_ensemble_module() -> None:
    for fn in (*LABEL_STRATEGIES, *SCORE_STRATEGIES):
        assert getattr(ensemble, fn.__name__) is fn
