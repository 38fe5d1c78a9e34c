"""Optional integrations, each behind its extra: Ray, dataframes."""
