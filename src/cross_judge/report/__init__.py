"""A batch's results as one self-contained HTML page (``cross-judge report``), and the
views the other layers show: the terminal summary (:func:`render_summary`), the digest of
a batch (:class:`BatchDigest`), the run manifest (:class:`RunManifest`), the comparison of
two runs (:func:`compare_runs`, :class:`RunDiff`) and the label page
(:func:`render_label_page`), an alignment's before and after (:func:`alignment_page`,
from the ``alignment.json`` that ``cross-judge align`` writes), and the per-turn and
per-step results every view shows (:func:`unit_lines`). Names beyond the page's are
imported on first use."""

from typing import TYPE_CHECKING

from .._lazy import LazyExports
from ._page import (
    DEFAULT_MAX_ITEMS,
    RUNTIME_VERSIONS,
    render_report,
    write_report,
)

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "RUNTIME_VERSIONS",
    "BatchDigest",
    "CompareMetric",
    "Difference",
    "FailOn",
    "Flip",
    "RunDiff",
    "RunManifest",
    "UnitLine",
    "alignment_fragment",
    "alignment_page",
    "assert_no_regression",
    "compare_runs",
    "criteria_gold_table",
    "entry_failed",
    "entry_text",
    "failure_message",
    "is_alignment_record",
    "offered_labels",
    "printable",
    "render_disputed",
    "render_label_page",
    "render_report",
    "render_summary",
    "simulated_note",
    "stored_entry",
    "unit_lines",
    "write_report",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._against_gold import criteria_gold_table
    from ._alignment_page import alignment_fragment, alignment_page, is_alignment_record
    from ._compare import CompareMetric, Difference, FailOn, Flip, RunDiff, compare_runs
    from ._digest import BatchDigest
    from ._gate import assert_no_regression
    from ._label_page import offered_labels, render_label_page
    from ._manifest import RunManifest
    from ._summary import (
        failure_message,
        printable,
        render_disputed,
        render_summary,
        simulated_note,
    )
    from ._units import UnitLine, entry_failed, entry_text, stored_entry, unit_lines

_exports = LazyExports(
    __name__,
    {
        "BatchDigest": "._digest",
        **dict.fromkeys(
            ["alignment_fragment", "alignment_page", "is_alignment_record"], "._alignment_page"
        ),
        "assert_no_regression": "._gate",
        "criteria_gold_table": "._against_gold",
        **dict.fromkeys(
            ["CompareMetric", "Difference", "FailOn", "Flip", "RunDiff", "compare_runs"],
            "._compare",
        ),
        "RunManifest": "._manifest",
        "failure_message": "._summary",
        "offered_labels": "._label_page",
        "printable": "._summary",
        "render_disputed": "._summary",
        "render_label_page": "._label_page",
        "render_summary": "._summary",
        "simulated_note": "._summary",
        **dict.fromkeys(
            ["UnitLine", "entry_failed", "entry_text", "stored_entry", "unit_lines"], "._units"
        ),
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
