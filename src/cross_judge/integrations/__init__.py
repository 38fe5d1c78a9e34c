"""Optional integrations, each behind its extra: Ray (:func:`judge_dataset`, documented at
:mod:`cross_judge.ray`) and dataframes (``BatchResult.to_pandas()`` / ``to_polars()``,
registered with the result models' extension registry).

Its names are imported lazily: importing this package imports neither Ray nor a dataframe
library, nor the modules that use them.
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports

__all__ = [
    "DEFAULT_TERM_S",
    "RESULT_COLUMNS",
    "judge_dataset",
    "label_column",
    "shared_limit",
    "shared_limit_state",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._ray import (
        DEFAULT_TERM_S,
        RESULT_COLUMNS,
        judge_dataset,
        label_column,
        shared_limit,
        shared_limit_state,
    )

_exports = LazyExports(
    __name__,
    {
        "DEFAULT_TERM_S": "._ray",
        "RESULT_COLUMNS": "._ray",
        "judge_dataset": "._ray",
        "label_column": "._ray",
        "shared_limit": "._ray",
        "shared_limit_state": "._ray",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
