"""Admission and pacing of calls per vendor (:class:`VendorGate`), and the limit shared
across processes and machines (:class:`SharedLimit`, :class:`PermitBroker`,
:class:`LimitServer`; their documented path is :mod:`cross_judge.shared_limit`).

This is the package's face for the layers above (the critic's call path, the shared-limit
module, Ray): its names are imported lazily from the private modules that define them
(``_gate``, ``_client``, ``_broker``, ``_server``, ``_wire``).
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEAD_AFTER_TERMS",
    "DEFAULT_PORT",
    "EXCHANGE_TIMEOUT_S",
    "GIVE_BACK_TIMEOUT_S",
    "LINGER_S",
    "MAX_LINE_BYTES",
    "POLL_MAX_S",
    "POLL_MIN_S",
    "RENEW_FRACTION",
    "RETRY_AFTER_FAILURE_S",
    "Exchange",
    "LeaseReply",
    "LeaseRequest",
    "LimitServer",
    "PermitBroker",
    "SharedLimit",
    "VendorGate",
    "main",
    "pause_after_rate_limit",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._broker import DEAD_AFTER_TERMS, LeaseReply, LeaseRequest, PermitBroker
    from ._client import (
        GIVE_BACK_TIMEOUT_S,
        LINGER_S,
        POLL_MAX_S,
        POLL_MIN_S,
        RENEW_FRACTION,
        RETRY_AFTER_FAILURE_S,
        Exchange,
        SharedLimit,
    )
    from ._gate import VendorGate, pause_after_rate_limit
    from ._server import LimitServer, main
    from ._wire import CONNECT_TIMEOUT_S, DEFAULT_PORT, EXCHANGE_TIMEOUT_S, MAX_LINE_BYTES

_exports = LazyExports(
    __name__,
    {
        "CONNECT_TIMEOUT_S": "._wire",
        "DEAD_AFTER_TERMS": "._broker",
        "DEFAULT_PORT": "._wire",
        "EXCHANGE_TIMEOUT_S": "._wire",
        "Exchange": "._client",
        "GIVE_BACK_TIMEOUT_S": "._client",
        "LINGER_S": "._client",
        "LeaseReply": "._broker",
        "LeaseRequest": "._broker",
        "LimitServer": "._server",
        "MAX_LINE_BYTES": "._wire",
        "POLL_MAX_S": "._client",
        "POLL_MIN_S": "._client",
        "PermitBroker": "._broker",
        "RENEW_FRACTION": "._client",
        "RETRY_AFTER_FAILURE_S": "._client",
        "SharedLimit": "._client",
        "VendorGate": "._gate",
        "main": "._server",
        "pause_after_rate_limit": "._gate",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
