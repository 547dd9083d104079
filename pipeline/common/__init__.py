"""Shared by every layer: errors and their messages, text helpers, atomic file output, hardware."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "errors": "DataError one_line",
        "io": "atomic_write_json atomic_write_text replace_directory",
        "hardware": "resolve_device cpu_supports_bf16",
        "extras": "installed",
    },
)
