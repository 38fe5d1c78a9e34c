"""A ``rich`` progress bar for batch runs: items done (of the total, when known), items/s,
failed items, cost so far, elapsed time and ETA.

Off unless asked for (``judge_many(progress=True)``; the CLI turns it on when stderr is a
terminal). It draws on stderr, so results on stdout stay clean. In a notebook rich draws
it with ipywidgets when they are installed and otherwise warns once and carries on: a
progress bar never stops a batch. When disabled, nothing is imported or drawn.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from ..verdict import EnsembleVerdict

__all__ = ["BatchProgress"]


class BatchProgress:
    """Context manager; call :meth:`advance` with each finished result.

    The counters (``done``, ``failed``, ``cost_usd``) are kept whether or not the bar is
    shown, so callers can report them at the end.
    """

    def __init__(self, total: int | None, *, enabled: bool, console: Console | None = None) -> None:
        self.total = total
        self.enabled = enabled
        self.done = 0
        self.failed = 0
        self.cost_usd = 0.0
        self.cost_known = True
        self._console = console
        self._started = time.perf_counter()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> BatchProgress:
        self._started = time.perf_counter()
        if self.enabled:
            self._progress, self._task = _make_bar(self.total, self._console)
            self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._refresh()
            self._progress.stop()
            self._progress = None

    def advance(self, result: EnsembleVerdict) -> None:
        """Count one finished item (``failed``: see :func:`cross_judge.batch.is_incomplete`)."""
        from ..results import is_incomplete

        self.done += 1
        if is_incomplete(result):
            self.failed += 1
        if result.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += result.cost_usd
        if self._progress is not None:
            self._refresh()

    @property
    def rate(self) -> float:
        """Items per second so far."""
        elapsed = time.perf_counter() - self._started
        return self.done / elapsed if elapsed > 0 else 0.0

    def _refresh(self) -> None:
        assert self._progress is not None
        assert self._task is not None
        cost = f"${self.cost_usd:.4f}" if self.cost_known else "n/a"
        self._progress.update(
            self._task,
            completed=self.done,
            rate=f"{self.rate:.1f}",
            failed=self.failed,
            cost=cost,
        )


def _make_bar(total: int | None, console: Console | None) -> tuple[Progress, TaskID]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [TextColumn("[bold]judging[/bold]")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    else:
        columns.append(TextColumn("{task.completed} items"))
    columns += [
        TextColumn("{task.fields[rate]} items/s"),
        TextColumn("failed {task.fields[failed]}"),
        TextColumn("cost {task.fields[cost]}"),
        TimeElapsedColumn(),
    ]
    if total is not None:
        columns += [TextColumn("ETA"), TimeRemainingColumn()]
    progress = Progress(
        *columns,
        console=console or Console(stderr=True),
        transient=False,
        refresh_per_second=4,
    )
    task = progress.add_task("judging", total=total, rate="0.0", failed=0, cost="n/a")
    return progress, task
