"""Decision thresholds (pipeline.scoring.thresholds): chosen on validation, stored with the model, applied the same way."""

import logging
import re

import numpy as np
import pytest

from pipeline.config.schema import ConfigError
from pipeline.scoring.thresholds import (
    KIND_BINARY,
    KIND_FLAG,
    KIND_MULTI_LABEL,
    Decision,
    check_setting,
    choose_decision,
    choose_threshold,
    default_decision,
)


def binary_validation(seed: int = 0, rows: int = 400):
    """Scores of a decent binary classifier: positives score higher on average."""
    rng = np.random.default_rng(seed)
    gold = rng.random(rows) < 0.3
    positive = np.clip(rng.normal(np.where(gold, 0.7, 0.35), 0.15), 0.001, 0.999)
    return np.stack([1 - positive, positive], axis=1), gold.astype(np.int64)


def precision_recall(predicted: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    true_positive = (predicted & gold).sum()
    return true_positive / max(predicted.sum(), 1), true_positive / gold.sum()


def test_precision_target_gives_the_lowest_threshold_reaching_it():
    probabilities, gold = binary_validation()
    decision = choose_decision({"precision": 0.9}, probabilities, gold, ["neg", "pos"], multi_label=False)
    assert decision.kind == KIND_BINARY and list(decision.thresholds) == ["pos"]
    threshold = decision.thresholds["pos"]
    scores, positive = probabilities[:, 1], gold == 1
    precision, _ = precision_recall(scores >= threshold, positive)
    assert precision >= 0.9
    lower = np.unique(scores[scores < threshold])
    assert all(precision_recall(scores >= t, positive)[0] < 0.9 for t in lower[-5:])  # nothing lower reaches it
    assert decision.chosen["pos"]["validation_precision"] == pytest.approx(precision)
    assert decision.predict(probabilities).tolist() == (scores >= threshold).astype(int).tolist()


def test_recall_target_keeps_the_recall_at_the_highest_threshold():
    probabilities, gold = binary_validation(1)
    decision = choose_decision({"recall": 0.95}, probabilities, gold, ["neg", "pos"], multi_label=False)
    threshold, scores = decision.thresholds["pos"], probabilities[:, 1]
    assert precision_recall(scores >= threshold, gold == 1)[1] >= 0.95
    admitted = scores[scores >= threshold].min()  # the lowest validation score labelled positive
    higher = np.unique(scores[scores > admitted])[:3]
    assert all(precision_recall(scores >= t, gold == 1)[1] < 0.95 for t in higher)


@pytest.mark.parametrize("setting", ["best_f1", {"precision": 0.9}, {"recall": 0.9}], ids=str)
def test_a_chosen_threshold_sits_midway_between_validation_scores(setting):
    """A score a rounding error below the lowest admitted one (another runtime, bf16) gets the same label."""
    probabilities, gold = binary_validation(4)
    scores = probabilities[:, 1]
    threshold = choose_decision(setting, probabilities, gold, ["neg", "pos"], multi_label=False).thresholds["pos"]
    admitted, below = scores[scores >= threshold].min(), scores[scores < threshold].max()
    assert threshold == pytest.approx((admitted + below) / 2)
    assert admitted - threshold > 1e-6 and threshold - below > 1e-6


def test_best_f1_beats_every_other_threshold():
    probabilities, gold = binary_validation(2)
    threshold, record, _ = choose_threshold("best_f1", probabilities[:, 1], gold == 1)

    def f1(t):
        precision, recall = precision_recall(probabilities[:, 1] >= t, gold == 1)
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    assert f1(threshold) >= max(f1(t) for t in np.linspace(0.05, 0.95, 91)) - 1e-12
    assert record["setting"] == "best_f1" and "fallback" not in record


def test_unreachable_precision_warns_and_falls_back_to_best_f1(caplog):
    probabilities, gold = binary_validation(3)
    probabilities[:, 1] = np.where(gold == 1, 0.6, 0.6)  # one score for all: precision = base rate at best
    with caplog.at_level(logging.WARNING, logger="pipeline.scoring.thresholds"):
        decision = choose_decision({"precision": 0.99}, probabilities, gold, ["neg", "pos"], multi_label=False)
    assert "no threshold reaches precision 0.99" in decision.chosen["pos"]["fallback"]
    assert "best_f1" in decision.chosen["pos"]["fallback"]
    assert "precision 0.99" in caplog.text


def test_multi_label_thresholds_per_class_and_the_default_half():
    rng = np.random.default_rng(4)
    gold = (rng.random((300, 3)) < [0.5, 0.2, 0.05]).astype(np.float32)
    probabilities = np.clip(gold * 0.4 + rng.random((300, 3)) * 0.6, 0, 1)
    default = default_decision(["a", "b", "c"], multi_label=True)
    assert default.kind == KIND_MULTI_LABEL and default.vector().tolist() == [0.5, 0.5, 0.5]
    assert (default.predict(probabilities) == (probabilities >= 0.5)).all()
    decision = choose_decision({"a": 0.3, "c": "best_f1"}, probabilities, gold, ["a", "b", "c"], multi_label=True)
    assert decision.thresholds["a"] == 0.3 and "b" not in decision.thresholds
    assert decision.vector()[1] == 0.5  # an unnamed class keeps the default
    predicted = decision.predict(probabilities)
    assert predicted.shape == (300, 3) and predicted.dtype == bool


def test_multi_class_threshold_flags_rows_instead_of_relabelling():
    probabilities = np.array([[0.5, 0.3, 0.2], [0.9, 0.05, 0.05], [0.2, 0.35, 0.45]])
    gold = np.array([0, 0, 2])
    decision = choose_decision(0.6, probabilities, gold, ["x", "y", "z"], multi_label=False)
    assert decision.kind == KIND_FLAG
    assert decision.predict(probabilities).tolist() == [0, 0, 2]  # argmax, never forced
    assert decision.low_confidence(probabilities).tolist() == [True, False, True]


def test_a_multi_class_threshold_for_some_classes_never_flags_the_others():
    """eval.threshold: {x: 0.6}: a row whose top class is y or z is not flagged, however low its probability."""
    probabilities = np.array([[0.5, 0.3, 0.2], [0.3, 0.35, 0.35], [0.2, 0.45, 0.35]])
    decision = choose_decision({"x": 0.6}, probabilities, np.array([0, 1, 1]), ["x", "y", "z"], multi_label=False)
    assert decision.thresholds == {"x": 0.6}
    assert decision.low_confidence(probabilities).tolist() == [True, False, False]


@pytest.mark.parametrize("setting", ["best_f1", {"precision": 0.99}, {"recall": 0.9}], ids=str)
def test_a_class_that_validation_never_predicts_falls_back_with_a_warning(setting, caplog):
    """Multi-class: a rare class that no validation row has as its top prediction gives no candidate threshold."""
    probabilities = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.5, 0.1, 0.4], [0.3, 0.6, 0.1]])
    gold = np.array([0, 1, 2, 1])  # class z is never the argmax
    with caplog.at_level(logging.WARNING, logger="pipeline.scoring.thresholds"):
        decision = choose_decision(setting, probabilities, gold, ["x", "y", "z"], multi_label=False)
    assert decision.thresholds["z"] == 0.5
    assert "no validation row is predicted as the class" in decision.chosen["z"]["fallback"]
    assert "'z'" in caplog.text


def test_a_recall_that_no_threshold_keeps_takes_the_lowest_with_a_warning():
    probabilities = np.array([[0.7, 0.3], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55], [0.3, 0.7], [0.9, 0.1]])
    gold = np.array([0, 1, 1, 1, 1, 0])
    # Three classes' flag rule on the first two columns: row 2 of class 1 scores -inf for class 1 (argmax is 0).
    probabilities = np.concatenate([probabilities, np.zeros((6, 1))], axis=1)
    decision = choose_decision({"y": {"recall": 0.99}}, probabilities, gold, ["x", "y", "z"], multi_label=False)
    assert decision.thresholds["y"] == 0.275  # midway below the lowest score among rows predicted y (0.55)
    assert "no threshold keeps recall 0.99" in decision.chosen["y"]["fallback"]
    assert decision.chosen["y"]["validation_recall"] == 0.75


def test_decision_round_trips_through_its_record():
    probabilities, gold = binary_validation(5)
    decision = choose_decision("best_f1", probabilities, gold, ["neg", "pos"], multi_label=False)
    again = Decision.from_dict(decision.to_dict(), ["neg", "pos"])
    assert again.predict(probabilities).tolist() == decision.predict(probabilities).tolist()
    with pytest.raises(ValueError, match="'other'"):
        Decision.from_dict({"kind": "binary", "thresholds": {"other": 0.4}}, ["neg", "pos"])


def test_settings_naming_classes_are_checked_before_training():
    with pytest.raises(ConfigError, match=r"eval\.threshold\.Nope: no such class"):
        check_setting({"Nope": 0.5}, ["World", "Sports"], multi_label=True)
    with pytest.raises(ConfigError, match=r"eval\.threshold\.neg: a binary task thresholds its positive") as caught:
        check_setting({"neg": 0.5}, ["neg", "pos"], multi_label=False)
    assert str(caught.value).endswith("to threshold 'neg', list it second: data.label_names=[pos, neg]")
    check_setting({"precision": 0.9}, ["neg", "pos"], multi_label=False)  # a target, not a class


def test_a_binary_threshold_says_which_class_it_acts_on(caplog):
    """Inferred class names sort case-sensitively ('Sports' before 'other'): the log names the positive class."""
    probabilities, gold = binary_validation()
    with caplog.at_level(logging.INFO, logger="pipeline.scoring.thresholds"):
        decision = choose_decision("best_f1", probabilities, gold, ["Sports", "other"], multi_label=False)
    assert list(decision.thresholds) == ["other"]
    assert "acts on the positive class 'other', the second of ['Sports', 'other']" in caplog.text


# --- Through a run: chosen on validation, stored in model/decision.json, used by prediction


def test_a_binary_run_stores_its_threshold_and_prediction_uses_it(tmp_path, tiny_bert_dir, fresh_accelerate_state):
    import json

    import pandas as pd

    from pipeline import finetune
    from pipeline.config.load import load_config
    from pipeline.predict import predict_dataframe

    rng = np.random.default_rng(0)
    rows = [
        ("pos" if positive else "neg", f"item {i} {'great fine' if positive else 'awful poor'} {rng.integers(99)}")
        for i, positive in enumerate(rng.random(160) < 0.3)
    ]
    pd.DataFrame(rows, columns=["label", "text"]).to_csv(tmp_path / "train.csv", index=False)
    config = load_config(
        None,
        [
            f"run.output_dir={tmp_path / 'runs'}",
            "run.name=binary",
            "data.source=files",
            f"data.train_file={tmp_path / 'train.csv'}",
            f"data.cache_dir={tmp_path / 'cache'}",
            f"tokenizer.name_or_path={tiny_bert_dir}",
            f"model.name_or_path={tiny_bert_dir}",
            "train.max_steps=4",
            "train.per_device_batch_size=16",
            "train.learning_rate=3e-3",
            "train.mixed_precision=no",
            "eval.threshold={recall: 0.9}",
            "eval.baseline=none",
            "train.report_to=none",  # the trackers are tests/train/test_trackers.py's: MLflow's store costs seconds
            "eval.predict_speed_rows=0",
        ],
    )
    metrics = finetune.run(config)
    decision = json.loads((config.run_dir / "model" / "decision.json").read_text())
    assert decision["kind"] == "binary" and list(decision["thresholds"]) == ["pos"]
    assert decision["temperature_folded"] and decision["temperature"] == metrics["calibration"]["temperature"]
    assert metrics["test"]["areas"]["per_class"]["pos"]["roc_auc"] is not None
    threshold = decision["thresholds"]["pos"]
    labelled = predict_dataframe(
        config.run_dir, pd.DataFrame({"text": [text for _, text in rows[:40]]}), probabilities=True
    )
    expected = np.where(labelled["prob_pos"] >= threshold, "pos", "neg")
    assert labelled["label"].tolist() == expected.tolist()


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_a_multi_class_threshold_flags_low_confidence_rows_in_prediction(tiny_run_config, tmp_path, capsys):
    import pandas as pd

    from pipeline import finetune
    from pipeline.predict import main as predict_main
    from pipeline.predict import predict_dataframe, predict_texts

    config = tiny_run_config(
        "run.name=flags",
        "train.max_steps=2",
        "eval.threshold=0.3",
        "eval.baseline=none",
        "eval.predict_speed_rows=0",
        "data.max_train_samples=64",
        "data.max_eval_samples=64",
    )
    metrics = finetune.run(config)
    assert metrics["thresholds"]["kind"] == "flag" and "low_confidence" in metrics["test"]
    frame = pd.DataFrame({"title": ["Stocks rally", "Cup final tonight"], "description": ["Oil falls", "Fans gather"]})
    labelled = predict_dataframe(config.run_dir, frame, probabilities=True)
    assert list(labelled.columns)[-2:] == ["low_confidence", "error"]
    # A row without text has no label, so no flag either (as pipeline.predict leaves the cell empty).
    with_empty = predict_dataframe(config.run_dir, pd.DataFrame({"title": [""], "description": [None]}))
    assert with_empty["low_confidence"].isna().all() and predict_texts(config.run_dir, [""], flags=True)[0][2] is None
    top = labelled[[f"prob_{name}" for name in metrics["labels"]]].max(axis=1)
    assert labelled["low_confidence"].tolist() == (top < 0.3).tolist()
    assert labelled["label"].tolist() == [
        metrics["labels"][i] for i in labelled[[f"prob_{n}" for n in metrics["labels"]]].to_numpy().argmax(1)
    ]
    flagged_texts = predict_texts(config.run_dir, frame["title"] + " " + frame["description"], flags=True)
    assert [flag for _, _, flag in flagged_texts] == labelled["low_confidence"].tolist()
    # The command's closing line counts the flagged rows, the ones a person is to check.
    frame.to_csv(tmp_path / "in.csv", index=False)
    predict_main(["--model", str(config.run_dir), "--input", str(tmp_path / "in.csv"), "--output", "-"])
    flagged = int(labelled["low_confidence"].sum())
    assert flagged > 0  # two steps of training leave the model unsure of these rows
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"; {flagged} row{'' if flagged == 1 else 's'} flagged low-confidence" in summary

    # The run's own test predictions carry the flags that metrics.json counts, and the report shows them.
    test_rows = pd.read_csv(config.run_dir / "test_predictions.csv", keep_default_na=False)
    test_top = test_rows[[f"prob_{name}" for name in metrics["labels"]]].max(axis=1)
    assert test_rows["low_confidence"].tolist() == (test_top < 0.3).tolist()
    assert int(test_rows["low_confidence"].sum()) == metrics["test"]["low_confidence"]["flagged"]
    report = (config.run_dir / "report.md").read_text()
    section = report.split("## Low-confidence rows")[1].split("\n## ")[0]
    flagged = metrics["test"]["low_confidence"]["flagged"]
    assert f"| flags | {flagged:,} | {100 * flagged / len(test_rows):.2f}% |" in section
    for name in metrics["labels"]:
        count = int((test_rows["low_confidence"] & (test_rows["predicted"] == name)).sum())
        assert re.search(rf"\| {re.escape(name)} \| 0\.3000 \| 0\.3 \| .* \| {count} \|", section), name


def test_a_threshold_chosen_on_few_positive_rows_is_marked_rough(caplog):
    probabilities, gold = binary_validation(rows=40)
    assert 0 < gold.sum() < 20
    with caplog.at_level(logging.WARNING, logger="pipeline.scoring.thresholds"):
        decision = choose_decision({"precision": 0.8}, probabilities, gold, ["neg", "pos"], multi_label=False)
    note = f"chosen on only {int(gold.sum())} validation rows of the class: a rough estimate"
    assert decision.chosen["pos"]["note"] == note
    # The warning says how to get more rows, naming the keys.
    assert f"eval.threshold for class 'pos' ({int(gold.sum())} rows): chosen on fewer than 20" in caplog.text
    assert "raise data.validation_fraction" in caplog.text and "data.validation_file" in caplog.text
    assert "note" not in choose_decision(0.4, probabilities, gold, ["neg", "pos"], multi_label=False).chosen["pos"]
    plenty = choose_decision("best_f1", *binary_validation(rows=400), ["neg", "pos"], multi_label=False)
    assert "note" not in plenty.chosen["pos"]


def test_one_warning_per_kind_of_problem_names_the_classes(caplog):
    """A 28-class multi-label task with best_f1 where most classes have no positive validation row: one WARNING for
    them all (the first few named, the rest counted), one for the rough ones; each class keeps its own record."""
    names = [f"class{index:02d}" for index in range(28)]
    rng = np.random.default_rng(0)
    gold = np.zeros((60, 28), dtype=np.float32)
    gold[:, 0] = rng.random(60) < 0.5  # plenty of positives: no problem
    gold[:5, 1] = 1  # 5 positives: rough
    gold[:3, 2] = 1  # 3 positives: rough
    probabilities = np.clip(gold * 0.5 + rng.random((60, 28)) * 0.5, 0, 1)
    with caplog.at_level(logging.WARNING, logger="pipeline.scoring.thresholds"):
        decision = choose_decision("best_f1", probabilities, gold, names, multi_label=True)
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    empty, rough = (next(line for line in warnings if phrase in line) for phrase in ("no positive", "fewer than 20"))
    assert empty.startswith(
        "eval.threshold for 25 classes ('class03', 'class04', 'class05', 'class06', 'class07' and 20 more): "
        "no positive validation rows: kept 0.5"
    )
    assert empty.endswith("(each class's record: model/decision.json)")
    assert "class08" not in empty
    assert rough.startswith("eval.threshold for 2 classes ('class01' (5 rows), 'class02' (3 rows)): chosen on fewer")
    assert "raise data.validation_fraction" in rough
    assert all(decision.chosen[name]["fallback"] == "no positive validation rows: kept 0.5" for name in names[3:])
    assert decision.chosen["class02"]["note"] == "chosen on only 3 validation rows of the class: a rough estimate"
    assert "note" not in decision.chosen["class00"] and "fallback" not in decision.chosen["class00"]
