"""The ``cross-judge`` command."""

from .main import (
    main,
)

__all__ = [
    "main",
]
