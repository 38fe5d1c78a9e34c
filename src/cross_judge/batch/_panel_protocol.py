"""The :class:`Panel` protocol: what the batch machinery needs of the thing that judges its
items (an :class:`~cross_judge.ensemble.Ensemble`, a :class:`~cross_judge.cascade.Cascade`).

Defined here, below the panels, so that the batch layer depends on this shape and never on
the panels themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._item import Item
    from ..budget import Budget
    from ..critic import Critic
    from ..verdict import EnsembleVerdict
    from ..voting import VotingStrategy

__all__ = ["Panel", "PanelView"]


class Panel(Protocol):
    """What a batch needs of the thing that judges its items: an
    :class:`~cross_judge.ensemble.Ensemble` or a :class:`~cross_judge.cascade.Cascade`.

    ``critics`` are every critic that may be asked (each item is checked against all of
    their prompts before the first call); ``voting`` names the vote in the results.
    ``judge`` is given an :class:`~cross_judge.batch.Item` (the batch runner passes the
    item alone; a caller may pass its text with the keywords instead), and ``check_item``
    an item or its query and context.
    """

    @property
    def critics(self) -> list[Critic]: ...

    @property
    def voting(self) -> str | VotingStrategy: ...

    async def judge(
        self,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
    ) -> EnsembleVerdict: ...

    def check_can_judge(self) -> None: ...

    def check_prices(self) -> None: ...

    def check_item(self, query: str | Item, context: Mapping[str, Any] | None = None) -> None: ...


class PanelView:
    """A panel as the batch machinery sees it, but for how it judges: its critics, vote
    and checks are ``panel``'s; a subclass defines ``judge`` (a cascade asking every tier,
    a ranking's critics sitting out some pairs). Made per call, never kept on the panel: a
    panel holding one would be a reference cycle."""

    def __init__(self, panel: Panel) -> None:
        self.panel = panel

    @property
    def critics(self) -> list[Critic]:
        return self.panel.critics

    @property
    def voting(self) -> str | VotingStrategy:
        return self.panel.voting

    def check_can_judge(self) -> None:
        self.panel.check_can_judge()

    def check_prices(self) -> None:
        self.panel.check_prices()

    def check_item(self, query: str | Item, context: Mapping[str, Any] | None = None) -> None:
        self.panel.check_item(query, context)
