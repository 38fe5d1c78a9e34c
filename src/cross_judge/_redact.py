"""Keep API keys out of every string cross-judge produces (errors, reprs, logs)."""

from __future__ import annotations

import re

__all__ = ["RedactedError", "redact", "redacted_exception"]

# Key shapes of the vendors we talk to (sk-..., sk-ant-..., sk-or-v1-...) and bearer tokens,
# in case a vendor or proxy echoes one back in an error message.
_KEY_LIKE = re.compile(r"(?i)\b(sk-[a-z0-9_\-]{6,}|bearer\s+[a-z0-9._\-]{8,})")


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each secret, and anything shaped like an API key, replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_LIKE.sub("***", text)


class RedactedError(Exception):
    """Stands in for an exception in a log record (``exc_info=``): the original's traceback
    under a redacted ``"<Type>: <message>"``, and none of the exceptions it chains, whose
    text may quote a key too (h11 quotes a rejected header value, key and all)."""


def redacted_exception(exc: BaseException, *secrets: str | None) -> RedactedError:
    """A :class:`RedactedError` for ``exc``: log it with ``exc_info=`` instead of ``exc``."""
    message = redact(f"{type(exc).__name__}: {exc}", *secrets)
    return RedactedError(message).with_traceback(exc.__traceback__)
