"""The hook through which a provider batch job takes a critic's calls: the job in force.

A :class:`~cross_judge.critic._critic.Critic` asks :func:`active_job` before each call. With
no job (the usual case) it calls the vendor live. Inside a batch-mode run
(:mod:`cross_judge.batch._provider_jobs`, a higher layer) the job is set here for the run's
tasks with :func:`set_active_job`, and the critic hands it the call
(:meth:`ParkingJob.ask`), which parks it for the vendor's batch API or makes it live.

This module only defines what a critic needs of such a job (:class:`ParkingJob`) and the
context variable holding it; it does not batch, submit or poll anything, and imports
nothing from the batch layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..transport import ChatRequest
    from ..vendors import VendorConfig
    from ..verdict import Verdict
    from ._critic import Critic

__all__ = ["BatchVendors", "ParkingJob", "active_job", "reset_active_job", "set_active_job"]


class BatchVendors(Protocol):
    """Which vendors' calls a job sends through their batch API."""

    def takes(self, config: VendorConfig) -> bool:
        """Whether a critic on ``config``'s vendor goes through the batch API."""
        ...


class ParkingJob(Protocol):
    """A batch-mode job that takes the calls a critic makes while it is active."""

    @property
    def options(self) -> BatchVendors:
        """The job's options; a critic asks them which vendors are batched (to reserve
        a budget at the batch rate)."""
        ...

    def running(self) -> AbstractContextManager[None]:
        """A block during which one call of the current item counts as running."""
        ...

    def waiting(self) -> AbstractContextManager[None]:
        """A block during which one running call of the current item waits on something
        that only other calls can end (a budget's reservations), so it does not hold a
        round back."""
        ...

    async def ask(
        self,
        critic: Critic,
        config: VendorConfig,
        request: ChatRequest,
        api_key: str | None,
        live: Callable[[], Awaitable[Verdict]],
    ) -> Verdict:
        """The verdict for ``critic``'s ``request``: through the vendor's batch API when
        the job batches it, else ``live()``."""
        ...


_active: ContextVar[ParkingJob | None] = ContextVar("cross_judge_batch_job", default=None)


def active_job() -> ParkingJob | None:
    """The batch-mode job the current task's calls belong to; ``None`` outside one (calls
    go to the vendor live)."""
    return _active.get()


def set_active_job(job: ParkingJob) -> Token[ParkingJob | None]:
    """Make ``job`` the active job of the current context (and of the tasks it starts
    from now on); returns the token that :func:`reset_active_job` takes to undo it."""
    return _active.set(job)


def reset_active_job(token: Token[ParkingJob | None]) -> None:
    """Restore the active job to what it was before the :func:`set_active_job` call that
    returned ``token``."""
    _active.reset(token)
