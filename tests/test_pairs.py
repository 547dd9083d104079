"""Sentence-pair tasks (data.text_pair_columns): the pair as one text, its encoding with segment ids exactly as the
tokenizer's own pair encoding, the checks, and a run whose model pipeline.predict, predict_texts and
transformers.pipeline all read alike."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import numpy as np
import pytest

from pipeline.common.errors import DataError
from pipeline.config.load import load_config
from pipeline.config.reading import PAIR_MARK
from pipeline.config.schema import ConfigError
from pipeline.data.text import TextSpec, segments_of
from pipeline.text.windows import LongTextRule, encode_documents
from tests.helpers import AG_NEWS_TRAIN_CSV, MINILM_CONFIG, require, tiny_run_overrides

PAIR_SPEC = TextSpec(("question",), " ", False, ("passage",))


def test_a_pair_is_one_text_of_two_segments():
    text = PAIR_SPEC.text_of(["Who won?", "  The home side won 2-1. "])
    assert text == f"Who won?{PAIR_MARK}The home side won 2-1."
    assert segments_of(text) == ["Who won?", "The home side won 2-1."]
    # A pair with a side missing has no text: it is an incomplete row, not a single text.
    assert PAIR_SPEC.text_of(["Who won?", None]) == PAIR_SPEC.text_of(["", "passage"]) == ""
    # A cell's own mark is read as a space, so that only the rule makes pairs.
    assert segments_of(TextSpec(("text",), " ", False).text_of([f"a{PAIR_MARK}b"])) == ["a b"]


def test_several_columns_per_side_are_joined_as_text_columns_are():
    spec = TextSpec(("title", "question"), " | ", False, ("passage", "notes"))
    assert spec.input_columns == ("title", "question", "passage", "notes")
    assert segments_of(spec.text_of(["T", "Q", "P", None])) == ["T | Q", "P"]


def test_the_rule_is_recorded_and_read_back():
    from pipeline.config.schema import DataConfig

    assert TextSpec.from_settings(PAIR_SPEC.to_settings(), DataConfig()) == PAIR_SPEC
    single = TextSpec(("body",), " ", False)
    assert TextSpec.from_settings(single.to_settings(), DataConfig()) == single
    assert TextSpec.from_settings({}, DataConfig()) == TextSpec.from_data_config(DataConfig())  # a bare config


PAIRS = [
    ("a short question", "a short answer"),
    ("what " * 40, "yes"),  # the first side is the longer: it is cut
    ("why?", "because " * 50),  # the second side is the longer
    ("one two three " * 9, "four five six " * 11),  # both long: cut alternately, as the tokenizer cuts
    ("same length here " * 4, "same length there " * 4),
]


@pytest.mark.parametrize("max_length", [16, 23, 64])
def test_pairs_are_encoded_as_the_tokenizer_encodes_them(bert_tokenizer, max_length):
    """Rows, segment ids and cuts equal the tokenizer's own pair encoding (longest_first), which
    transformers.pipeline uses: a long pair reads alike in pipeline.predict and in transformers."""
    texts = [PAIR_SPEC.join_pair(first, second.strip()) for first, second in PAIRS]
    encoded = encode_documents(bert_tokenizer, texts, max_length, LongTextRule())
    expected = bert_tokenizer(
        [first for first, _ in PAIRS],
        [second.strip() for _, second in PAIRS],
        truncation="longest_first",
        max_length=max_length,
        return_token_type_ids=True,
    )
    assert encoded.rows == expected["input_ids"]
    assert encoded.token_types == expected["token_type_ids"]
    untruncated = bert_tokenizer([f for f, _ in PAIRS], [s.strip() for _, s in PAIRS])["input_ids"]
    # content_lengths leave out the tokens around one text ([CLS], [SEP]): a pair counts its middle [SEP].
    assert encoded.content_lengths.tolist() == [len(ids) - 2 for ids in untruncated]


def test_single_texts_beside_pairs_keep_segment_zero(bert_tokenizer):
    encoded = encode_documents(bert_tokenizer, ["just one text", PAIR_SPEC.join_pair("a", "b")], 32, LongTextRule())
    assert set(encoded.token_types[0]) == {0}
    assert encoded.token_types[1] == [0, 0, 0, 1, 1]  # [CLS] a [SEP] | b [SEP]
    assert encode_documents(bert_tokenizer, ["only single texts"], 32, LongTextRule()).token_types is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data.text_pair_columns=[description]"], "'description' is also in data.text_columns"),
        (["data.text_pair_columns=[class_index]"], "holds the label column 'class_index'"),
        (["data.text_pair_columns=[body]", "tokenizer.long_text=chunk"], "tokenizer.long_text: chunk"),
        (["data.text_pair_columns=[body]", "tokenizer.truncation=head_tail"], "tokenizer.truncation: head_tail"),
        (["data.text_pair_columns=[]"], "data.text_pair_columns: name at least one column"),
        (
            ["data.text_pair_columns=[body]", "data.split_column=body", "data.test_file=null"],
            "is also read by data.text_pair",
        ),
        (["data.text_separator=\u241e"], "data.text_separator: .* the mark of a pair"),
    ],
)
def test_settings_a_pair_cannot_have_are_refused(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(MINILM_CONFIG, overrides)


def write_pairs(path: Path, rows: list[tuple[str, str, str]], header=("headline", "body", "label")) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def matching_pairs(count: int, seed: int, skip: int = 0) -> list[tuple[str, str, str]]:
    """AG News headlines with their own description ("match") or another row's ("mismatch"): a task only a model
    reading both texts together can learn (a bag of words cannot)."""
    with require(AG_NEWS_TRAIN_CSV).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[skip : skip + count]
    rng = random.Random(seed)
    pairs = []
    for index, row in enumerate(rows):
        if index % 2:
            other = rows[(index + 1 + rng.randrange(len(rows) - 1)) % len(rows)]
            pairs.append((row["title"], other["description"], "mismatch"))
        else:
            pairs.append((row["title"], row["description"], "match"))
    return pairs


def pair_overrides(root: Path, model_dir: Path, train: Path, test: Path) -> list[str]:
    return [
        *tiny_run_overrides(root, model_dir, train, test),
        "data.column_names=null",
        "data.text_columns=[headline]",
        "data.text_pair_columns=[body]",
        "data.label_column=label",
        "data.label_names=null",
        "data.label_index_base=null",
    ]


def test_a_missing_second_text_is_refused_naming_the_row(tmp_path, tiny_bert_dir):
    from pipeline.data.load import load_splits

    rows = matching_pairs(40, seed=0)
    rows[7] = (rows[7][0], "", rows[7][2])
    train = write_pairs(tmp_path / "train.csv", rows)
    config = load_config(MINILM_CONFIG, pair_overrides(tmp_path, tiny_bert_dir, train, train))
    with pytest.raises(DataError, match=r"line 9: empty text in headline or in body \(a pair needs both\)"):
        load_splits(config.data, 0)


def test_a_missing_pair_column_names_its_setting(tmp_path, tiny_bert_dir):
    from pipeline.data.load import load_splits

    train = write_pairs(tmp_path / "train.csv", matching_pairs(40, seed=0), header=("headline", "text", "label"))
    config = load_config(MINILM_CONFIG, pair_overrides(tmp_path, tiny_bert_dir, train, train))
    with pytest.raises(DataError, match=r"'body'.*data\.text_pair_columns"):
        load_splits(config.data, 0)


def test_a_checkpoint_with_one_segment_embedding_is_refused_for_pairs(tmp_path, bert_tokenizer, capsys):
    """BERT-style checkpoints pretrained on single texts (type_vocab_size 1) cannot embed the second text's segment
    id: the run stops before training with the key and the way out, not with an index error mid-step."""
    from pipeline import finetune
    from tests.helpers import reset_accelerate, tiny_bert_classifier

    model_dir = tmp_path / "one_segment"
    tiny_bert_classifier(bert_tokenizer, ["match", "mismatch"], layers=1, segments=1).save_pretrained(model_dir)
    bert_tokenizer.save_pretrained(model_dir)
    train = write_pairs(tmp_path / "train.csv", matching_pairs(40, seed=0))
    test = write_pairs(tmp_path / "test.csv", matching_pairs(20, seed=1, skip=40))
    reset_accelerate()
    try:
        code = finetune.main(["--config", str(MINILM_CONFIG), *pair_overrides(tmp_path, model_dir, train, test)])
    finally:
        reset_accelerate()
    assert code == 2
    err = capsys.readouterr().err
    assert "model.name_or_path: " in err and "has type_vocab_size 1" in err and "data.text_columns" in err
    assert not list((tmp_path / "runs").glob("*/model"))


def test_a_model_without_segment_embeddings_reads_pairs_by_its_separators():
    """DeBERTa-v2/v3 have type_vocab_size 0 (no segment embedding at all) and ignore the segment ids their tokenizer
    gives: not refused, unlike a single segment embedding, which the second text's ids would index past."""
    from types import SimpleNamespace

    from pipeline.models import require_segments

    def model(segments):
        return SimpleNamespace(config=SimpleNamespace(type_vocab_size=segments, name_or_path="m"))

    require_segments(model(0), "model.name_or_path")
    require_segments(model(2), "model.name_or_path")
    with pytest.raises(ConfigError, match="model.name_or_path: 'm' has type_vocab_size 1"):
        require_segments(model(1), "model.name_or_path")


def test_the_tokenized_splits_and_batches_carry_segment_ids(tmp_path, tiny_bert_dir, bert_tokenizer):
    from pipeline.data.load import load_splits
    from pipeline.text.batching import TokenizedRows, collate_trimmed, model_inputs
    from pipeline.text.tokenization import tokenize_splits

    train = write_pairs(tmp_path / "train.csv", matching_pairs(60, seed=0))
    test = write_pairs(tmp_path / "test.csv", matching_pairs(20, seed=0, skip=60))
    config = load_config(MINILM_CONFIG, pair_overrides(tmp_path, tiny_bert_dir, train, test))
    splits = load_splits(config.data, 0)
    tokenized, info = tokenize_splits(splits, bert_tokenizer, config.tokenizer, None)
    first = splits["train"][0]["text"]
    expected = bert_tokenizer(*segments_of(first), truncation=True, max_length=info.max_length)
    row = tokenized["train"][0]
    assert row["input_ids"][: row["length"]] == expected["input_ids"]
    assert row["token_type_ids"][: row["length"]] == expected["token_type_ids"]
    batch = collate_trimmed(TokenizedRows(tokenized["train"]).__getitems__([0, 1, 2]))
    inputs = model_inputs(batch)
    assert set(inputs) == {"input_ids", "attention_mask", "token_type_ids"}
    assert inputs["token_type_ids"].shape == inputs["input_ids"].shape
    assert int(inputs["token_type_ids"].max()) == 1


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory, tiny_bert_dir) -> Path:
    """A tiny BERT trained for one epoch on headline/body pairs: what prediction must read as training did."""
    from pipeline.finetune import main
    from tests.helpers import reset_accelerate

    root = tmp_path_factory.mktemp("pairs")
    train = write_pairs(root / "train.csv", matching_pairs(300, seed=0))
    test = write_pairs(root / "test.csv", matching_pairs(60, seed=1, skip=300))
    reset_accelerate()
    main(["--config", str(MINILM_CONFIG), *pair_overrides(root, tiny_bert_dir, train, test), "run.name=pairs"])
    reset_accelerate()
    return root / "runs" / "pairs"


def test_predict_reads_the_pair_columns_as_training_did(pair_run, tmp_path):
    import pandas as pd

    from pipeline.predict.cli import main as predict

    test = pair_run.parent.parent / "test.csv"
    output = tmp_path / "labelled.csv"
    predict(["--model", str(pair_run), "--input", str(test), "--output", str(output), "--prefix", "pred_"])
    labelled = pd.read_csv(output)
    recorded = pd.read_csv(pair_run / "test_predictions.csv")
    assert list(labelled["pred_label"]) == list(recorded["predicted"])
    assert recorded["text"].str.contains(PAIR_MARK).all()  # the written texts show the pair


def test_predict_takes_other_column_names_for_both_texts(pair_run, tmp_path):
    import pandas as pd

    from pipeline.predict.cli import main as predict

    test = pd.read_csv(pair_run.parent.parent / "test.csv").rename(columns={"headline": "q", "body": "p"})
    test.drop(columns="label").to_csv(tmp_path / "renamed.csv", index=False)
    output = tmp_path / "labelled.csv"
    arguments = ["--model", str(pair_run), "--input", str(tmp_path / "renamed.csv"), "--output", str(output)]
    predict([*arguments, "--text-columns", "q", "--text-pair-columns", "p"])
    recorded = pd.read_csv(pair_run / "test_predictions.csv")
    assert list(pd.read_csv(output)["label"]) == list(recorded["predicted"])


def test_a_single_text_model_refuses_pair_columns(pair_run):
    from pipeline.predict.source import PredictError, check_pair_columns

    single = TextSpec(("text",), " ", False)
    with pytest.raises(PredictError, match="--text-pair-columns: the model was trained on single texts"):
        check_pair_columns(single, ["passage"], True, "--text-pair-columns")
    check_pair_columns(single, ["passage"], False, "--text-pair-columns")  # a folder that records nothing: believed


def test_predict_texts_takes_tuples_and_dicts_and_refuses_a_bare_text(pair_run):
    import pandas as pd

    from pipeline.predict import Predictor, predict_dataframe, predict_texts
    from pipeline.predict.source import PredictError

    predictor = Predictor.from_path(pair_run, device="cpu", precision="fp32")
    test = pd.read_csv(pair_run.parent.parent / "test.csv")
    pairs = list(zip(test["headline"], test["body"]))
    as_tuples = predict_texts(predictor, pairs)
    as_dicts = predict_texts(predictor, [{"text": first, "text_pair": second} for first, second in pairs])
    assert as_tuples == as_dicts
    frame = predict_dataframe(predictor, test, prefix="pred_")
    assert list(frame["pred_label"]) == [label for label, _ in as_tuples]
    assert predict_texts(predictor, [("a headline", None)]) == [("", pytest.approx(np.nan, nan_ok=True))]
    with pytest.raises(PredictError, match=r"reads sentence pairs \(headline; body\)"):
        predict_texts(predictor, ["a headline alone"])


def test_transformers_pipeline_reads_the_saved_model_as_pipeline_predict(pair_run):
    import pandas as pd
    from transformers import pipeline

    from pipeline.predict import Predictor, predict_texts

    test = pd.read_csv(pair_run.parent.parent / "test.csv")
    pairs = list(zip(test["headline"], test["body"]))
    predictor = Predictor.from_path(pair_run, device="cpu", precision="fp32")
    ours = predict_texts(predictor, pairs)
    max_length = predictor.max_length
    classifier = pipeline("text-classification", model=str(pair_run / "model"), device="cpu")
    theirs = classifier([{"text": a, "text_pair": b} for a, b in pairs], truncation=True, max_length=max_length)
    assert [row["label"] for row in theirs] == [label for label, _ in ours]
    np.testing.assert_allclose([row["score"] for row in theirs], [score for _, score in ours], atol=1e-4)
    card = (pair_run / "model" / "README.md").read_text()
    assert 'classifier({"text": ' in card and '"text_pair": ' in card
    assert "a sentence pair: its first text the `headline` column, its second the `body` column" in card
    assert "given a pair of texts, it" in card
    assert f"A pair longer than {max_length} tokens is cut to that length, keeping the start of both texts" in card


def test_a_pair_model_exports_with_segment_ids_and_predicts_as_pytorch(pair_run):
    pytest.importorskip("onnxruntime")
    import pandas as pd

    from pipeline.export import export_run
    from pipeline.predict import Predictor, predict_texts

    record = export_run(pair_run, openvino=False)
    assert record["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert record["variants"]["fp32"]["status"] == "verified"
    test = pd.read_csv(pair_run.parent.parent / "test.csv")
    pairs = list(zip(test["headline"], test["body"]))
    exported = Predictor.from_path(pair_run, device="cpu", backend="onnx")
    assert exported.backend_name.startswith("onnx")
    reference = Predictor.from_path(pair_run, device="cpu", precision="fp32", backend="torch")
    ours, theirs = predict_texts(exported, pairs), predict_texts(reference, pairs)
    assert [label for label, _ in ours] == [label for label, _ in theirs]
    np.testing.assert_allclose([p for _, p in ours], [p for _, p in theirs], atol=1e-4)


def test_augmented_copies_of_a_pair_stay_pairs():
    from pipeline.config.schema import DistillConfig
    from pipeline.distill.transfer import augment

    distill = DistillConfig(augment="mask_ngram", augment_copies=3, augment_word_probability=0.5)
    texts = [PAIR_SPEC.join_pair("who scored the late goal", "the striker scored in the last minute")]
    copies = augment(texts, distill, seed=0, mask_token="[MASK]")
    assert copies and all(len(segments_of(text)) == 2 for _, text in copies)


def test_the_encoder_learns_segment_embeddings_for_pairs(bert_tokenizer, tmp_path):
    import torch

    from pipeline.config.schema import ModelConfig
    from pipeline.models import build_model, load_classifier

    config = ModelConfig(kind="encoder")
    model, _ = build_model(config, ["match", "mismatch"], bert_tokenizer, pairs=True)
    model.eval()
    encoded = bert_tokenizer("a headline", "its story", return_tensors="pt")
    all_first = {**encoded, "token_type_ids": torch.zeros_like(encoded["token_type_ids"])}
    with torch.no_grad():
        logits = model(**encoded).logits
        assert not torch.allclose(logits, model(**all_first).logits)  # the segments are read
        model.save_pretrained(tmp_path)
        reloaded = load_classifier(tmp_path)
        torch.testing.assert_close(reloaded.eval()(**encoded).logits, logits)
    single, _ = build_model(config, ["match", "mismatch"], bert_tokenizer)
    assert single.encoder.embeddings.segment is None  # single texts: no table, segment ids ignored
    with torch.no_grad():
        torch.testing.assert_close(single.eval()(**encoded).logits, single(**all_first).logits)


def test_evaluate_overrides_may_rename_pair_columns_but_not_change_what_the_model_reads(pair_run):
    from pipeline.evaluate import check_same_kind_of_text, reading_config
    from pipeline.run.directory import RunDir

    run, test = RunDir(pair_run), pair_run.parent.parent / "test.csv"
    renamed = reading_config(run, ["data.text_columns=[q]", "data.text_pair_columns=[p]"], test)
    assert renamed.data.text_pair_columns == ["p"]
    with pytest.raises(ConfigError, match="trained on sentence pairs .*not change what the model reads"):
        reading_config(run, ["data.text_pair_columns=null"], test)
    with pytest.raises(ConfigError, match="trained on single texts"):
        check_same_kind_of_text(None, ["passage"])


def test_a_pair_teacher_and_its_student_join_columns_alike(tmp_path):
    from pipeline.distill.teacher import check_reading
    from pipeline.predict.source import ModelSource

    teacher = ModelSource(tmp_path, TextSpec(("q",), " ", False, ("title", "body")), 64)
    check_reading(teacher, TextSpec(("question",), " ", False, ("heading", "text")))  # other names: the same texts
    with pytest.raises(ConfigError, match="data.text_separator"):
        check_reading(teacher, TextSpec(("question",), " | ", False, ("heading", "text")))
    with pytest.raises(ConfigError, match="data.text_pair_columns"):
        check_reading(teacher, TextSpec(("question",), " ", False))


def test_a_long_pair_budget_warning_offers_what_pairs_allow(tmp_path, tiny_bert_dir, bert_tokenizer, caplog):
    from pipeline.data.load import load_splits
    from pipeline.text.tokenization import tokenize_splits

    train = write_pairs(tmp_path / "train.csv", matching_pairs(60, seed=0))
    test = write_pairs(tmp_path / "test.csv", matching_pairs(20, seed=0, skip=60))
    config = load_config(
        MINILM_CONFIG, [*pair_overrides(tmp_path, tiny_bert_dir, train, test), "tokenizer.max_length=16"]
    )
    with caplog.at_level("WARNING", logger="pipeline.text.tokenization"):
        tokenize_splits(load_splits(config.data, 0), bert_tokenizer, config.tokenizer, None)
    warning = " ".join(record.getMessage() for record in caplog.records)
    assert "reads only the start of both texts (the longer one cut at its end) of those pairs" in warning
    assert "head_tail" not in warning and "chunk" not in warning


def test_a_folder_that_records_nothing_may_be_read_as_pairs(tiny_bert_dir):
    from pipeline.predict import Predictor, predict_texts
    from pipeline.predict.source import PredictError

    pairs = Predictor.from_path(tiny_bert_dir, device="cpu", text_pair_columns=["passage"])
    one = predict_texts(pairs, {"text": "a question", "text_pair": "its passage"})  # one pair, as transformers takes
    assert len(one) == 1 and one == predict_texts(pairs, [("a question", "its passage")])
    single = Predictor.from_path(tiny_bert_dir, device="cpu")
    with pytest.raises(PredictError, match="pair given to a model trained on single texts"):
        predict_texts(single, [{"text": "a question", "text_pair": "its passage"}])


def test_dropped_half_pairs_are_listed_with_the_side_they_had(tmp_path, tiny_bert_dir):
    from pipeline.data.load import load_data

    rows = matching_pairs(40, seed=0)
    rows[3] = (rows[3][0], "", rows[3][2])  # no body
    rows[5] = ("", rows[5][1], rows[5][2])  # no headline
    train = write_pairs(tmp_path / "train.csv", rows)
    test = write_pairs(tmp_path / "test.csv", matching_pairs(20, seed=0, skip=40))
    overrides = [*pair_overrides(tmp_path, tiny_bert_dir, train, test), "data.incomplete_rows=drop"]
    removed = {row.row_id: row for row in load_data(load_config(MINILM_CONFIG, overrides).data, 0).removed}
    assert removed["5"].reason == "incomplete: no text in body (data.incomplete_rows: drop)"
    assert removed["5"].text == f"{rows[3][0]}{PAIR_MARK}"
    assert removed["7"].reason == "incomplete: no text in headline (data.incomplete_rows: drop)"
    assert removed["7"].text == f"{PAIR_MARK}{rows[5][1]}"


def test_a_half_empty_pair_to_label_names_its_empty_side(tiny_bert_dir, tmp_path):
    """The error cell of a pair with one text missing names that side's columns (as removed_rows.csv does), not
    both sides' as if either could be the one."""
    import pandas as pd

    from pipeline.predict import Predictor, predict_dataframe
    from pipeline.predict.cli import main as predict

    frame = pd.DataFrame(
        {"question": ["Who won?", "Who won?", "", None], "passage": ["Federer won.", "", "Federer won.", " "]}
    )
    expected = [
        "",
        "no text in passage (a pair needs both)",
        "no text in question (a pair needs both)",
        "no text in question and no text in passage",
    ]
    pairs = Predictor.from_path(tiny_bert_dir, device="cpu", text_pair_columns=["passage"])
    labelled = predict_dataframe(pairs, frame, text_columns=["question"])
    assert labelled["error"].tolist() == expected
    assert labelled["label"].tolist()[0] != "" and labelled["label"].tolist()[1:] == ["", "", ""]

    frame.to_csv(tmp_path / "pairs.csv", index=False)
    output = tmp_path / "labelled.csv"
    arguments = ["--model", str(tiny_bert_dir), "--input", str(tmp_path / "pairs.csv"), "--output", str(output)]
    predict([*arguments, "--text-columns", "question", "--text-pair-columns", "passage"])
    assert pd.read_csv(output, keep_default_na=False)["error"].tolist() == expected
