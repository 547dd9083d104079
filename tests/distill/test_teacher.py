"""Distillation: the loss against a hand computation, exact accumulation with soft targets, the teacher-logit cache,
the transfer set (unlabelled file, augmentation) and the errors that name their key. Tiny random models only."""

from __future__ import annotations

import json
import math

import datasets
import numpy as np
import pytest
import torch

from pipeline import distill, finetune
from pipeline.common.errors import DataError
from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, DataConfig, DistillConfig, TrainConfig
from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification
from pipeline.report.tools import main as report_main
from pipeline.text.batching import TokenizedRows, collate_trimmed
from pipeline.train.loop import Trainer, create_accelerator
from pipeline.train.losses import CrossEntropySum, DistillationLoss, build_loss
from tests.helpers import MINILM_CONFIG, reset_accelerate

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory, tiny_bert_dir):
    """A tiny random BERT with AG News's class names, saved with its tokenizer: a model folder a teacher can be."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    config = BertConfig.from_pretrained(
        tiny_bert_dir, id2label=dict(enumerate(LABELS)), label2id={name: i for i, name in enumerate(LABELS)}
    )
    torch.manual_seed(1)
    path = tmp_path_factory.mktemp("teacher")
    BertForSequenceClassification(config).save_pretrained(path)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(path)
    return path


# ---------------------------------------------------------------------------------------------------------------
# The loss


def test_distillation_loss_matches_a_hand_computation():
    student = [[1.0, 0.0, -1.0, 0.5], [0.2, 0.3, 0.1, -0.4], [2.0, -1.0, 0.0, 0.0]]
    teacher = [[3.0, 0.0, 0.0, 1.0], [0.0, 2.0, -1.0, 0.0], [-1.0, 0.0, 4.0, 1.0]]
    labels = [0, 1, -1]  # the last row has no gold label: soft term only
    alpha, t = 0.3, 2.0

    def softmax(row, temperature):
        exps = [math.exp(v / temperature) for v in row]
        return [e / sum(exps) for e in exps]

    expected = 0.0
    for s_row, t_row, label in zip(student, teacher, labels):
        p_t, p_s = softmax(t_row, t), softmax(s_row, t)
        kl = sum(pt * math.log(pt / ps) for pt, ps in zip(p_t, p_s)) * t * t
        if label < 0:
            expected += kl
        else:
            expected += alpha * kl + (1 - alpha) * -math.log(softmax(s_row, 1.0)[label])
    batch = {"labels": torch.tensor(labels), "teacher_logits": torch.tensor(teacher)}
    total = DistillationLoss(alpha, t)(torch.tensor(student), batch)
    assert total.item() == pytest.approx(expected, rel=1e-5)


def test_alpha_zero_is_cross_entropy_and_the_loss_is_a_sum_over_rows():
    logits, teacher = torch.randn(6, 4), torch.randn(6, 4)
    batch = {"labels": torch.tensor([0, 1, 2, 3, 0, 1]), "teacher_logits": teacher}
    assert DistillationLoss(0.0, 3.0)(logits, batch).item() == pytest.approx(
        CrossEntropySum()(logits, batch).item(), rel=1e-5
    )
    halves = [{key: value[part] for key, value in batch.items()} for part in (slice(0, 3), slice(3, 6))]
    loss = DistillationLoss(0.7, 2.0)
    split = loss(logits[:3], halves[0]) + loss(logits[3:], halves[1])
    assert loss(logits, batch).item() == pytest.approx(split.item(), rel=1e-5)
    # The soft term vanishes when the student already matches the teacher.
    assert DistillationLoss(1.0, 2.0)(teacher, batch).item() == pytest.approx(0.0, abs=1e-5)


def test_build_loss_distils_only_with_a_teacher():
    assert isinstance(build_loss(TrainConfig()), CrossEntropySum)
    with_teacher = TrainConfig(distill=DistillConfig(teacher="runs/teacher", alpha=0.8, temperature=4.0))
    loss = build_loss(with_teacher)
    assert isinstance(loss, DistillationLoss) and (loss.alpha, loss.temperature) == (0.8, 4.0)


# ---------------------------------------------------------------------------------------------------------------
# Rows and batches carry the teacher's logits; accumulation stays exact


def _synthetic_split(rows: int, width: int = 16, seed: int = 0) -> datasets.Dataset:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, width + 1, rows)
    ids = [[101] + list(rng.integers(1000, 2000, n - 1)) + [0] * (width - n) for n in lengths]
    masks = [[1] * n + [0] * (width - n) for n in lengths]
    labels = [int(v) if i % 3 else -1 for i, v in enumerate(rng.integers(0, 4, rows))]  # a third unlabelled
    return datasets.Dataset.from_dict(
        {"input_ids": ids, "attention_mask": masks, "label": labels, "length": lengths.tolist()}
    )


def test_rows_carry_teacher_logits_into_trimmed_batches_and_the_default_path_is_unchanged():
    split = _synthetic_split(5)
    logits = np.arange(20, dtype=np.float32).reshape(5, 4)
    batch = collate_trimmed(TokenizedRows(split, teacher_logits=logits).__getitems__([3, 1]))
    assert torch.equal(batch["teacher_logits"], torch.from_numpy(logits[[3, 1]]))
    plain = collate_trimmed(TokenizedRows(split).__getitems__([3, 1]))
    assert set(plain) == {"input_ids", "attention_mask", "labels", "row_index"}
    with pytest.raises(ValueError, match="teacher logit rows"):
        TokenizedRows(split, teacher_logits=logits[:4])


def _train_encoder(tmp_path, rows, validation, batch_size: int, accumulation: int) -> dict[str, torch.Tensor]:
    reset_accelerate()
    torch.manual_seed(0)
    model = EncoderForSequenceClassification(
        EncoderClassifierConfig(
            vocab_size=2048,
            hidden_size=16,
            num_layers=1,
            num_heads=2,
            intermediate_size=32,
            dropout=0.0,
            attention_dropout=0.0,
            max_position_embeddings=32,
            id2label=dict(enumerate(LABELS)),
        )
    )
    config = TrainConfig(
        report_to="none",  # MLflow's store would cost more than these steps
        epochs=1,
        per_device_batch_size=batch_size,
        gradient_accumulation_steps=accumulation,
        learning_rate=1e-2,
        warmup_ratio=0.0,
        mixed_precision="no",
        group_by_length=False,
        log_every_steps=1000,
        distill=DistillConfig(teacher="teacher", alpha=0.4, temperature=2.0),
    )
    run_dir = tmp_path / f"b{batch_size}x{accumulation}"
    trainer = Trainer(
        model,
        rows,
        validation,
        config,
        create_accelerator(config, run_dir),
        run_dir,
        seed=0,
        label_names=LABELS,
        eval_batch_size=64,
        save_best=lambda best: None,
    )
    trainer.run()
    return {
        name: value.detach().clone()
        for name, value in trainer.accelerator.unwrap_model(trainer.model).state_dict().items()
    }


def test_accumulation_with_distillation_matches_one_big_batch(tmp_path, fresh_accelerate_state):
    # 20 rows, a third without gold label: batches of 8 (8, 8, 4) against windows of 4 micro-batches of 2 (the
    # last window short), and against plain batches of 2 to show the comparison can tell runs apart.
    split = _synthetic_split(20)
    logits = np.random.default_rng(1).normal(size=(20, 4)).astype(np.float32)
    rows = TokenizedRows(split, teacher_logits=logits)
    validation = TokenizedRows(_synthetic_split(8, seed=2).map(lambda row: {"label": max(row["label"], 0)}))
    big = _train_encoder(tmp_path, rows, validation, 8, 1)
    accumulated = _train_encoder(tmp_path, rows, validation, 2, 4)
    small = _train_encoder(tmp_path, rows, validation, 2, 1)
    equivalent = max((big[k] - accumulated[k]).abs().max().item() for k in big)
    different = max((big[k] - small[k]).abs().max().item() for k in big)
    assert equivalent < 1e-5
    assert different > 100 * equivalent


# ---------------------------------------------------------------------------------------------------------------
# The teacher: its logits, the cache, the checks


def test_teacher_logits_are_the_predictors_and_are_cached_until_the_weights_change(tmp_path, teacher_dir):
    from transformers import BertForSequenceClassification

    from pipeline.predict import Predictor

    texts = ["Stocks rally as oil falls", "Federer wins again", "New chip unveiled", "Talks resume"]
    source = distill.resolve_teacher(DistillConfig(teacher=str(teacher_dir)))
    first = distill.TeacherLabeller(source, LABELS, tmp_path / "cache", batch_size=2)
    logits = first.logits(texts)
    assert first.misses == 1 and logits.shape == (4, 4)
    predictor = Predictor.from_source(source, batch_size=2)
    np.testing.assert_allclose(torch.from_numpy(logits).softmax(-1).numpy(), predictor.infer(texts)[1], atol=2e-2)

    again = distill.TeacherLabeller(source, LABELS, tmp_path / "cache", batch_size=2)
    np.testing.assert_array_equal(again.logits(texts), logits)
    assert again.misses == 0 and again.computed_rows == 0
    assert again.logits(texts[:3]).shape == (3, 4) and again.misses == 1  # other texts: another entry

    copy = tmp_path / "changed_teacher"
    model = BertForSequenceClassification.from_pretrained(teacher_dir)
    with torch.no_grad():
        model.classifier.bias.add_(1.0)
    model.save_pretrained(copy)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (copy / name).write_bytes((teacher_dir / name).read_bytes())
    changed = distill.TeacherLabeller(
        distill.resolve_teacher(DistillConfig(teacher=str(copy))), LABELS, tmp_path / "cache", batch_size=2
    )
    assert changed.cache_path(texts) != first.cache_path(texts)
    changed.logits(texts)
    assert changed.misses == 1


@pytest.mark.parametrize("truncation", ["head", "head_tail", "tail"])
def test_the_teacher_labels_every_row_whatever_part_of_a_text_the_student_reads(
    tmp_path, teacher_dir, bert_tokenizer, truncation
):
    """Only plain head truncation keeps a tokenized split's `text` column: the teacher reads the untokenized texts
    (head_tail and tail once failed with "Column 'text' doesn't exist")."""
    from datasets import ClassLabel, Features, Value

    from pipeline.config.schema import TokenizerConfig
    from pipeline.text.tokenization import tokenize_splits

    features = Features({"text": Value("string"), "label": ClassLabel(names=LABELS), "row_id": Value("string")})
    texts = {
        "train": ["stocks rally as oil falls " * 4, "federer wins again", "new chip unveiled today " * 3],
        "validation": ["talks resume"],
        "test": ["markets slide"],
        distill.TRANSFER_SPLIT: ["a rocket launches " * 5],
    }
    splits = {
        name: datasets.Dataset.from_dict(
            {
                "text": rows,
                "label": [distill.NO_LABEL if name == distill.TRANSFER_SPLIT else 1] * len(rows),
                "row_id": [f"{name}{i}" for i in range(len(rows))],
            },
            features=features,
        )
        for name, rows in texts.items()
    }
    tokenizer_config = TokenizerConfig(max_length=8, truncation=truncation, cache=False)
    tokenized, _ = tokenize_splits(datasets.DatasetDict(splits), bert_tokenizer, tokenizer_config, None)
    config = load_config(MINILM_CONFIG, [f"train.distill.teacher={teacher_dir}", f"data.cache_dir={tmp_path}"])
    source = distill.resolve_teacher(config.train.distill)
    rows, record = distill.student_rows(config, splits, tokenized, LABELS, source, {})
    expected = distill.TeacherLabeller(source, LABELS, tmp_path / "fresh", 8).logits(
        texts["train"] + texts[distill.TRANSFER_SPLIT]
    )
    np.testing.assert_allclose(rows.teacher_logits.numpy(), expected, atol=1e-5)
    assert record["transfer_set"]["labelled"] == 3 and len(rows) == 4


def test_label_mismatches_are_named(teacher_dir, tiny_bert_dir):
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: .*same classes in another order"):
        distill.check_labels(LABELS, ["Sports", "World", "Business", "Sci/Tech"], teacher_dir)
    with pytest.raises(ConfigError, match=r"the data's Politics not among the teacher's classes"):
        distill.check_labels(LABELS, ["World", "Sports", "Business", "Politics"], teacher_dir)
    source = distill.resolve_teacher(DistillConfig(teacher=str(tiny_bert_dir)))  # LABEL_0 ... LABEL_1
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: the teacher's labels \(LABEL_0, LABEL_1"):
        distill.check_teacher(source, LABELS, DataConfig())
    distill.check_teacher(distill.resolve_teacher(DistillConfig(teacher=str(teacher_dir))), LABELS, DataConfig())


def test_a_multi_label_teacher_is_refused(tmp_path, teacher_dir):
    """Its logits are independent sigmoids, which the soft targets would read as a softmax over the classes."""
    from transformers import AutoConfig

    AutoConfig.from_pretrained(teacher_dir, problem_type="multi_label_classification").save_pretrained(tmp_path)
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((teacher_dir / name).read_bytes())
    source = distill.resolve_teacher(DistillConfig(teacher=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: .* is a multi-label model"):
        distill.check_teacher(source, LABELS, DataConfig())


def test_a_teacher_trained_on_texts_built_otherwise_is_refused_naming_the_keys(teacher_dir):
    """The teacher would label texts from other columns, or joined by another separator, than it was trained on."""
    import dataclasses

    from pipeline.data.text import TextSpec

    source = dataclasses.replace(
        distill.resolve_teacher(DistillConfig(teacher=str(teacher_dir))),
        text_spec=TextSpec(("title", "description"), " | ", False),
        reading_recorded=True,
    )
    same = DataConfig(text_columns=["title", "description"], text_separator=" | ")
    distill.check_teacher(source, LABELS, same)
    # Other names for as many columns, joined alike: another file's names for the same texts.
    distill.check_teacher(source, LABELS, DataConfig(text_columns=["headline", "body"], text_separator=" | "))
    with pytest.raises(
        ConfigError,
        match=r'train\.distill\.teacher: .*data\.text_columns is \["description"\] here, \["title", "description"\] '
        r"for the teacher; set data\.text_columns as the teacher's",
    ):
        distill.check_teacher(source, LABELS, DataConfig(text_columns=["description"], text_separator=" | "))
    with pytest.raises(ConfigError, match=r'data\.text_separator is " / " here, " \| " for the teacher'):
        distill.check_teacher(source, LABELS, DataConfig(text_columns=["title", "description"], text_separator=" / "))
    unrecorded = dataclasses.replace(source, reading_recorded=False)  # a folder that does not say: nothing to check
    distill.check_teacher(unrecorded, LABELS, DataConfig(text_columns=["description"]))


def test_a_teacher_that_is_not_a_model_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: .*neither a run directory"):
        distill.resolve_teacher(DistillConfig(teacher=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: model not found"):
        distill.resolve_teacher(DistillConfig(teacher=str(tmp_path / "missing")))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: .*no weights"):
        distill.resolve_teacher(DistillConfig(teacher=str(tmp_path)))


@pytest.mark.parametrize(
    "override, key",
    [
        ("train.distill.alpha=1.5", "train.distill.alpha"),
        ("train.distill.alpha=-0.1", "train.distill.alpha"),
        ("train.distill.temperature=0", "train.distill.temperature"),
        ("train.distill.temperature=-2", "train.distill.temperature"),
        ("train.distill.augment_copies=0", "train.distill.augment_copies"),
        ("train.distill.augment=shuffle", "train.distill.augment"),
    ],
)
def test_distillation_settings_out_of_range_name_their_key(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(MINILM_CONFIG, ["train.distill.teacher=runs/t", override])


def test_student_embeddings_start_from_the_teachers_principal_components(teacher_dir, bert_tokenizer):
    from transformers import AutoModelForSequenceClassification

    source = distill.resolve_teacher(DistillConfig(teacher=str(teacher_dir)))
    student = EncoderForSequenceClassification(
        EncoderClassifierConfig(
            vocab_size=bert_tokenizer.vocab_size,
            hidden_size=16,
            num_layers=1,
            num_heads=2,
            intermediate_size=32,
            id2label=dict(enumerate(LABELS)),
        )
    )
    record = distill.init_student_embeddings(student, source, bert_tokenizer)
    assert record["dimensions"] == 16 and 0 < record["variance_kept"] < 1
    table = AutoModelForSequenceClassification.from_pretrained(teacher_dir).get_input_embeddings().weight
    centred = (table - table.mean(0)).detach().double().numpy()
    expected = centred @ np.linalg.svd(centred, full_matrices=False)[2][:16].T  # (V, 16), columns up to sign
    got = student.encoder.embeddings.token.weight.detach().double().numpy()
    for column in range(16):
        assert abs(np.corrcoef(got[:, column], expected[:, column])[0, 1]) > 0.999

    class OtherVocabulary:
        def get_vocab(self):
            return {"[PAD]": 0}

        def __len__(self):
            return 1

    with pytest.raises(ConfigError, match=r"train\.distill\.init_embeddings: the teacher's vocabulary"):
        distill.init_student_embeddings(student, source, OtherVocabulary())
    with pytest.raises(ConfigError, match=r"train\.distill\.init_embeddings: only for a student trained from scratch"):
        load_config(MINILM_CONFIG, ["train.distill.teacher=runs/t", "train.distill.init_embeddings=true"])


def test_a_from_scratch_teacher_gives_the_student_its_embeddings(tmp_path, teacher_dir, bert_tokenizer):
    """README: the teacher may be the encoder as well as BERT; init_embeddings then reads the encoder's token table
    (transformers' get_input_embeddings did not know where it is: NotImplementedError)."""

    def encoder(hidden_size: int) -> EncoderForSequenceClassification:
        settings = dict(num_layers=1, num_heads=2, intermediate_size=32, id2label=dict(enumerate(LABELS)))
        return EncoderForSequenceClassification(
            EncoderClassifierConfig(vocab_size=bert_tokenizer.vocab_size, hidden_size=hidden_size, **settings)
        )

    teacher = encoder(hidden_size=24)
    teacher.save_pretrained(tmp_path / "teacher")
    bert_tokenizer.save_pretrained(tmp_path / "teacher")
    student = encoder(hidden_size=16)
    source = distill.resolve_teacher(DistillConfig(teacher=str(tmp_path / "teacher")))
    assert distill.init_student_embeddings(student, source, bert_tokenizer)["dimensions"] == 16
    table = teacher.encoder.embeddings.token.weight.detach().double().numpy()
    centred = table - table.mean(0)
    expected = centred @ np.linalg.svd(centred, full_matrices=False)[2][:16].T
    got = student.encoder.embeddings.token.weight.detach().double().numpy()
    assert all(abs(np.corrcoef(got[:, column], expected[:, column])[0, 1]) > 0.999 for column in range(16))


def test_transfer_settings_without_a_teacher_are_refused():
    with pytest.raises(ConfigError, match=r"data\.unlabeled_file: needs a teacher"):
        load_config(MINILM_CONFIG, ["data.unlabeled_file=more.csv"])
    with pytest.raises(ConfigError, match=r"train\.distill\.augment: needs a teacher"):
        load_config(MINILM_CONFIG, ["train.distill.augment=mask"])
    with pytest.raises(ConfigError, match=r"train\.distill\.init_embeddings: needs a teacher"):
        load_config(MINILM_CONFIG, ["model.kind=encoder", "train.distill.init_embeddings=true"])
    assert (
        load_config(MINILM_CONFIG, ["train.distill.teacher=runs/t", "train.distill.alpha=1"]).train.distill.alpha == 1
    )


# ---------------------------------------------------------------------------------------------------------------
# The transfer set


def test_unlabeled_file_reads_with_or_without_the_label_column_and_names_an_empty_row(tmp_path):
    config = DataConfig(column_names=["class_index", "title", "description"], text_columns=["title", "description"])
    headerless = tmp_path / "train_layout.csv"
    headerless.write_text('3,"Oil falls","Stocks rally"\n,"Federer","wins again"\n')
    assert distill.read_unlabeled(DataConfig(**{**vars(config), "unlabeled_file": str(headerless)})) == [
        "Oil falls Stocks rally",
        "Federer wins again",
    ]
    texts_only = tmp_path / "texts_only.csv"
    texts_only.write_text("title,description\nChip unveiled,by maker\n,\n")
    with pytest.raises(DataError, match=r"texts_only\.csv, line 3: empty text"):
        distill.read_unlabeled(DataConfig(**{**vars(config), "unlabeled_file": str(texts_only)}))
    dropping = DataConfig(**{**vars(config), "unlabeled_file": str(texts_only), "incomplete_rows": "drop"})
    assert distill.read_unlabeled(dropping) == ["Chip unveiled by maker"]


def test_unlabeled_file_is_read_with_data_quoting(tmp_path):
    unquoted = tmp_path / "unquoted.csv"
    unquoted.write_text('text\n"Free" entry now\nHe said "hi"\n')
    config = DataConfig(unlabeled_file=str(unquoted), quoting="none")
    assert distill.read_unlabeled(config) == ['"Free" entry now', 'He said "hi"']


def test_augmentation_is_seeded_cached_and_does_what_it_says(tmp_path):
    texts = ["the quick brown fox jumps over the lazy dog today", "markets rally as oil prices fall sharply again"]
    masked = DistillConfig(augment="mask", augment_copies=3, augment_word_probability=0.3)
    copies = distill.augment(texts, masked, seed=7, mask_token="[MASK]")
    assert copies == distill.augment(texts, masked, seed=7, mask_token="[MASK]")
    assert copies != distill.augment(texts, masked, seed=8, mask_token="[MASK]")
    for row, text in copies:
        original = texts[row].split()
        assert len(text.split()) == len(original) and "[MASK]" in text
        assert all(word in ("[MASK]", kept) for word, kept in zip(text.split(), original))
    ngrams = distill.augment(
        texts,
        DistillConfig(augment="ngram", augment_copies=4, augment_ngram_probability=1.0, augment_ngram_max=3),
        seed=0,
        mask_token="[MASK]",
    )
    assert ngrams and all(1 <= len(text.split()) <= 3 and text in texts[row] for row, text in ngrams)
    dropped = distill.augment(texts, DistillConfig(augment="dropout", augment_word_probability=0.5), 0, "[MASK]")
    assert all(len(text.split()) < len(texts[row].split()) for row, text in dropped)

    cached = distill.augmented_texts(texts, masked, 7, "[MASK]", tmp_path)
    assert cached == copies
    (entry,) = (tmp_path / "transfer_texts").iterdir()
    entry.write_text(json.dumps([[0, "from the cache"]]))
    assert distill.augmented_texts(texts, masked, 7, "[MASK]", tmp_path) == [(0, "from the cache")]


# ---------------------------------------------------------------------------------------------------------------
# A whole distilled run


def _distilled_config(tmp_path, tiny_run_config, teacher_dir):
    unlabeled = tmp_path / "unlabeled.csv"
    unlabeled.write_text("title,description\nChipmaker unveils,a faster processor\nStriker scores,twice in final\n")
    return tiny_run_config(
        "run.name=student",
        "model.kind=encoder",
        "model.encoder.hidden_size=32",
        "model.encoder.num_heads=2",
        "model.encoder.intermediate_size=64",
        "data.max_train_samples=40",
        "data.max_eval_samples=40",
        "train.epochs=1",
        "train.per_device_batch_size=16",
        "train.eval_every_steps=null",
        "eval.baseline=none",
        f"train.distill.teacher={teacher_dir}",
        "train.distill.alpha=0.5",
        "train.distill.temperature=3",
        "train.distill.augment=mask",
        f"data.unlabeled_file={unlabeled}",
        "eval.predict_speed_rows=30",
        "train.distill.init_embeddings=true",
    )


def test_a_distilled_run_records_its_teacher_transfer_set_and_prediction_speed(tmp_path, tiny_run_config, teacher_dir):
    config = _distilled_config(tmp_path, tiny_run_config, teacher_dir)
    metrics = finetune.run(config)
    record = metrics["distill"]
    assert record["teacher"] == str(teacher_dir) and (record["alpha"], record["temperature"]) == (0.5, 3.0)
    assert record["teacher_test_accuracy"] is None  # a bare model folder has no metrics.json
    assert record["transfer_set"]["labelled"] == 40 and record["transfer_set"]["unlabeled"] == 2
    assert 30 <= record["transfer_set"]["augmented"] <= 40
    assert record["transfer_set"]["total"] == 42 + record["transfer_set"]["augmented"]
    assert record["teacher_logits_from_cache"] is False
    assert record["init_embeddings"]["dimensions"] == 32
    assert metrics["throughput"]["predict_rows_per_second"] > 0 and metrics["throughput"]["predict_rows_timed"] == 30
    saved = json.loads((config.run_dir / "metrics.json").read_text())
    assert saved["distill"]["transfer_set"] == record["transfer_set"]
    report = (config.run_dir / "report.md").read_text()
    assert "Prediction rows/s" in report and "Distilled from" in report
    # The model card says how the student was made, from this record: teacher (by its folder's name), settings,
    # transfer set and embedding start; not "trained from scratch".
    card = (config.run_dir / "model" / "README.md").read_text()
    assert f"distilled from the teacher `{teacher_dir.name}`, whose token embeddings it started from" in card
    assert "trained from scratch" not in card and str(teacher_dir) not in card
    assert f"{record['alpha']:g} × KL(teacher ‖ student) at temperature {record['temperature']:g}" in card
    assert f"| transfer set | {record['transfer_set']['total']:,} texts: " in card
    assert f"first {record['init_embeddings']['dimensions']} principal components" in card

    # A run made before prediction speed was recorded gets it from `pipeline.report --measure-speed`.
    del saved["throughput"]["predict_rows_per_second"]
    (config.run_dir / "metrics.json").write_text(json.dumps(saved))
    assert report_main(["--measure-speed", str(config.run_dir)]) == 0
    remeasured = json.loads((config.run_dir / "metrics.json").read_text())["throughput"]
    assert remeasured["predict_rows_per_second"] > 0 and remeasured["predict_rows_timed"] == 40


@pytest.mark.slow  # two training runs
def test_a_second_distilled_run_reuses_the_teacher_logits(tmp_path, tiny_run_config, teacher_dir):
    config = _distilled_config(tmp_path, tiny_run_config, teacher_dir)
    assert finetune.run(config)["distill"]["teacher_logits_from_cache"] is False
    reset_accelerate()
    again = finetune.run(load_config(config.run_dir / "config.yaml", ["run.name=student2"]))
    assert again["distill"]["teacher_logits_from_cache"] is True
    assert again["distill"]["teacher_labelling_seconds"] == 0.0


def test_a_distilled_run_with_a_mismatched_teacher_stops_naming_the_key(tiny_run_config, tiny_bert_dir, capsys):
    config = tiny_run_config("run.name=bad", f"train.distill.teacher={tiny_bert_dir}")
    with pytest.raises(ConfigError, match=r"train\.distill\.teacher: the teacher's labels"):
        finetune.run(config)
