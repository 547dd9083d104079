"""Stage 1: files or the Hub -> train/validation/test splits of texts and labels."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "load": "LoadedData load_data read_labelled_file",
    },
)
