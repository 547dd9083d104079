"""Any encoder checkpoint, not only BERT: a tiny random RoBERTa with a byte-level BPE tokenizer trained here on AG
News lines goes through finetune, report, model card and prediction.

RoBERTa differs from BERT where a BERT-only pipeline would break silently or loudly: padding is id 1 (BERT: 0),
position ids start after the padding index (a 50-row table holds 48 tokens), there are no token_type_ids, the
tokenizer is byte-level BPE (AutoTokenizer, not BertTokenizerFast), and special tokens are <s> ... </s>.
"""

import csv
import itertools
import json
import shutil

import numpy as np
import pytest
import torch
import transformers
from huggingface_hub import ModelCard

from pipeline import finetune
from pipeline.config.load import load_config
from pipeline.config.schema import TokenizerConfig
from pipeline.models import max_positions
from pipeline.predict import predict_texts
from pipeline.run.model_config import config_max_positions
from pipeline.text.batching import TokenizedRows, evaluation_loader
from pipeline.text.tokenization import TokenizerNotFound, load_tokenizer, tokenize_splits
from tests.helpers import MINILM_CONFIG, one_torch_thread, reset_accelerate, tiny_run_overrides

USABLE_POSITIONS = 48
PAD = 1


def ag_news_texts(path, count):
    """Title and description of the first `count` rows (class index, title, description; a header row skipped)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = (row for row in csv.reader(handle) if row[0] != "class_index")
        return [f"{title} {description}" for _, title, description in itertools.islice(rows, count)]


@pytest.fixture(scope="module")
def tiny_roberta_dir(tmp_path_factory, ag_news_train_csv):
    """A 2-layer, 32-wide random RoBERTa and a byte-level BPE tokenizer (800 tokens) trained on 300 AG News lines."""
    from tokenizers import ByteLevelBPETokenizer

    path = tmp_path_factory.mktemp("tiny_roberta")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        ag_news_texts(ag_news_train_csv, 300),
        vocab_size=800,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    vocabulary = path / "bpe"
    vocabulary.mkdir()
    bpe.save_model(str(vocabulary))
    tokenizer = transformers.RobertaTokenizerFast.from_pretrained(str(vocabulary))
    assert tokenizer.pad_token_id == PAD and tokenizer.bos_token_id == 0
    tokenizer.save_pretrained(path)
    shutil.rmtree(vocabulary)

    torch.manual_seed(0)
    config = transformers.RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=USABLE_POSITIONS + PAD + 1,
        type_vocab_size=1,
        pad_token_id=PAD,
        bos_token_id=0,
        eos_token_id=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    transformers.RobertaForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def roberta_run(tmp_path_factory, tiny_roberta_dir, ag_news_train_csv, ag_news_test_csv):
    root = tmp_path_factory.mktemp("roberta_run")
    overrides = tiny_run_overrides(root, tiny_roberta_dir, ag_news_train_csv, ag_news_test_csv) + [
        "run.name=tiny_roberta",
        "model.kind=pretrained",
        "data.max_train_samples=200",
        "data.max_eval_samples=100",
        "train.max_steps=10",
        "train.per_device_batch_size=16",
        "train.learning_rate=1e-3",
        "train.warmup_ratio=0",
        "train.eval_every_steps=5",
        "run.license=mit",
        "train.mixed_precision=no",  # fp32 throughout, so evaluation and prediction must agree to float rounding
    ]
    reset_accelerate()
    try:
        with one_torch_thread():
            config = load_config(MINILM_CONFIG, overrides)
            metrics = finetune.run(config)
    finally:
        reset_accelerate()
    return config.run_dir, metrics


def test_auto_tokenizer_and_positions_follow_the_checkpoint(tiny_roberta_dir):
    tokenizer = load_tokenizer(TokenizerConfig(name_or_path=str(tiny_roberta_dir)))
    assert type(tokenizer).__name__.startswith("RobertaTokenizer") and tokenizer.is_fast
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_roberta_dir)
    # 50 rows in the table, padding at row 1, real tokens from row 2: 48 tokens fit. The config-only rule (used by
    # prediction, also with ONNX) agrees with the one that reads the model's modules.
    assert model.config.max_position_embeddings == USABLE_POSITIONS + 2
    assert max_positions(model) == config_max_positions(model.config) == USABLE_POSITIONS


def test_fixed_length_rows_pad_with_the_tokenizers_id_and_trimming_is_exact(tiny_roberta_dir, ag_news_test_csv):
    from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

    tokenizer = load_tokenizer(TokenizerConfig(name_or_path=str(tiny_roberta_dir)))
    texts = ["Oil falls", *ag_news_texts(ag_news_test_csv, 11)]
    features = Features({"text": Value("string"), "label": ClassLabel(names=["a", "b"])})
    split = Dataset.from_dict({"text": texts, "label": [i % 2 for i in range(len(texts))]}, features=features)
    tokenized, info = tokenize_splits(DatasetDict(train=split), tokenizer, TokenizerConfig(max_length=40), None, 48)
    rows = tokenized["train"]
    assert "token_type_ids" not in rows.column_names and info.max_length == 40
    ids, mask = np.asarray(rows["input_ids"]), np.asarray(rows["attention_mask"])
    assert ids.shape == (len(texts), 40)
    assert np.all(ids[mask == 0] == PAD) and np.all(ids[:, 0] == tokenizer.bos_token_id)  # <s>, then </s> at the end
    assert (mask[0] == 0).any() and rows["length"][0] == int(mask[0].sum())

    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_roberta_dir).eval()
    logits = {}
    with torch.no_grad():
        for trim in (True, False):
            batches = evaluation_loader(TokenizedRows(rows), 4, trim=trim)
            pieces = [
                (batch["row_index"], model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits)
                for batch in batches
            ]
            order = torch.cat([index for index, _ in pieces]).argsort()
            logits[trim] = torch.cat([values for _, values in pieces])[order]
    torch.testing.assert_close(logits[True], logits[False], atol=1e-5, rtol=1e-5)


def test_finetune_report_card_and_prediction_agree(roberta_run, tmp_path):
    run_dir, metrics = roberta_run
    assert metrics["run"]["model_kind"] == "pretrained"
    assert metrics["tokenization"]["max_length"] <= USABLE_POSITIONS
    assert metrics["test"]["num_samples"] == 100 and metrics["data"]["sizes"]["train"] == 200
    assert (run_dir / "report.md").is_file() and "tiny_roberta" in (run_dir / "report.md").read_text()

    card = ModelCard.load(run_dir / "model" / "README.md")
    (accuracy,) = [r.metric_value for r in card.data.eval_results if r.metric_type == "accuracy"]
    assert accuracy == json.loads((run_dir / "metrics.json").read_text())["test"]["accuracy"]
    assert card.data.license == "mit" and card.data.base_model is None  # a local folder names no Hub model

    with open(run_dir / "test_predictions.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:24]
    texts = [row["text"] for row in rows]
    evaluated = [row["predicted"] for row in rows]  # stage 4: fixed length, trimmed, length-sorted batches
    predicted = predict_texts(run_dir, texts, device="cpu", precision="fp32")  # per-batch padding
    assert [label for label, _ in predicted] == evaluated
    # Probabilities too (the CSV keeps 6 decimals): the paths pad differently but compute the same function.
    assert [score for _, score in predicted] == pytest.approx([float(row["score"]) for row in rows], abs=2e-6)
    classifier = transformers.pipeline("text-classification", model=str(run_dir / "model"), device="cpu")
    one_by_one = classifier(texts, truncation=True, max_length=metrics["tokenization"]["max_length"])
    assert [result["label"] for result in one_by_one] == evaluated

    # A bare copy of model/ (no run settings): the limit is the model's 48 positions, not its 50-row table.
    bare = shutil.copytree(run_dir / "model", tmp_path / "bare_model")
    long_text = " ".join(texts) * 3
    ((label, score),) = predict_texts(bare, [long_text], device="cpu", precision="fp32")
    assert label in metrics["labels"] and 0 < score <= 1


def test_checkpoint_without_tokenizer_files_is_an_error_naming_the_key(
    tiny_roberta_dir, tmp_path, capsys, ag_news_train_csv, ag_news_test_csv
):
    model_only = tmp_path / "model_only"
    model_only.mkdir()
    shutil.copy(tiny_roberta_dir / "config.json", model_only / "config.json")
    # transformers 5 would hand back an empty RoBERTa tokenizer (special tokens only) for this folder.
    with pytest.raises(TokenizerNotFound, match="has no tokenizer files"):
        load_tokenizer(TokenizerConfig(name_or_path=str(model_only)))
    overrides = tiny_run_overrides(tmp_path, tiny_roberta_dir, ag_news_train_csv, ag_news_test_csv) + [
        f"tokenizer.name_or_path={model_only}",
        "data.max_train_samples=40",
        "data.max_eval_samples=20",
    ]
    reset_accelerate()
    try:
        assert finetune.main(["--config", str(MINILM_CONFIG), *overrides]) == 2
    finally:
        reset_accelerate()
    err = capsys.readouterr().err
    assert f"tokenizer.name_or_path: cannot load '{model_only}'" in err and "no tokenizer files" in err
