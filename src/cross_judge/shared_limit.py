"""A concurrency limit shared by many processes: N of them under a limit L behave like one.

A vendor that allows L requests at once counts them across everything that calls it. The
loop-local limits of :mod:`cross_judge.limits._gate` cannot see other processes: two
processes each capped at 4 against a vendor that allows 4 send up to 8 and draw 429s. A
:class:`SharedLimit` attached to a vendor
(``set_vendor_limits("openai", shared=SharedLimit.connect("host:7007"))``) makes every
attempt to it also hold one *permit* of a cluster-wide limit, leased from one
:class:`PermitBroker`:

* in this process: :meth:`SharedLimit.local` (one event loop; tests);
* in a small TCP server, :class:`LimitServer` (``python -m cross_judge.shared_limit
  --limit 4 --port 7007``), reached with :meth:`SharedLimit.connect`: many processes on
  one or several machines, no extra dependency;
* in a Ray actor (:mod:`cross_judge.ray`), which hosts the same broker.

The broker (:class:`PermitBroker`) is a pure, synchronous state machine. Clients talk to it
only through :meth:`PermitBroker.exchange`: a :class:`LeaseRequest` (permits wanted and
given back, outcomes seen) answered by a :class:`LeaseReply` (permits granted, how many the
client may keep, the limit, a pause, the term). Its rules:

* **The limit holds.** Grants never take the permits counted as held above ``limit``:
  ``granted = min(want, limit - held, ...)``. The total exceeds the limit only right after
  a decrease (below), and then nothing is granted until it is back under.
* **Fair shares under contention.** While another client waits for permits it did not get
  (its last exchange, within one term, wanted more than it was granted), or the total is
  over the limit, each *contending* client (one that holds permits or waits) may keep only
  its share: ``limit // n`` of the ``n`` contending clients, the remainder going one each
  to those holding the most (then to those waiting longest, then first come). Nobody
  waiting and not over: a client may keep all it holds and be granted any free permit.
* **How a client learns to shrink.** ``LeaseReply.held`` is the number of permits the
  client may keep: what the broker counts for it, capped by its share when it must
  shrink. A client holding more (after a decrease, or when others wait) is granted 0 and
  gives back the excess: at once for permits not in use, and as its calls finish for the
  others, instead of reusing them. The broker counts the excess as held until returned.
* **Dead clients lose their permits.** A client that has not exchanged for
  ``DEAD_AFTER_TERMS`` (3) terms is presumed dead: at the next exchange (of anyone) its
  permits are reclaimed. A live client exchanges at least once per term while it holds
  permits (:class:`SharedLimit` renews before its term runs out), so a process killed
  with ``kill -9`` costs the others its permits for three terms at most, and a call it
  left running at the vendor has three terms to finish before its permit is reused.
* **AIMD, as** :class:`~cross_judge.limits._gate.VendorLimiter` **does.** A 429 reported
  (``rate_limits``, one entry per 429 with its ``Retry-After``) is a *new* congestion
  signal unless it comes within the echo window of the latest decrease; a new signal
  sets ``n += 1``, ``L = min(limit, held)`` (held stands for in flight) and
  ``limit = max(1, L // 2)``. The echo window lasts until the later of that decrease's
  pause end and one term after it: calls admitted before the decrease, or by clients that
  had not yet heard of it (they hear at their next exchange, within one term), are part
  of the same overload. An echo does not halve again; it keeps ``limit`` at or below what
  the vendor did not refuse of that burst (``limit = max(1, min(limit, L - refused))``).
  Every 429 pauses all clients: no call may start before ``now + wait``, ``wait`` from
  :func:`~cross_judge.limits._gate.pause_after_rate_limit` (the vendor's ``Retry-After``
  capped at :data:`~cross_judge.transport._retry.MAX_RETRY_AFTER_S`, else 0.25 s
  doubling per consecutive signal up to 8 s); a pause is only ever extended. Successes
  reset ``n`` and raise ``limit`` by one per ``limit`` successes, up to the configured
  limit. A request carrying both is applied successes first.

The client (:class:`SharedLimit`, one per process or actor and event loop) leases permits
in chunks and reuses a held permit for its next waiting call without a round trip while
its term lasts; it gives back permits nobody waits for (after :data:`LINGER_S`), so the
others can use them; it batches its outcome reports into its next exchange, but reports
a 429 at once: it pauses itself, and the broker's pause reaches every other client at its
next exchange (within one term). A background task on the client's event loop does every
exchange, one at a time.

What it does not do: pace requests per minute across processes (``rpm`` stays per event
loop), authenticate clients (bind a :class:`LimitServer` to a private interface), push
news to clients (they learn of a decrease or a pause at their next exchange, within one
term), or survive a broker restart without a term of doubt (clients then start afresh).

The implementation lives in :mod:`cross_judge.limits`: the broker
(:mod:`~cross_judge.limits._broker`), the client (:mod:`~cross_judge.limits._client`), the
TCP protocol (:mod:`~cross_judge.limits._wire`) and the server
(:mod:`~cross_judge.limits._server`). This is the documented path: its public classes show
it in reprs and pickles.
"""

from .errors import ConfigError as ConfigError, SharedLimitError
from .limits import (
    CONNECT_TIMEOUT_S as CONNECT_TIMEOUT_S,
    DEAD_AFTER_TERMS,
    DEFAULT_PORT as DEFAULT_PORT,
    EXCHANGE_TIMEOUT_S as EXCHANGE_TIMEOUT_S,
    GIVE_BACK_TIMEOUT_S as GIVE_BACK_TIMEOUT_S,
    LINGER_S,
    MAX_LINE_BYTES as MAX_LINE_BYTES,
    POLL_MAX_S as POLL_MAX_S,
    POLL_MIN_S as POLL_MIN_S,
    RENEW_FRACTION as RENEW_FRACTION,
    RETRY_AFTER_FAILURE_S as RETRY_AFTER_FAILURE_S,
    Exchange as Exchange,
    LeaseReply,
    LeaseRequest,
    LimitServer,
    PermitBroker,
    SharedLimit,
    main,
    pause_after_rate_limit as pause_after_rate_limit,
)

__all__ = [
    "DEAD_AFTER_TERMS",
    "LINGER_S",
    "LeaseReply",
    "LeaseRequest",
    "LimitServer",
    "PermitBroker",
    "SharedLimit",
    "SharedLimitError",
    "main",
]

# Named after this module, where users import them from, in reprs and pickles. Set here
# rather than where they are defined, so that a class never names a module that is not
# loaded: cloudpickle (Ray's pickler) pickles such a class by value instead of by name.
LeaseReply.__module__ = "cross_judge.shared_limit"
LeaseRequest.__module__ = "cross_judge.shared_limit"
LimitServer.__module__ = "cross_judge.shared_limit"
PermitBroker.__module__ = "cross_judge.shared_limit"
SharedLimit.__module__ = "cross_judge.shared_limit"
main.__module__ = "cross_judge.shared_limit"

if __name__ == "__main__":  # ``python -m cross_judge.shared_limit``, as documented
    import sys

    sys.exit(main())
