"""A saved fast tokenizer read straight from its tokenizer.json by the `tokenizers` library, with the settings
transformers keeps beside it (tokenizer_config.json): the calls that encoding for prediction makes
(pipeline/text/windows.py), without importing transformers (about 2 s, and torch with it). Prediction on an export
uses it; training and the PyTorch path load transformers' own class, and a test holds the two to the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from pipeline.run.directory import TOKENIZER_CONFIG_FILE, TOKENIZER_FILE

# What transformers reports as model_max_length when the tokenizer sets none.
UNSET_MAX_LENGTH = int(1e30)


class TokenizerFileError(ValueError):
    """tokenizer.json or tokenizer_config.json cannot be read."""


class TokenizerFile:
    """The `tokenizers.Tokenizer` of a saved model, called as a transformers fast tokenizer is called here.
    `model_input_names`: what the model reads (its exported graph's inputs)."""

    is_fast = True

    def __init__(self, tokenizer: Any, settings: dict, name_or_path: str, model_input_names: Sequence[str]):
        tokenizer.no_padding()  # save_pretrained records the run's padding and truncation in the file;
        tokenizer.no_truncation()  # windows.py pads and cuts rows itself, as with transformers' truncation=False
        self._tokenizer = tokenizer
        self.name_or_path = name_or_path
        self.model_input_names = list(model_input_names)
        self.model_max_length = int(settings.get("model_max_length") or UNSET_MAX_LENGTH)
        self.unk_token = _token(settings.get("unk_token"))
        self.pad_token = _token(settings.get("pad_token"))
        self.unk_token_id = self._id_of(self.unk_token)
        self.pad_token_id = self._id_of(self.pad_token)

    @classmethod
    def load(cls, model_dir: Path, model_input_names: Sequence[str]) -> TokenizerFile:
        model_dir = Path(model_dir)
        path, settings_path = model_dir / TOKENIZER_FILE, model_dir / TOKENIZER_CONFIG_FILE
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as error:  # tokenizers raises its own Exception for a missing or damaged file
            raise TokenizerFileError(f"{path}: cannot load it as a fast tokenizer: {error}") from None
        try:
            settings = json.loads(settings_path.read_text(encoding="utf-8")) if settings_path.is_file() else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise TokenizerFileError(f"{settings_path}: cannot read it as JSON: {error}") from None
        return cls(tokenizer, settings, str(model_dir), model_input_names)

    def _id_of(self, token: str | None) -> int | None:
        return None if token is None else self._tokenizer.token_to_id(token)

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        processor = self._tokenizer.post_processor
        return 0 if processor is None else processor.num_special_tokens_to_add(pair)

    def __call__(
        self,
        text: str | Sequence[str],
        text_pair: str | None = None,
        *,
        add_special_tokens: bool = True,
        truncation: bool = False,
        return_attention_mask: bool = True,
        return_token_type_ids: bool | None = None,
        verbose: bool = True,
    ) -> dict[str, Any]:
        """One text (or pair) -> {"input_ids": ids, "token_type_ids": ids}; a list of texts -> lists of ids."""
        if truncation:
            raise ValueError("TokenizerFile does not truncate: rows are cut to length after tokenization")
        if isinstance(text, str):
            encoding = self._tokenizer.encode(text, text_pair, add_special_tokens=add_special_tokens)
            return {"input_ids": encoding.ids, "token_type_ids": encoding.type_ids}
        if text_pair is not None:
            raise ValueError("TokenizerFile takes pairs one at a time")
        encodings = self._tokenizer.encode_batch(list(text), add_special_tokens=add_special_tokens)
        return {"input_ids": [encoding.ids for encoding in encodings]}


def _token(value: Any) -> str | None:
    """A special token as tokenizer_config.json writes it: its text, or {"content": text, ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None
