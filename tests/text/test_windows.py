"""Long texts (pipeline/text/windows.py and its use in stage 2 and 4): truncation strategies, windows, pooling."""

import numpy as np
import pytest
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

from pipeline.config.load import load_config
from pipeline.config.reading import PAIR_MARK
from pipeline.config.schema import ConfigError, TokenizerConfig
from pipeline.scoring.evaluation import predict_logits
from pipeline.text.batching import TokenizedRows
from pipeline.text.tokenization import TokenCounts, tokenize_splits
from pipeline.text.windows import LongTextRule, encode_documents, pool_documents, truncate, window_starts
from tests.helpers import tiny_bert_classifier

CHUNK = LongTextRule(long_text="chunk", chunk_stride=2, max_chunks=4)


def test_windows_overlap_by_the_stride_and_the_last_ends_with_the_text():
    assert window_starts(5, 8, 2, 10) == [0]
    assert window_starts(20, 8, 2, 10) == [0, 6, 12]  # windows [0,8) [6,14) [12,20): 2 shared tokens each time
    assert window_starts(21, 8, 2, 10) == [0, 6, 12, 13]  # the last one aligned to the end
    capped = window_starts(100, 8, 2, 4)
    assert capped[:3] == [0, 6, 12] and capped[-1] == 92 and len(capped) == 4  # first ones and the last


def test_truncation_keeps_head_tail_or_both():
    ids = list(range(20))
    assert truncate(ids, 8, LongTextRule("head")) == list(range(8))
    assert truncate(ids, 8, LongTextRule("tail")) == list(range(12, 20))
    assert truncate(ids, 8, LongTextRule("head_tail", head_fraction=0.25)) == [0, 1, 14, 15, 16, 17, 18, 19]
    assert truncate(ids[:5], 8, LongTextRule("head_tail")) == ids[:5]


def test_documents_become_windows_with_cls_and_sep(bert_tokenizer):
    texts = ["short one", " ".join(f"word{i}" for i in range(40))]
    encoded = encode_documents(bert_tokenizer, texts, 16, CHUNK)
    rows, documents, lengths = encoded.rows, encoded.documents, encoded.content_lengths
    cls, sep = bert_tokenizer.cls_token_id, bert_tokenizer.sep_token_id
    assert all(row[0] == cls and row[-1] == sep and len(row) <= 16 for row in rows)
    assert documents[0] == 0 and set(documents[1:]) == {1} and len(rows) == 1 + 4
    content = bert_tokenizer(texts[1], add_special_tokens=False)["input_ids"]
    assert lengths[1] == len(content)
    assert rows[-1][1:-1] == content[-14:]  # the last window ends with the text
    assert rows[1][1:-1] == content[:14]
    assert rows[2][1:3] == content[12:14]  # consecutive windows share chunk_stride tokens


def test_plain_head_is_the_tokenizers_own_truncation(bert_tokenizer):
    texts = ["a b c d e f g h i j k l m n o p q r s t"]
    encoded = encode_documents(bert_tokenizer, texts, 8, LongTextRule())
    rows, documents = encoded.rows, encoded.documents
    assert rows == bert_tokenizer(texts, truncation=True, max_length=8)["input_ids"]
    assert documents.tolist() == [0]


def test_pooling_equals_a_hand_computation():
    scores = np.array([[0.8, 0.2], [0.4, 0.6], [0.1, 0.9], [0.3, 0.7]], dtype=np.float32)
    documents = np.array([0, 0, 1, 1])
    np.testing.assert_allclose(pool_documents(scores, documents, 2, "mean"), [[0.6, 0.4], [0.2, 0.8]])
    np.testing.assert_allclose(
        pool_documents(scores, documents, 2, "max"), [[0.8 / 1.4, 0.6 / 1.4], [0.3 / 1.2, 0.9 / 1.2]]
    )


def long_splits() -> DatasetDict:
    features = Features({"text": Value("string"), "label": ClassLabel(names=["a", "b"])})
    texts = [" ".join(f"token{i % 50}" for i in range(n)) for n in (5, 30, 90, 12)]
    split = Dataset.from_dict({"text": texts, "label": [0, 1, 0, 1]}, features=features)
    return DatasetDict(train=split, validation=split, test=split)


def test_chunked_tokenization_adds_documents_and_is_cached_by_rule(bert_tokenizer, tmp_path):
    config = TokenizerConfig(max_length=32, long_text="chunk", chunk_stride=4, max_chunks=8)
    tokenized, info = tokenize_splits(long_splits(), bert_tokenizer, config, tmp_path)
    train = tokenized["train"]
    assert set(train["document"]) == {0, 1, 2, 3} and len(train) > 4
    assert all(label == [0, 1, 0, 1][doc] for label, doc in zip(train["label"], train["document"]))
    assert info.windows_per_document["train"]["max"] > 1
    head_tail, _ = tokenize_splits(
        long_splits(), bert_tokenizer, TokenizerConfig(max_length=32, truncation="head_tail"), tmp_path
    )
    assert len(head_tail["train"]) == 4 and "document" not in head_tail["train"].column_names
    assert len(list((tmp_path / "tokenized").iterdir())) == 2  # one cache entry per rule


def test_evaluation_counts_documents_not_windows(bert_tokenizer, tmp_path):
    from accelerate import Accelerator

    config = TokenizerConfig(max_length=16, long_text="chunk", chunk_stride=2)
    tokenized, _ = tokenize_splits(long_splits(), bert_tokenizer, config, None)
    rows = TokenizedRows(tokenized["test"])
    model = tiny_bert_classifier(bert_tokenizer, ["a", "b"], layers=1)
    window_probabilities = predict_logits(model, rows, Accelerator(cpu=True), batch_size=3).softmax(-1).numpy()
    from pipeline.scoring.evaluation import evaluate_split

    result = evaluate_split(model, rows, Accelerator(cpu=True), 3, ["a", "b"], "mean")
    assert result.metrics["num_samples"] == 4 and len(result.labels) == 4
    by_hand = np.stack([window_probabilities[rows.documents == doc].mean(axis=0) for doc in range(4)])
    np.testing.assert_allclose(result.probabilities, by_hand, rtol=1e-5)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("tokenizer.head_fraction=1.0", "tokenizer.head_fraction"),
        ("tokenizer.max_chunks=0", "tokenizer.max_chunks"),
        ("tokenizer.chunk_stride=126", "tokenizer.chunk_stride"),
    ],
)
def test_long_text_settings_are_checked(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(None, ["tokenizer.max_length=128", "tokenizer.long_text=chunk", override])


def test_a_short_max_length_without_chunking_ignores_the_stride():
    """Truncation never reads tokenizer.chunk_stride: max_length 16 must not fail on the stride's default (32)."""
    assert load_config(None, ["tokenizer.max_length=16"]).tokenizer.max_length == 16
    with pytest.raises(ConfigError, match=r"tokenizer\.chunk_stride"):
        load_config(None, ["tokenizer.max_length=16", "tokenizer.long_text=chunk"])


def test_prediction_pools_windows_like_evaluation(tiny_bert_dir, bert_tokenizer):
    from pipeline.predict.predictor import Predictor
    from pipeline.predict.source import ModelSource, default_text_spec

    rule = LongTextRule(long_text="chunk", chunk_stride=4, max_chunks=6)
    source = ModelSource(tiny_bert_dir, default_text_spec(), 24, None, rule, "mean")
    predictor = Predictor.from_source(source, device="cpu", precision="fp32", batch_size=4)
    texts = ["tiny text", " ".join(f"news{i}" for i in range(200)), "another short one"]
    _, probabilities = predictor.infer(texts)
    assert probabilities.shape == (3, 2) and np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    encoded = encode_documents(bert_tokenizer, texts, 24, rule)
    rows, documents = encoded.rows, encoded.documents
    assert np.bincount(documents).tolist()[1] == 6  # the long text: capped at max_chunks windows
    window_probabilities = np.stack([predictor.infer([bert_tokenizer.decode(row[1:-1])])[1][0] for row in rows])
    by_hand = np.stack([window_probabilities[documents == doc].mean(axis=0) for doc in range(3)])
    np.testing.assert_allclose(probabilities, by_hand, atol=2e-3)  # decode/re-encode may differ by a token

    huge = "word " * 400_000  # 2 MB of text in one row: windows are capped, so the model work is bounded
    assert predictor.infer([huge])[1].shape == (1, 2)


def test_progress_counts_texts_not_windows(tiny_bert_dir):
    """A chunked long text is several windows; the progress callback (tqdm's update) is told texts, so a bar
    whose total is the number of texts ends at it (it counted windows: 6 + 1 + 1 for these 3 texts)."""
    from pipeline.predict.predictor import Predictor
    from pipeline.predict.source import ModelSource, default_text_spec

    rule = LongTextRule(long_text="chunk", chunk_stride=4, max_chunks=6)
    source = ModelSource(tiny_bert_dir, default_text_spec(), 24, None, rule, "mean")
    predictor = Predictor.from_source(source, device="cpu", precision="fp32", batch_size=2)
    texts = ["tiny text", " ".join(f"news{i}" for i in range(200)), "another short one"]
    for method in (predictor.infer, predictor.logits):
        counted = []
        method(texts, on_batch=counted.append)
        assert sum(counted) == 3 and min(counted) >= 0 and len(counted) == 4  # 8 windows in batches of 2


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_a_chunked_run_counts_documents_everywhere(tiny_run_config, ag_news_test_csv, tmp_path, capsys):
    """Through finetune, the run directory and pipeline.predict: windows train, documents are scored; the model
    folder copied out of the run predicts as the run (its windows, its text separator and length)."""
    import csv
    import re
    import shutil

    import pandas as pd

    from pipeline import finetune
    from pipeline.predict import predict_dataframe, predict_texts
    from pipeline.run.directory import RunDir

    config = tiny_run_config(
        "run.name=chunked",
        "data.text_separator=' || '",
        "tokenizer.max_length=24",
        "tokenizer.long_text=chunk",
        "tokenizer.chunk_stride=4",
        "train.max_steps=6",
        "data.max_eval_samples=40",
        "eval.baseline=none",
    )
    metrics = finetune.run(config)
    assert metrics["test"]["num_samples"] == 40  # documents, not windows
    # The estimate printed after the first steps counts what costs time: windows.
    estimate = re.search(
        r"windows/s \(6 steps; ([\d,]+) windows of ([\d,]+) documents per epoch\)", capsys.readouterr().out
    )
    assert estimate and int(estimate[1].replace(",", "")) > 1.5 * int(estimate[2].replace(",", ""))
    windows = metrics["tokenization"]["windows_per_document"]
    assert windows["train"]["mean"] > 1.5 and windows["test"]["max"] <= config.tokenizer.max_chunks
    run = RunDir(config.run_dir)
    with open(run.predictions_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 40
    predicted = predict_texts(run.path, [row["text"] for row in rows[:8]], device="cpu", precision="fp32")
    assert [label for label, _ in predicted] == [row["predicted"] for row in rows[:8]]

    copied = shutil.copytree(run.model_dir, tmp_path / "elsewhere" / "model")
    frame = pd.read_csv(ag_news_test_csv, header=None, names=["class_index", "title", "description"], nrows=12)
    by_run, by_folder = (
        predict_dataframe(model, frame, probabilities=True, device="cpu", precision="fp32")
        for model in (run.path, copied)
    )
    pd.testing.assert_frame_equal(by_folder, by_run)


@pytest.mark.parametrize(
    "rule", [LongTextRule(), LongTextRule(truncation="tail"), CHUNK], ids=["head", "tail", "chunk"]
)
def test_the_pass_that_builds_rows_measures_the_texts_as_a_whole_tokenization_does(bert_tokenizer, rule):
    """What evaluation records (lengths before truncation, the unknown token's share) comes from the rows' own pass."""
    texts = ["short one", " ".join(f"word{i}" for i in range(40)), "emoji 😀 and ข่าว", "x"]
    counts = TokenCounts.of_encoding(encode_documents(bert_tokenizer, texts, 16, rule), bert_tokenizer)
    whole = bert_tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
    assert counts.lengths.tolist() == [len(ids) for ids in whole]
    unknown = sum(ids.count(bert_tokenizer.unk_token_id) for ids in whole)
    assert unknown > 0 and counts.unknown_share == pytest.approx(unknown / (sum(map(len, whole)) - 2 * len(texts)))


@pytest.fixture(scope="module")
def byte_level_tokenizer(tmp_path_factory):
    """A small byte-level BPE (RoBERTa's kind: a space belongs to the word after it), trained on a few lines."""
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    lines = [f"Stocks fell {n} points on Monday, traders said; naïve café costs €{n}." for n in range(200)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(lines, vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    path = tmp_path_factory.mktemp("bpe")
    bpe.save_model(str(path))
    return transformers.RobertaTokenizerFast.from_pretrained(str(path))


def long_texts(seed: int, count: int) -> list[str]:
    """Texts of 3,000 to 8,000 characters: words, punctuation, digits, accents, CJK, runs of spaces, tabs and
    line breaks, the odd pair; and a text whose start or end is a long run of spaces, too few tokens to cut at."""
    rng = np.random.default_rng(seed)
    words = ["Stocks", "fell", "on", "Monday,", "traders", "said.", "naïve", "café", "€5", "東京", "(AP)", "--", "x2"]
    spaces = [" ", " ", " ", "  ", "\t", "\n", " \n "]
    texts = []
    for _ in range(count):
        pieces, length = [], rng.integers(3000, 8000)
        while sum(map(len, pieces)) < length:
            pieces += [words[rng.integers(len(words))], spaces[rng.integers(len(spaces))]]
        texts.append("".join(pieces))
    texts[1] = "Stocks fell" + " " * 20000 + "traders said"
    texts[2] = f"{texts[2]}{PAIR_MARK}{texts[3]}"
    return texts


@pytest.mark.parametrize(
    "rule",
    [LongTextRule(), LongTextRule("tail"), LongTextRule("head_tail", head_fraction=0.3), CHUNK],
    ids=["head", "tail", "head_tail", "chunk"],
)
@pytest.mark.parametrize("kind", ["wordpiece", "byte_level"])
def test_a_text_far_longer_than_its_rows_read_gives_the_rows_its_whole_tokenization_gives(
    bert_tokenizer, byte_level_tokenizer, monkeypatch, rule, kind
):
    """Only the ends its rows read are tokenized (a 7 MB log in one cell took 30 s for 62 tokens): the rows, their
    documents and segment ids are what tokenizing the whole texts gives, and each cut text still counts as longer
    than the width. A piece that yields too few tokens (a run of spaces) is tokenized whole."""
    from pipeline.text import windows

    tokenizer = bert_tokenizer if kind == "wordpiece" else byte_level_tokenizer
    texts = long_texts(seed=7, count=12)
    passed = []  # every string the tokenizer is given
    tokenize = windows._tokenize
    monkeypatch.setattr(windows, "_tokenize", lambda tok, batch: passed.extend(batch) or tokenize(tok, batch))
    cut = encode_documents(tokenizer, texts, 16, rule)
    whole_texts = [text for text in passed if len(text) > 1500]
    monkeypatch.setattr(windows, "CUT_CHARS_PER_TOKEN", 10**9)  # nothing is cut
    whole = encode_documents(tokenizer, texts, 16, rule)
    assert cut.rows == whole.rows and cut.token_types == whole.token_types
    np.testing.assert_array_equal(cut.documents, whole.documents)
    width = 16 - tokenizer.num_special_tokens_to_add(pair=False)
    np.testing.assert_array_equal(cut.content_lengths > width, whole.content_lengths > width)
    assert (cut.content_lengths < whole.content_lengths).sum() >= len(texts) - 3  # all but the pair and fallbacks
    # Tokenized whole: the pair's two sides and, where spaces are no tokens (WordPiece; byte-level BPE makes tokens of
    # them), the text whose ends are runs of spaces: its pieces held too few tokens.
    assert len(whole_texts) == 2 + (kind == "wordpiece") and (texts[1] in whole_texts) is (kind == "wordpiece")


def test_unknown_tokens_counted_in_chunks_add_up_to_the_whole(bert_tokenizer):
    """Prediction reads its input chunk by chunk and warns once, of all of it: the chunks' counts of [UNK] and of
    texts mostly [UNK] add up to those of the texts read at once."""
    texts = ["快递太慢了，等了两个星期", "football news", "emoji 😀 and ข่าว", "ข่าวกีฬา", "x y z", "ok 🤷"]
    whole = encode_documents(bert_tokenizer, texts, 16, LongTextRule()).unknown
    parts = [
        encode_documents(bert_tokenizer, texts[start : start + 2], 16, LongTextRule()).unknown for start in (0, 2, 4)
    ]
    assert parts[0] + parts[1] + parts[2] == whole
    assert whole.texts == 6 and whole.mostly_unknown == 2  # the Chinese and the Thai text; the emoji ones are not
    assert whole.text_share == pytest.approx(2 / 6) and whole.token_share == pytest.approx(whole.unknown / whole.tokens)
