"""Read-only analytics over the log: the documented views, SQL, dataframes, the report."""
