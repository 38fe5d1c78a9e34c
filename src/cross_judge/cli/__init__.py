"""The ``cross-judge`` command."""

from ._main import (
    main,
)

__all__ = [
    "main",
]
