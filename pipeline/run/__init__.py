"""The run directory: its file names, locks and the records a run writes (export.json; metrics.json)."""
