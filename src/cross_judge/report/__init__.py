"""A batch's results as one self-contained HTML page (``cross-judge report``)."""

from .page import (
    DEFAULT_MAX_ITEMS,
    RUNTIME_VERSIONS,
    render_report,
    write_report,
)

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "RUNTIME_VERSIONS",
    "render_report",
    "write_report",
]
