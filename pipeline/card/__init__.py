"""Model cards: the README.md a model folder carries."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "write": "write_model_card",
    },
)
