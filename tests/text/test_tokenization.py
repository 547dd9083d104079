"""Stage 2: fixed-length WordPiece tokenization, the `auto` length and the on-disk cache."""

import numpy as np
import pytest
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

from pipeline.config.schema import TokenizerConfig
from pipeline.text.lengths import choose_chunk_length, choose_max_length
from pipeline.text.tokenization import tokenize_splits
from pipeline.text.unknown import UNKNOWN_ROWS_WARNING, UNKNOWN_TOKEN_WARNING
from pipeline.text.windows import LongTextRule


def test_auto_length_is_the_shortest_multiple_of_8_within_the_budget():
    lengths = np.array([10] * 95 + [30] * 4 + [100])  # 1% of texts are longer than 30
    assert choose_max_length(lengths, 0.01, limit=512) == 32
    assert choose_max_length(lengths, 0.0, limit=512) == 104
    assert choose_max_length(lengths, 0.05, limit=512) == 16  # 5% may be truncated: 10 -> 16
    assert choose_max_length(lengths, 0.0, limit=64) == 64  # capped by the model's positions


def test_auto_length_truncates_at_most_the_budget_on_random_lengths():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lengths = rng.integers(3, 300, size=rng.integers(1, 500))
        chosen = choose_max_length(lengths, 0.01, limit=512)
        assert chosen % 8 == 0
        assert np.mean(lengths > chosen) <= 0.01
        assert chosen == 8 or np.mean(lengths > chosen - 8) > 0.01  # and it is the shortest such multiple


def chunk_length(lengths: list[int], max_chunks: int, budget: float = 0.01) -> int:
    """`auto`'s chunk length for documents of these content lengths, one window of L tokens costing L seconds."""
    rule = LongTextRule(long_text="chunk", chunk_stride=32, max_chunks=max_chunks)
    return choose_chunk_length(np.array(lengths), rule, 512, 2, budget, seconds_per_window=float)


def test_auto_chunk_length_reads_documents_whole_rather_than_cheaply():
    """~1,000-token reviews: 64 makes 4 windows under max_chunks 4 (256 of their tokens), the fewest seconds of
    any length; only 512's 3 windows read them whole, as 256's 5 cannot."""
    reviews = [1000] * 100
    assert chunk_length(reviews, max_chunks=4) == 512
    assert chunk_length(reviews, max_chunks=5) == 256  # 5 windows of 256 read them whole, for less than 512's 3
    assert chunk_length(reviews, max_chunks=64) == 256  # uncapped: the cheapest, as before


def test_auto_chunk_length_is_the_cheapest_where_the_cap_cuts_within_the_budget():
    short = [100] * 99
    assert chunk_length(short, max_chunks=4) == 128  # one window of 128 costs less than three of 64
    assert chunk_length(short + [100_000], max_chunks=4) == 128  # 1% cut at every length: the budget allows it
    assert chunk_length(short + [100_000], max_chunks=4, budget=0.0) == 512  # none keeps it: the one reading most


def test_auto_chunk_length_that_cannot_keep_the_budget_says_so(caplog):
    with caplog.at_level("WARNING", logger="pipeline.text.tokenization"):
        assert chunk_length([5000] * 10, max_chunks=2) == 512
    assert "Every chunk length cuts more than 1.0% of train's documents" in caplog.text
    assert "512, the longest, cuts fewest (100.0%)" in caplog.text


def _splits(texts_by_split):
    features = Features({"text": Value("string"), "label": ClassLabel(names=["a", "b"])})
    return DatasetDict(
        {
            name: Dataset.from_dict({"text": texts, "label": [i % 2 for i in range(len(texts))]}, features=features)
            for name, texts in texts_by_split.items()
        }
    )


def test_tokenize_pads_to_one_length_and_records_truncation(bert_tokenizer, tmp_path):
    long_text = " ".join(["word"] * 40)
    splits = _splits({"train": ["short text"] * 99 + [long_text], "validation": ["hi", long_text], "test": ["a b c"]})
    tokenized, info = tokenize_splits(splits, bert_tokenizer, TokenizerConfig(max_length="auto"), tmp_path)
    assert info.max_length == 8  # [CLS] short text [SEP] = 4 tokens; the 1% long text may be truncated
    assert info.truncated_fraction == {"train": 0.01, "validation": 0.5, "test": 0.0}
    for split in tokenized.values():
        assert {len(ids) for ids in split["input_ids"]} == {8}
    assert tokenized["validation"]["length"] == [3, 8]


@pytest.mark.parametrize("max_length", ["auto", 16])
def test_rows_are_what_the_tokenizer_itself_gives_at_that_length(bert_tokenizer, max_length):
    """One pass builds the rows and measures the lengths: the rows are still exactly the stock encoding (truncated,
    padded to the fixed length), so transformers.pipeline reads a text as training did."""
    texts = ["Stocks fell sharply on Monday, traders said.", " ".join(["word"] * 30), "", "naïve café costs €5"]
    splits = _splits({"train": texts * 30, "validation": texts[::-1], "test": texts[:2]})
    tokenized, info = tokenize_splits(splits, bert_tokenizer, TokenizerConfig(max_length=max_length), None)
    for name, split in tokenized.items():
        texts_here = list(splits[name]["text"])
        stock = bert_tokenizer(texts_here, padding="max_length", truncation=True, max_length=info.max_length)
        assert list(split["input_ids"]) == stock["input_ids"]
        assert list(split["attention_mask"]) == stock["attention_mask"]
        assert list(split["length"]) == [sum(mask) for mask in stock["attention_mask"]]
        assert list(split["label"]) == list(splits[name]["label"])
    # auto reads the 30 words whole (a quarter of train); 16 tokens cut them, as counted on the same pass
    assert info.truncated_fraction["validation"] == (0.0 if max_length == "auto" else 0.25)


@pytest.mark.parametrize("long_text", ["truncate", "chunk"])
def test_a_split_encoded_in_blocks_is_the_split_encoded_at_once(bert_tokenizer, monkeypatch, long_text):
    """Blocks keep memory to the arrays' (a block's rows are lists until packed): the windows' documents and labels,
    the counts and the segment ids of pairs that only a later block holds come out as one block gives them."""
    from pipeline.config.reading import PAIR_MARK
    from pipeline.text import tokenization

    texts = [" ".join(["word"] * n) for n in (3, 40, 7, 25, 1)] + [f"a question{PAIR_MARK}an answer", "last"]
    splits = _splits({"train": texts, "validation": texts[:2], "test": texts[-2:]})
    config = TokenizerConfig(max_length=16, long_text=long_text, chunk_stride=4)
    whole, whole_info = tokenize_splits(splits, bert_tokenizer, config, None)
    monkeypatch.setattr(tokenization, "ENCODE_BLOCK_TEXTS", 2)
    blocked, blocked_info = tokenize_splits(splits, bert_tokenizer, config, None)
    assert blocked_info == whole_info
    for name in splits:
        assert blocked[name].column_names == whole[name].column_names
        for column in whole[name].column_names:
            assert list(blocked[name][column]) == list(whole[name][column]), (name, column)
    assert (
        "token_type_ids" in blocked["train"].column_names and "token_type_ids" not in blocked["validation"].column_names
    )
    assert (len(blocked["train"]) > len(texts)) is (long_text == "chunk")


@pytest.mark.parametrize("long_text", ["truncate", "chunk"])
def test_auto_builds_train_from_its_count_as_a_second_tokenizer_pass_would(bert_tokenizer, monkeypatch, long_text):
    """Under `auto`, train's rows come from the content ids its count kept, block by block; with nothing kept (a
    train over KEEP_CONTENT_TOKENS) they come from tokenizing again: both give the same splits, pairs included."""
    from pipeline.config.reading import PAIR_MARK
    from pipeline.text import tokenization

    texts = [" ".join(["word"] * n) for n in (3, 40, 7, 25, 1)] + [f"a question{PAIR_MARK}an answer", "", "last"]
    splits = _splits({"train": texts * 3, "validation": texts[:2], "test": texts[-3:]})
    config = TokenizerConfig(max_length="auto", long_text=long_text, chunk_stride=4, max_truncated_fraction=0.2)
    monkeypatch.setattr(tokenization, "ENCODE_BLOCK_TEXTS", 4)
    kept_calls = []
    encode = tokenization.encode_documents
    monkeypatch.setattr(
        tokenization, "encode_documents", lambda *args: kept_calls.append(args[-1] is not None) or encode(*args)
    )
    kept, kept_info = tokenize_splits(splits, bert_tokenizer, config, None)
    assert kept_calls == [True] * 6 + [False, False]  # train's 6 blocks from what was kept; the others tokenized
    monkeypatch.setattr(tokenization, "KEEP_CONTENT_TOKENS", 10)  # train holds more: nothing is kept
    kept_calls.clear()
    again, again_info = tokenize_splits(splits, bert_tokenizer, config, None)
    assert not any(kept_calls)
    assert kept_info == again_info
    for name in splits:
        for column in again[name].column_names:
            assert list(kept[name][column]) == list(again[name][column]), (name, column)


def test_kept_content_gives_back_what_the_tokenizer_gave(bert_tokenizer):
    from pipeline.config.reading import PAIR_MARK
    from pipeline.text.windows import KeptContent, content_ids_by_segment

    texts = ["one two", "", f"a question{PAIR_MARK}an answer", f"{PAIR_MARK}only a second", "naïve café"]
    content = content_ids_by_segment(bert_tokenizer, texts)
    kept = KeptContent.join([KeptContent.of(content[:2]), KeptContent.of(content[2:])])
    assert len(kept) == len(texts) and kept.ids.dtype == np.int32
    assert kept.content(0, len(texts)) == content
    assert kept.part(1, 4).content(0, 3) == content[1:4] == kept.content(1, 4)
    assert KeptContent.join([]).content(0, 0) == []


def test_fixed_length_and_cache_hit(bert_tokenizer, tmp_path):
    splits = _splits({"train": ["one two three"] * 10, "validation": ["four"], "test": ["five six"]})
    config = TokenizerConfig(max_length=16)
    first, info = tokenize_splits(splits, bert_tokenizer, config, tmp_path)
    assert info.max_length == 16 and not info.from_cache
    second, cached = tokenize_splits(splits, bert_tokenizer, config, tmp_path)
    assert cached.from_cache and cached.max_length == 16
    assert second["train"]["input_ids"] == first["train"]["input_ids"]
    changed = _splits({"train": ["one two four"] * 10, "validation": ["four"], "test": ["five six"]})
    _, fresh = tokenize_splits(changed, bert_tokenizer, config, tmp_path)
    assert not fresh.from_cache  # different texts, different cache entry


@pytest.mark.parametrize("truncation", ["head", "head_tail"])
def test_truncation_over_budget_is_warned_on_a_cache_hit_too(bert_tokenizer, tmp_path, caplog, truncation):
    long_text = " ".join(["word"] * 40)
    splits = _splits({"train": ["short"] * 8 + [long_text] * 2, "validation": ["x"], "test": ["y"]})
    config = TokenizerConfig(max_length=8, truncation=truncation)
    warnings = []
    for _ in range(2):  # tokenized, then loaded from the cache
        caplog.clear()
        with caplog.at_level("WARNING", logger="pipeline.text.tokenization"):
            tokenize_splits(splits, bert_tokenizer, config, tmp_path)
        warnings.append([record.getMessage() for record in caplog.records if record.levelname == "WARNING"])
    assert warnings[0] == warnings[1] and len(warnings[0]) == 1
    message = warnings[0][0]
    assert "truncates 20.0% of train" in message
    kept = {"head": "the start", "head_tail": "the start and the end"}[truncation]
    assert f"reads only {kept} of those texts" in message
    assert ("tokenizer.truncation=head_tail" in message) is (truncation == "head")  # not the setting in use


def test_fixed_length_beyond_the_model_limit_is_refused(bert_tokenizer, tmp_path):
    splits = _splits({"train": ["x"], "validation": ["x"], "test": ["x"]})
    with pytest.raises(ValueError, match="tokenizer.max_length"):
        tokenize_splits(splits, bert_tokenizer, TokenizerConfig(max_length=1024, cache=False), None)


def test_a_script_the_vocabulary_lacks_is_measured_and_warned_about(bert_tokenizer, tmp_path, caplog):
    """Thai through an English uncased vocabulary is nearly all [UNK]: the run says so, and metrics.json records it."""
    thai = ["ข่าวกีฬาวันนี้ ทีมชาติไทยชนะ"] * 8 + ["football news today"] * 2
    splits = _splits({"train": thai, "validation": ["ข่าวกีฬา"], "test": ["sports today"]})
    for cache in (True, False, True):  # fresh, uncached, then from the cache: each says it
        caplog.clear()
        _, info = tokenize_splits(splits, bert_tokenizer, TokenizerConfig(max_length=16, cache=cache), tmp_path)
        shares = info.unknown_token_share
        assert shares["validation"] == 1.0 and shares["test"] == 0.0 and 0.5 < shares["train"] < 1.0
        assert "of train's tokens are the unknown token [UNK]" in caplog.text and "multilingual" in caplog.text
    english = _splits({"train": ["football news today"] * 10, "validation": ["a"], "test": ["b"]})
    caplog.clear()
    _, info = tokenize_splits(english, bert_tokenizer, TokenizerConfig(max_length=16), tmp_path)
    assert info.unknown_token_share["train"] == 0.0 and "unknown token" not in caplog.text


# Short Chinese rows among long English ones: few of train's tokens are [UNK], but every Chinese row is little else.
CHINESE = "快递太慢了，等了两个星期"
LONG_ENGLISH = "Oil prices rose on Monday as traders weighed supply and demand across markets in Asia and Europe. " * 5


def test_rows_mostly_unknown_are_warned_about_where_the_token_share_stays_low(bert_tokenizer, tmp_path, caplog):
    """A quarter of train Chinese, the rest long English: 3% of its tokens are [UNK], under the token share's 5%,
    yet a quarter of the rows read as [UNK] alone. The share of such rows gives the same warning, and is recorded.
    (At 64 tokens the English is counted whole; a text many times longer than its rows read is counted, [UNK] too,
    from the ends they read: windows.TokensRead.)"""
    train = [f"{CHINESE} {index}" for index in range(2)] + [f"{LONG_ENGLISH} {index}" for index in range(6)]
    splits = _splits({"train": train, "validation": [CHINESE], "test": ["sports today"]})
    for cache in (True, True):  # fresh, then from the cache: each says it
        caplog.clear()
        _, info = tokenize_splits(splits, bert_tokenizer, TokenizerConfig(max_length=64, cache=cache), tmp_path)
        assert info.unknown_token_share["train"] < UNKNOWN_TOKEN_WARNING and UNKNOWN_ROWS_WARNING < 0.25
        assert info.mostly_unknown_share == {"train": 0.25, "validation": 1.0, "test": 0.0}
        (warning,) = [record.getMessage() for record in caplog.records if "unknown token" in record.getMessage()]
        share = 100 * info.unknown_token_share["train"]
        assert (
            f"{share:.1f}% of train's tokens are the unknown token [UNK], and 25.0% of its texts are more " in warning
        )
        assert "than 50% [UNK]" in warning and "multilingual" in warning
