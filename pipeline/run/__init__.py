"""The run directory: its file names, locks and the records a run writes (export.json; metrics.json)."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "directory": "RunDir RunDirError",
        "record": "RunRecord",
    },
)
