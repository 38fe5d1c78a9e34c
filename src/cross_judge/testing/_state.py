"""The mutable state of one :class:`~cross_judge.testing.VendorServer`, behind one lock.

The caller's thread (configuring, scripting, reading stats) and the server thread
(answering requests) share it: personas and what they judge by (gold labels, set
difficulties, better candidates, rubric criteria and their truths), scripted replies,
the counters behind reproducible faults and resample draws, and the counters
:meth:`VendorServer.stats` reports. Every attribute but the configuration fixed at
construction is read and written under
:attr:`VendorState.lock`; the ``*_locked`` methods expect the caller to hold it.

This module holds data and lock-held lookups only: it decides nothing (that is
:mod:`._decisions` and :mod:`._answers`) and serves nothing (:mod:`._server`). The state of
provider batches and files has its own lock, in :mod:`._batch_endpoints`.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, deque
from typing import Any

from ._decisions import Pair, seeded_difficulty
from ._personas import Persona
from ._replies import Reply

__all__ = ["VendorState"]

_RECENT_MAX = 100
_GOLD_SUBSTRING_MAX = 256


class VendorState:
    """What a server knows and counts; see the module docstring for the locking rule.

    The arguments are already validated by :class:`~cross_judge.testing.VendorServer`
    (item, query and candidate texts stripped); the counters start at zero.
    """

    def __init__(
        self,
        *,
        personas: dict[str, Persona],
        default_persona: Persona | None,
        gold: dict[str, str],
        difficulty: dict[str, float],
        difficulty_seed: int,
        error_correlation: float,
        better: dict[str, str | None],
        pair_better: dict[tuple[str, frozenset[str]], str | None],
        api_key: str | None,
        capacity: int | None,
        count_items: bool,
        refuses: frozenset[str] = frozenset(),
        criteria: dict[str, str] | None = None,
        criteria_gold: dict[str, dict[str, str]] | None = None,
        criteria_labels: tuple[str, ...] = ("PASS", "FAIL"),
        strengths: dict[str, float] | None = None,
        tie_parameter: float = 0.0,
        max_request_bytes: int | None = None,
    ) -> None:
        self.lock = threading.Lock()
        # Configuration: fixed at construction, read without the lock.
        self.api_key = api_key
        self.default_persona = default_persona
        self.error_correlation = error_correlation
        self.difficulty_seed = difficulty_seed
        self.capacity = capacity
        self.refuses = refuses
        self.max_request_bytes = max_request_bytes
        # Latent strengths: candidate text -> log-worth, and Davidson's tie parameter.
        self.strengths: dict[str, float] = strengths or {}
        self.tie_parameter = tie_parameter
        # Rubrics: criterion id -> requirement text, and the criteria's scale.
        self.criteria: dict[str, str] = criteria or {}
        self.criteria_labels = criteria_labels
        # What personas judge by; set_* methods change these under the lock.
        self.personas = personas
        self.gold = gold
        self.difficulty = difficulty
        self.better = better
        # Per pair: (query, {its two candidates}) -> the better one; wins over `better`.
        self.pair_better = pair_better
        # Per item text: criterion id -> its true label.
        self.criteria_gold: dict[str, dict[str, str]] = criteria_gold or {}
        self.scripts: dict[str, deque[Reply]] = {}
        self.always: dict[str, Reply] = {}
        # Never reset: they make fault attempts and resample draws reproducible.
        self.attempts: dict[tuple[str, str], int] = {}
        self.draws: dict[tuple[str, str], int] = {}
        # Scripted outcomes of batch requests, per custom_id: (kind, status, message).
        self.scripted_batch: dict[str, deque[tuple[str, int, str | None]]] = {}
        # Completion ids: a counter (cheaper than uuid4 per request); next() is atomic.
        self.ids = itertools.count(1)
        # Counters read by stats() and zeroed by reset_stats().
        self.recent: deque[dict[str, Any]] = deque(maxlen=_RECENT_MAX)
        self.requests = 0
        self.by_model: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0
        self.faults = 0
        self.fault_kinds: Counter[str] = Counter()
        self.rate_limited = 0
        self.refusals: Counter[str] = Counter()
        self.images_seen = 0
        self.images_refused = 0
        self.too_large = 0
        self.item_counts: Counter[str] | None = Counter() if count_items else None
        self.files_uploaded = 0
        self.batches_created: Counter[str] = Counter()
        self.batch_requests: Counter[str] = Counter()
        self.batch_status_polls = 0

    def persona_locked(self, model: str) -> Persona | None:
        """The persona serving ``model``: its own, else the default one, else ``None``;
        caller holds :attr:`lock`."""
        return self.personas.get(model, self.default_persona)

    def take_reply_locked(self, model: str) -> Reply | None:
        """Pop a scripted reply, else the ``always`` one; caller holds :attr:`lock`."""
        for key in (model, "*"):
            queue = self.scripts.get(key)
            if queue:
                reply = queue.popleft()
                if not queue:
                    del self.scripts[key]
                return reply
        return self.always.get(model) or self.always.get("*")

    def gold_locked(self, item: str, user_text: str) -> str | None:
        """The gold label of ``item``: an exact key, or, while the gold map has at most 256
        entries, the first key in insertion order that occurs in ``user_text``; else
        ``None``. Caller holds :attr:`lock`."""
        truth = self.gold.get(item)
        if truth is None and len(self.gold) <= _GOLD_SUBSTRING_MAX:
            truth = next((v for k, v in self.gold.items() if k and k in user_text), None)
        return truth

    def criteria_gold_locked(self, item: str, user_text: str) -> dict[str, str] | None:
        """The per-criterion truths of ``item``, found as :meth:`gold_locked` finds a gold
        label; ``None`` when it has none. Caller holds :attr:`lock`."""
        truths = self.criteria_gold.get(item)
        if truths is None and len(self.criteria_gold) <= _GOLD_SUBSTRING_MAX:
            truths = next((v for k, v in self.criteria_gold.items() if k and k in user_text), None)
        return truths

    def difficulty_locked(self, item: str, user_text: str) -> float:
        """The difficulty of ``item`` from ``user_text``; caller holds :attr:`lock`."""
        value = self.difficulty.get(item)
        if value is None and len(self.difficulty) <= _GOLD_SUBSTRING_MAX:
            value = next((v for k, v in self.difficulty.items() if k and k in user_text), None)
        return seeded_difficulty(item, self.difficulty_seed) if value is None else value

    def pair_strengths(self, pair: Pair) -> tuple[float, float] | None:
        """The strengths of ``pair``'s candidates in the order shown, ``None`` unless both
        have one (the query plays no part). Configuration: no lock needed."""
        first = self.strengths.get(pair.response_a)
        second = self.strengths.get(pair.response_b)
        return None if first is None or second is None else (first, second)

    def pair_truth_locked(self, pair: Pair) -> str | None:
        """The truth label of ``pair`` in the order shown, ``None`` when it has none;
        caller holds :attr:`lock`. The pair's own entry in :attr:`pair_better` comes
        first, then its query's in :attr:`better`."""
        key = (pair.query, frozenset((pair.response_a, pair.response_b)))
        if key in self.pair_better:
            better = self.pair_better[key]
        elif pair.query in self.better:
            better = self.better[pair.query]
        else:
            return None
        if better is None or pair.response_a == pair.response_b:
            return "TIE"
        if better == pair.response_a:
            return "A"
        if better == pair.response_b:
            return "B"
        return None
