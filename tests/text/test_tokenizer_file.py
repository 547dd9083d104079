"""pipeline/text/tokenizer_file.py: a saved tokenizer read without transformers gives the rows transformers' own
tokenizer gives, for every long-text rule, for pairs, and for a byte-level BPE tokenizer as well as WordPiece."""

import json

import pytest
import transformers

from pipeline.config.reading import PAIR_MARK
from pipeline.text.tokenizer_file import TokenizerFile, TokenizerFileError
from pipeline.text.windows import SEGMENT_IDS, LongTextRule, encode_documents
from tests.helpers import MINILM_DIR, require

TEXTS = [
    "Wall St. Bears Claw Back Into the Black (Reuters)",
    "Café déjà vu: naïve résumé of the Zürich ÉCOLE, 東京 and 北京 #1!!",
    "",
    "   leading and trailing spaces   ",
    "emoji 🚀🔥 and an unknown ⍼ symbol; tabs\tand\nnewlines",
    " ".join(f"word{index} stocks fell sharply" for index in range(60)),  # far longer than the windows
    f"What did the central bank say?{PAIR_MARK}It held rates and hinted at a cut in spring.",
    f"{PAIR_MARK}an empty first side",
]
RULES = {
    "head": LongTextRule(),
    "head_tail": LongTextRule("head_tail"),
    "chunk": LongTextRule(long_text="chunk", chunk_stride=4, max_chunks=3),
}
INPUTS = ["input_ids", "token_type_ids", "attention_mask"]


def saved_pair(folder, hf_tokenizer, model_input_names=INPUTS):
    hf_tokenizer.save_pretrained(folder)
    return transformers.AutoTokenizer.from_pretrained(str(folder)), TokenizerFile.load(folder, model_input_names)


def assert_same_documents(hf, lean, max_length: int) -> None:
    for name, rule in RULES.items():
        expected, got = (encode_documents(tokenizer, TEXTS, max_length, rule) for tokenizer in (hf, lean))
        assert got.rows == expected.rows, name
        assert got.token_types == expected.token_types, name
        assert got.documents.tolist() == expected.documents.tolist(), name
        assert got.content_lengths.tolist() == expected.content_lengths.tolist(), name
        assert got.unknown == expected.unknown, name


def test_wordpiece_rows_match_transformers_for_every_rule_and_pairs(tmp_path, bert_tokenizer):
    hf, lean = saved_pair(tmp_path / "bert", bert_tokenizer)
    assert_same_documents(hf, lean, 24)
    assert [lean.num_special_tokens_to_add(pair) for pair in (False, True)] == [2, 3]
    assert (lean.unk_token, lean.unk_token_id, lean.pad_token_id) == (hf.unk_token, hf.unk_token_id, hf.pad_token_id)
    assert lean.model_max_length == hf.model_max_length and lean.name_or_path == str(tmp_path / "bert")


def test_the_shared_minilm_tokenizer_matches_transformers():
    hf = transformers.AutoTokenizer.from_pretrained(str(require(MINILM_DIR)))
    lean = TokenizerFile.load(MINILM_DIR, INPUTS)
    assert_same_documents(hf, lean, 32)
    assert lean.model_max_length == hf.model_max_length == 512


def test_a_byte_level_bpe_tokenizer_matches_transformers(tmp_path):
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    corpus = [text.replace(PAIR_MARK, " ") for text in TEXTS] * 5
    bpe.train_from_iterator(corpus, vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    (tmp_path / "bpe").mkdir()
    bpe.save_model(str(tmp_path / "bpe"))
    roberta = transformers.RobertaTokenizerFast.from_pretrained(str(tmp_path / "bpe"))
    hf, lean = saved_pair(tmp_path / "roberta", roberta, ["input_ids", "attention_mask"])
    assert_same_documents(hf, lean, 24)
    assert [lean.num_special_tokens_to_add(pair) for pair in (False, True)] == [2, 4]  # <s> a </s></s> b </s>
    assert SEGMENT_IDS not in lean.model_input_names


def test_the_saved_padding_and_truncation_are_not_applied(tmp_path, bert_tokenizer):
    """save_pretrained may record a run's padding and truncation in tokenizer.json: rows are cut and padded after."""
    folder = tmp_path / "bert"
    bert_tokenizer.save_pretrained(folder)
    saved = json.loads((folder / "tokenizer.json").read_text())
    saved["truncation"] = {"max_length": 4, "stride": 0, "strategy": "LongestFirst", "direction": "Right"}
    saved["padding"] = {
        "strategy": {"Fixed": 64},
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": 0,
        "pad_type_id": 0,
        "pad_token": "[PAD]",
    }
    (folder / "tokenizer.json").write_text(json.dumps(saved))
    lean = TokenizerFile.load(folder, INPUTS)
    ids = lean([TEXTS[0]], add_special_tokens=False)["input_ids"][0]
    assert ids == bert_tokenizer(TEXTS[0], add_special_tokens=False)["input_ids"] and len(ids) > 4


def test_a_damaged_tokenizer_file_is_one_line_naming_it(tmp_path, bert_tokenizer):
    folder = tmp_path / "bert"
    bert_tokenizer.save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": ')
    with pytest.raises(TokenizerFileError, match=r"tokenizer\.json: cannot load it as a fast tokenizer"):
        TokenizerFile.load(folder, INPUTS)
    bert_tokenizer.save_pretrained(folder)
    (folder / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TokenizerFileError, match=r"tokenizer_config\.json: cannot read it as JSON"):
        TokenizerFile.load(folder, INPUTS)
