"""Stage 2: tokenization to one fixed length, windows of long texts, and batching."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "tokenization": "load_tokenizer tokenize_splits",
        "batching": "TokenizedRows evaluation_loader training_loader",
        "windows": "LongTextRule encode_documents",
    },
)
