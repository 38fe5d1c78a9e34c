"""The collaborators a :class:`~cross_judge.critic._critic.Critic` delegates to, built
together on one snapshot of its configuration.

Each collaborator takes what it reads explicitly: the frozen
:class:`~cross_judge.critic._config.CriticConfig`, and for the caller the builder, the
assembler and the injected HTTP session. Which of the critic's fields drop a snapshot, and
when one is taken, is the critic's business (:mod:`._critic`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..transport import HTTPSession
from ._assembly import VerdictAssembler
from ._calls import Caller
from ._config import CriticConfig
from ._request import RequestBuilder
from ._rubric import RubricPath

if TYPE_CHECKING:
    from ._critic import Critic

__all__ = ["Parts", "parts_of"]


class Parts(NamedTuple):
    """A critic's configuration snapshot and the collaborators reading it."""

    settings: CriticConfig
    builder: RequestBuilder
    assembler: VerdictAssembler
    caller: Caller
    rubric: RubricPath


def parts_of(settings: CriticConfig, *, session: HTTPSession | None, owner: Critic) -> Parts:
    """The collaborators of ``owner`` on ``settings``: ``session`` is its injected HTTP
    session (``None``: the shared pool); ``owner`` is handed to batch jobs and tracing
    spans, and its ``judge_request`` judges each of a rubric's requests (so a rubric call
    is set up and priced as any call)."""
    builder = RequestBuilder(settings)
    assembler = VerdictAssembler(settings)
    caller = Caller(settings, builder, assembler, session=session, owner=owner)
    rubric = RubricPath(settings, builder, owner.judge_request)
    return Parts(settings, builder, assembler, caller, rubric)
