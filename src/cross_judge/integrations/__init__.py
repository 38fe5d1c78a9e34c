"""Optional integrations, each behind its extra: Ray (:mod:`cross_judge.ray`) and dataframes
(``BatchResult.to_pandas()`` / ``to_polars()``). This package exports nothing itself.
"""

__all__: list[str] = []
