"""Judging on a Ray cluster: a Ray Dataset through async actors, under cluster-wide vendor
limits (the optional extra ``cross-judge[ray]``).

* :func:`judge_dataset`: a lazy Ray Dataset of the input rows plus each item's
  ``consensus``, ``agreement``, ``cost_usd`` and one ``label_<critic>`` column per critic.
  A pool of actors each builds its own panel with ``panel_factory`` and judges one batch
  of rows at a time with :func:`~cross_judge.batch.judge_many`, so the concurrency inside
  an actor is the SDK's (vendor limits, retries, adaptive 429 backoff).
* :func:`shared_limit`: a :class:`~cross_judge.shared_limit.SharedLimit` whose broker
  (:class:`~cross_judge.shared_limit.PermitBroker`) lives in a named Ray actor, so that
  every process of the Ray job that attaches it to a vendor (``set_vendor_limits(vendor,
  shared=...)``) shares one limit: N actors under a shared limit L behave like one process
  under L. Clients lease permits in chunks and reuse them for a term, so the broker is not
  asked once per call; permits a dead actor held come back after three terms. The broker
  actor is created by, and belongs to, the driver.

Ray runs the actors' calls on asyncio. Trio is not supported here: a Ray object reference
can only be awaited on asyncio, so the calls of a trio program under a Ray shared limit
fail with :class:`~cross_judge.shared_limit.SharedLimitError` saying so.

``import cross_judge.ray`` needs no Ray; each function imports it when called. This module
makes no HTTP calls itself and does not vote.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..batch import Panel, judge_many
from ..errors import ConfigError
from ..verdict import EnsembleVerdict

if TYPE_CHECKING:
    from ..limits import LeaseReply, LeaseRequest, SharedLimit

__all__ = ["judge_dataset", "label_column", "shared_limit", "shared_limit_state"]

RESULT_COLUMNS = ("consensus", "agreement", "cost_usd")
"""The columns every output row gains, besides one ``label_<critic>`` per critic."""

DEFAULT_TERM_S = 2.0
"""How long a client may reuse a leased permit before it must exchange with the broker."""

_ACTOR_PREFIX = "cross_judge.shared_limit."


# -- the cluster-wide limit ------------------------------------------------------------------


class _LimitHost:
    """A :class:`~cross_judge.shared_limit.PermitBroker` in a Ray actor. Ray runs one method
    at a time on it (a sync actor's default), which is the serialisation the broker needs."""

    def __init__(self, limit: int, term_s: float) -> None:
        from ..limits import PermitBroker

        self._broker = PermitBroker(limit, term_s=term_s)
        self._configured = (limit, term_s)

    def exchange(self, request: LeaseRequest) -> LeaseReply:
        return self._broker.exchange(request)

    def configured(self) -> tuple[int, float]:
        return self._configured

    def state(self) -> dict[str, Any]:
        broker = self._broker
        return {
            "limit": broker.limit,
            "ceiling": broker.ceiling,
            "held": broker.held,
            "clients": dict(broker.clients),
        }


@functools.lru_cache(maxsize=1)
def _remote_host() -> Any:
    import ray

    return ray.remote(_LimitHost)


def _limit_actor(name: str, limit: int, term_s: float) -> Any:
    """The handle of the broker actor of shared limit ``name``, created on first use."""
    import ray

    if not isinstance(name, str) or not name:
        raise ConfigError(f"a shared limit needs a non-empty name, got {name!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(
            f"shared limit {name!r}: limit must be a whole number >= 1 (calls in flight "
            f"across the cluster), got {limit!r}"
        )
    if isinstance(term_s, bool) or not isinstance(term_s, (int, float)) or not term_s > 0:
        raise ConfigError(f"shared limit {name!r}: term_s must be a number > 0, got {term_s!r}")
    if ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE:
        # In an actor or a task: a broker created here would be owned by this process and
        # end with it, taking every other process's lease with it.
        try:
            actor = ray.get_actor(_ACTOR_PREFIX + name)
        except ValueError:
            raise ConfigError(
                f"shared limit {name!r} does not exist yet: create it on the driver first "
                f"(shared_limit({name!r}, {limit}) there, or judge_dataset's shared_limits); "
                "one created in an actor or a task would end with that process"
            ) from None
    else:
        # num_cpus=0: the broker does a few microseconds of work per exchange and must
        # never wait for a CPU that the judging actors hold.
        actor = (
            _remote_host()
            .options(name=_ACTOR_PREFIX + name, get_if_exists=True, num_cpus=0)
            .remote(limit, float(term_s))
        )
    configured = tuple(ray.get(actor.configured.remote()))
    if configured != (limit, float(term_s)):
        raise ConfigError(
            f"shared limit {name!r} already exists in this Ray namespace with limit "
            f"{configured[0]} and term_s {configured[1]}, not {limit} and {term_s}; "
            "use the same values, or another name"
        )
    return actor


def _exchange_through(actor: Any) -> Callable[[LeaseRequest], Awaitable[LeaseReply]]:
    """The ``exchange`` of a :class:`SharedLimit` whose broker is the Ray actor ``actor``."""

    async def exchange(request: LeaseRequest) -> LeaseReply:
        import sniffio

        library = sniffio.current_async_library()
        if library != "asyncio":
            raise RuntimeError(
                f"a Ray shared limit works on asyncio only, not {library}: Ray object "
                "references cannot be awaited there; run this program on asyncio, or use "
                "SharedLimit.connect() with a LimitServer"
            )
        reply: LeaseReply = await actor.exchange.remote(request)
        return reply

    return exchange


def shared_limit(
    name: str, limit: int, *, chunk: int = 4, term_s: float = DEFAULT_TERM_S
) -> SharedLimit:
    """A limit of ``limit`` calls in flight shared by every process of this Ray job (more
    exactly, of its Ray namespace) that uses a shared limit named ``name``.

    Attach it to a vendor in each process that calls it::

        set_vendor_limits("openai", shared=shared_limit("openai", 64))

    Call it on the driver first: that creates the broker actor (named
    ``cross_judge.shared_limit.<name>``, 0 CPUs), owned by the driver, which lives as long
    as a handle to it does (this :class:`SharedLimit`, a dataset of :func:`judge_dataset`)
    and at most as long as the job. Later calls, on the driver or in actors and tasks,
    reach the same broker; in an actor or a task it must already exist. The limit adapts
    to 429s cluster-wide (AIMD, as a vendor gate does in one process). Each process leases
    up to ``chunk`` permits per exchange with the broker and renews them every ``term_s``
    seconds; the permits of an actor that died are free again after three terms. Starts
    Ray (``ray.init()``) if it is not running. asyncio only (see the module docstring).

    Raises:
        ConfigError: ``name`` is empty, ``limit`` is not a whole number >= 1, ``term_s``
            is not > 0, a shared limit of that name already exists with another ``limit``
            or ``term_s``, or (in an actor or a task) none of that name exists yet.
    """
    from ..limits import SharedLimit

    actor = _limit_actor(name, limit, term_s)
    return SharedLimit(_exchange_through(actor), name=name, chunk=chunk)


def shared_limit_state(name: str) -> dict[str, Any]:
    """What the broker of shared limit ``name`` counts now: ``limit`` (as adapted by 429s),
    ``ceiling`` (the limit it was given), ``held`` (permits leased out) and ``clients``
    (client id -> permits it holds); see :class:`~cross_judge.shared_limit.PermitBroker`.

    Raises:
        ValueError: no shared limit of that name exists in this Ray namespace (Ray's
            ``get_actor`` error).
    """
    import ray

    actor = ray.get_actor(_ACTOR_PREFIX + name)
    state: dict[str, Any] = ray.get(actor.state.remote())
    return state


# -- judging a dataset -----------------------------------------------------------------------


def label_column(critic_name: str) -> str:
    """The output column of a critic's label: ``label_`` and its name with every run of
    characters other than ASCII letters, digits and ``_`` replaced by ``_``
    (``"gpt-4o mini"`` -> ``label_gpt_4o_mini``)."""
    return "label_" + re.sub(r"[^0-9A-Za-z_]+", "_", critic_name)


def _label_columns(panel: Panel) -> dict[str, str]:
    """Critic name -> its label column, for every critic the panel may ask.

    Raises:
        ConfigError: two critics' names give the same column.
    """
    columns: dict[str, str] = {}
    taken: dict[str, str] = {}
    for critic in panel.critics:
        column = label_column(critic.name)
        if column in taken and taken[column] != critic.name:
            raise ConfigError(
                f"critics {taken[column]!r} and {critic.name!r} would both write column "
                f"{column!r}; rename one of them"
            )
        taken[column] = critic.name
        columns[critic.name] = column
    return columns


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"judge_dataset: {name} must be a whole number >= 1, got {value!r}")
    return value


def judge_dataset(
    ds: Any,
    panel_factory: Callable[[], Panel],
    *,
    batch_size: int = 64,
    concurrency: int = 2,
    item_column: str = "item",
    id_column: str | None = None,
    item_concurrency: int = 32,
    shared_limits: Mapping[str, int] | None = None,
    num_cpus: float = 1.0,
) -> Any:
    """Judge every row of the Ray Dataset ``ds``; return a lazy ``ray.data.Dataset`` of
    the same rows plus the result columns.

    Nothing runs until the result is consumed (``iter_batches``, ``write_parquet``,
    ``take``...); it streams, so a dataset larger than memory is fine when it is consumed
    iteratively rather than materialised. Rows keep their order within a batch; across
    batches, Ray Data's own ordering rules apply.

    Each output row gains:

    * ``consensus`` (string): the panel's label;
    * ``agreement`` (float): ``agreement_pct``, the share of valid verdicts that agree
      with the consensus (0.0 when none is valid);
    * ``cost_usd`` (float or null): the item's cost, null unless every call made has a
      known price;
    * ``label_<critic>`` (string or null): each critic's verdict kind (``ERROR`` and
      ``PARSE_FAIL`` for failed calls, ``SKIPPED`` for calls saved by early stop), null
      for a critic not asked (a cascade tier not reached). See :func:`label_column`.

    Args:
        ds: the input ``ray.data.Dataset``.
        panel_factory: a picklable zero-argument callable returning an
            :class:`~cross_judge.ensemble.Ensemble` or a
            :class:`~cross_judge.cascade.Cascade`. It is called once here, to check the
            panel and name the columns, and once in each actor: the panel itself is never
            pickled. Vendors registered with ``register_vendor`` must be registered
            inside it, since actors are other processes.
        batch_size: rows per call of an actor (one :func:`judge_many` each).
        concurrency: actors in the pool.
        item_column: the column of the items: strings (queries) or mappings with
            ``query`` and optionally ``id``, ``context``, ``meta`` (null fields are
            dropped, as a struct column gives them), as
            :meth:`~cross_judge.batch.Item.from_value` reads them.
        id_column: a column whose values (as text) become the items' ids; ``None`` keeps
            the items' own ids (default: the query).
        item_concurrency: items in flight per batch (``judge_many``'s ``concurrency``);
            Ray Data may run a few batches of an actor at once. Vendor limits apply
            underneath, per actor process unless shared.
        shared_limits: vendor name -> calls in flight allowed across the whole pool. Each
            becomes a :func:`shared_limit` named after the vendor, which every actor
            attaches to that vendor before its first call.
        num_cpus: CPUs each actor reserves. An actor runs one event loop, so it uses at
            most one core; less than 1 leaves room for reading and other stages.

    Raises:
        ConfigError: a number is out of range, two critics' names map to the same label
            column, or ``shared_limits`` names a vendor no critic of the panel uses
            (also :func:`shared_limit`'s errors). Raised by the running dataset, inside
            Ray's wrapping: an item that cannot be judged
            (:class:`~cross_judge.batch.ItemError`, its position counted within its
            batch), an input that lacks ``item_column`` or ``id_column`` or already has a
            result column.
    """
    from ray.data import ActorPoolStrategy

    batch_size = _positive_int("batch_size", batch_size)
    concurrency = _positive_int("concurrency", concurrency)
    item_concurrency = _positive_int("item_concurrency", item_concurrency)
    if isinstance(num_cpus, bool) or not isinstance(num_cpus, (int, float)) or num_cpus < 0:
        raise ConfigError(f"judge_dataset: num_cpus must be a number >= 0, got {num_cpus!r}")
    panel = panel_factory()
    columns = _label_columns(panel)
    vendors = {critic.vendor for critic in panel.critics}
    limits = dict(shared_limits or {})
    strangers = sorted(set(limits) - vendors)
    if strangers:
        raise ConfigError(
            f"judge_dataset: shared_limits names {strangers}, but the panel's critics use "
            f"{sorted(vendors)}; give limits for those vendors"
        )
    actors = {
        vendor: _limit_actor(vendor, limit, DEFAULT_TERM_S) for vendor, limit in limits.items()
    }
    return ds.map_batches(
        _JudgeBatches,
        fn_constructor_kwargs={
            "panel_factory": panel_factory,
            "label_columns": columns,
            "item_column": item_column,
            "id_column": id_column,
            "item_concurrency": item_concurrency,
            "shared": actors,
        },
        compute=ActorPoolStrategy(size=concurrency),
        batch_size=batch_size,
        batch_format="pyarrow",
        num_cpus=num_cpus,
    )


class _JudgeBatches:
    """The callable class each actor of :func:`judge_dataset` runs: one panel per actor,
    one ``judge_many`` per batch. Ray Data awaits ``__call__`` on an asyncio loop of its
    own in the actor; the panel's connections and limits live on that loop."""

    def __init__(
        self,
        *,
        panel_factory: Callable[[], Panel],
        label_columns: Mapping[str, str],
        item_column: str,
        id_column: str | None,
        item_concurrency: int,
        shared: Mapping[str, Any],
    ) -> None:
        # The factory first: it may register the vendors the limits attach to.
        self._panel = panel_factory()
        self._label_columns = dict(label_columns)
        self._item_column = item_column
        self._id_column = id_column
        self._item_concurrency = item_concurrency
        if shared:
            from ..limits import SharedLimit
            from ..vendors import set_vendor_limits

            for vendor, actor in shared.items():
                limit = SharedLimit(_exchange_through(actor), name=vendor)
                set_vendor_limits(vendor, shared=limit)

    async def __call__(self, batch: Any) -> AsyncIterator[Any]:
        # An async generator rather than a coroutine: Ray Data accepts it in more versions.
        yield await self._judge(batch)

    async def _judge(self, batch: Any) -> Any:
        import pyarrow as pa

        present = set(batch.column_names)
        needed = [c for c in (self._item_column, self._id_column) if c is not None]
        missing = [c for c in needed if c not in present]
        if missing:
            raise ConfigError(
                f"judge_dataset: the dataset has no column {missing[0]!r} "
                f"(its columns: {sorted(present)})"
            )
        added = [*RESULT_COLUMNS, *self._label_columns.values()]
        clashing = [c for c in added if c in present]
        if clashing:
            raise ConfigError(
                f"judge_dataset: the dataset already has column(s) {clashing}, which the "
                "results would overwrite; rename or drop them first"
            )
        values = batch.column(self._item_column).to_pylist()
        ids = batch.column(self._id_column).to_pylist() if self._id_column else None
        items = [_item(value, None if ids is None else ids[i]) for i, value in enumerate(values)]
        result = await judge_many(self._panel, items, concurrency=self._item_concurrency)
        verdicts = result.verdicts
        out = batch
        for name, array in (
            ("consensus", pa.array([r.consensus for r in verdicts], pa.string())),
            ("agreement", pa.array([r.agreement_pct for r in verdicts], pa.float64())),
            ("cost_usd", pa.array([r.cost_usd for r in verdicts], pa.float64())),
        ):
            out = out.append_column(name, array)
        for critic, column in self._label_columns.items():
            labels = [_label_of(r, critic) for r in verdicts]
            out = out.append_column(column, pa.array(labels, pa.string()))
        return out


def _item(value: object, item_id: object) -> object:
    """What :meth:`~cross_judge.batch.Item.from_value` reads for one row: null fields of a
    mapping dropped, the id column's value (as text) as its ``id``."""
    if isinstance(value, Mapping):
        fields = {k: v for k, v in value.items() if v is not None}
        if item_id is not None:
            fields["id"] = str(item_id)
        return fields
    if item_id is not None:
        return {"query": value, "id": str(item_id)}
    return value


def _label_of(result: EnsembleVerdict, critic: str) -> str | None:
    for verdict in result.verdicts:
        if verdict.critic_id == critic:
            return verdict.kind
    return None
