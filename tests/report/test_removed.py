"""What a report says about the data and the model's predictions beyond the scores: the rows stage 1 left out of each
split and why (pipeline/report/removed.py), a model collapsed onto one class (caveats.collapse_note) and one that never
predicts a class (caveats.unpredicted_note)."""

from __future__ import annotations

import csv
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.config.schema import DataConfig
from pipeline.report.blocks import Heading, Paragraph, Table
from pipeline.report.removed import SECTION_REMOVED, removed_blocks, removed_counts
from pipeline.report.render import render_markdown
from pipeline.report.runs import Run
from pipeline.report.sections import build_report
from pipeline.report.summary import SECTION_SUMMARY
from pipeline.report.verdict import header_blocks
from pipeline.run.record import Baseline

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def run_of(name: str, data: dict | None = None, **extra) -> Run:
    """A finished single-label run as the report reads it: metrics.json's content, no figures needed."""
    matrix = extra.pop("matrix", [[20, 2, 2, 1], [1, 22, 1, 1], [2, 1, 20, 2], [1, 1, 2, 21]])
    metrics = {
        "labels": LABELS,
        "test": {"accuracy": 0.8, "macro_f1": 0.8, "num_samples": int(np.sum(matrix)), "confusion_matrix": matrix},
        "data": {"task": "single_label", **(data or {})},
        **extra,
    }
    return Run(name, Path("runs") / name, {"train": {"learning_rate": 1e-3, "epochs": 1.0}}, metrics, [], None)


def texts(blocks) -> str:
    return "\n".join(block.text for block in blocks if isinstance(block, Paragraph))


# ---------------------------------------------------------------------------------------------------------------
# Rows left out


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(rows)
    return path


def test_the_left_out_rows_are_counted_as_stage_1_removed_them(tmp_path):
    """Stage 1's own record (LoadedData.summary, metrics.json `data`) read back: each reason's count per split is the
    number of removed_rows.csv rows of that split and reason."""
    from pipeline.data.load import load_data

    train = [
        (f"story number {index} about {'goals' if index % 2 else 'markets'}", str(index % 2)) for index in range(60)
    ]
    train += [train[0], train[1], train[2]]  # 3 repeats within train
    train += [("", "0"), ("a text without its label", "")]  # 2 incomplete rows
    train.insert(30, ("text", "label"))  # the header row again, as `cat` of two files leaves it
    test = [(f"test story {index} on {'goals' if index % 2 else 'markets'}", str(index % 2)) for index in range(20)]
    test += [train[5], train[6]]  # 2 test texts seen in train
    test += [("", "1")]  # 1 incomplete row
    config = DataConfig(
        source="files",
        train_file=str(write_csv(tmp_path / "train.csv", train)),
        test_file=str(write_csv(tmp_path / "test.csv", test)),
        deduplicate="across",
        incomplete_rows="drop",
    )
    data = load_data(config, seed=0)
    listed = Counter((row.split, row.reason.split(" (")[0].split(":")[0]) for row in data.removed)
    run = Run("stage1", tmp_path, {}, {"labels": data.labels, "data": data.summary}, [], None)
    counts = dict(removed_counts(run))
    repeated_header, incomplete, within, across = (
        next(counts[key] for key in counts if phrase in key)
        for phrase in ("header row again", "no text or no label", "repeats a text", "earlier split")
    )
    assert repeated_header == {"train": 1, "test": 0} and listed[("train", "the header row again")] == 1
    assert (
        incomplete
        == {"train": 2, "test": 1}
        == {split: count for (split, reason), count in listed.items() if reason == "incomplete"}
    )
    assert within["train"] == 3 == listed[("train", "duplicate within split")]
    assert across["test"] == 2 == listed[("test", "text found in an earlier split")]
    assert sum(sum(split_counts.values()) for split_counts in counts.values()) == len(data.removed)


def test_the_report_shows_left_out_rows_per_split_and_reason_pointing_to_the_file():
    data = {
        "sizes": {"train": 900, "validation": 100, "test": 200},
        "carved_from_train": {"validation": 0.1},
        "duplicates": {
            "mode": "across",
            "within": {"train": 12, "validation": 0, "test": 1},
            "across": {"validation_in_earlier_splits": 2, "test_in_earlier_splits": 7},
            "conflicts": 3,
            "conflict_examples": [{"text": "Oil prices rise", "labels": ["Business", "World"]}],
            "removed": {"train": 12, "validation": 2, "test": 8},
        },
        "incomplete_rows": {"setting": "drop", "removed": {"train": 4, "test": 0}},
        "repeated_headers": {"removed": {"train": 2, "test": 1}},
    }
    run = run_of("dirty", data)
    blocks = removed_blocks([run])
    assert isinstance(blocks[0], Heading) and blocks[0].text == SECTION_REMOVED
    (table,) = [block for block in blocks if isinstance(block, Table)]
    assert table.header == ["Why left out", "Train", "Validation", "Test"]
    rows = {row[0].text: [cell.text for cell in row[1:]] for row in table.rows}
    assert rows == {
        "the header row again (files joined with cat?)": ["2", "0", "1"],
        "no text or no label (data.incomplete_rows: drop)": ["4", "0", "0"],
        "repeats a text of its own split (data.deduplicate: across)": ["12", "0", "1"],
        "its text is in an earlier split, train then validation (data.deduplicate: across)": ["0", "2", "7"],
    }
    said = texts(blocks)
    assert f"removed_rows.csv (dirty: {Path('runs/dirty/removed_rows.csv')})" in said
    assert "those of a split carved from train count under train" in said
    assert "dirty: 3 texts carry more than one label (e.g. “Oil prices rise”: Business vs World)" in said
    # Placed after the summary, in the rendered report.
    markdown = render_markdown(build_report([run], datetime(2025, 5, 1, tzinfo=timezone.utc))[1])
    assert markdown.index(f"## {SECTION_SUMMARY}") < markdown.index(f"## {SECTION_REMOVED}")
    assert "| repeats a text of its own split (data.deduplicate: across) | 12 | 0 | 1 |" in markdown


def test_counted_duplicates_that_were_kept_are_not_left_out_rows():
    """data.deduplicate: within counts test texts seen in train but keeps them; none: removes nothing."""
    duplicates = {"within": {"train": 5, "test": 0}, "across": {"test_in_earlier_splits": 9}, "conflicts": 2}
    within = run_of("within", {"duplicates": {**duplicates, "mode": "within"}})
    assert [reason for reason, _ in removed_counts(within)] == [
        "repeats a text of its own split (data.deduplicate: within)"
    ]
    kept = run_of("none", {"duplicates": {**duplicates, "mode": "none"}, "incomplete_rows": {"removed": {"train": 0}}})
    assert removed_counts(kept) == [] and removed_blocks([kept]) == []


def test_nothing_is_said_when_no_row_was_left_out():
    clean = run_of("clean", {"duplicates": {"mode": "across", "within": {"train": 0}, "conflicts": 0}})
    old = run_of("old")  # a run made before these records
    assert removed_blocks([clean, old]) == []
    _, blocks = build_report([clean])
    assert not any(isinstance(block, Heading) and block.text == SECTION_REMOVED for block in blocks)


def test_side_by_side_runs_and_an_evaluated_file_each_get_their_rows():
    first = run_of("first", {"incomplete_rows": {"removed": {"train": 3}}, "sizes": {"train": 1, "test": 1}})
    second = run_of("second")
    evaluated = run_of(
        "on_march",
        {"incomplete_rows": {"removed": {"test": 2}}, "sizes": {"test": 50}},
        evaluation={"model": "runs/first", "input": "march.csv", "rows": 50, "removed_rows": 2},
    )
    blocks = removed_blocks([first, second, evaluated])
    (table,) = [block for block in blocks if isinstance(block, Table)]
    assert table.header == ["Run", "Why left out", "Train", "Test"]
    assert [[cell.text for cell in row] for row in table.rows] == [
        ["first", "no text or no label (data.incomplete_rows: drop)", "3", "0"],
        ["on_march", "no text or no label (data.incomplete_rows: drop)", "", "2"],  # it has no train split
    ]
    assert "second" not in texts(blocks)
    # The evaluated file's own count is said here, not a second time in the note on where its figures come from.
    assert "incomplete rows left out" not in texts(header_blocks([evaluated], None, datetime.now(timezone.utc)))


def test_multi_label_training_rows_without_any_class_are_said_once():
    data = {"task": "multi_label", "class_counts": {"train": {"rows": 400, "rows_without_labels": 120}}}
    run = run_of("goemotions", data)
    assert (
        "goemotions: 120 training rows (30.0%) have no class at all: kept, as rows negative for every class."
        in texts(removed_blocks([run]))
    )
    data["class_counts"]["train"]["rows_without_labels"] = 0
    assert removed_blocks([run_of("full", data)]) == []


# ---------------------------------------------------------------------------------------------------------------
# A model collapsed onto one class


def collapsed_matrix(strays: int) -> list[list[int]]:
    """25 test rows per class, every one predicted Sports but `strays` World rows, predicted right."""
    matrix = [[0, 25, 0, 0] for _ in LABELS]
    matrix[0] = [strays, 25 - strays, 0, 0]
    return matrix


def header_notes(run: Run) -> str:
    return texts(header_blocks([run], None, datetime(2025, 5, 1, tzinfo=timezone.utc)))


def test_a_run_predicting_one_class_for_nearly_every_row_is_flagged_with_what_to_try():
    run = run_of("collapsed", matrix=collapsed_matrix(strays=2))  # 98 of 100 rows predicted Sports
    note = header_notes(run)
    assert (
        "collapsed: predicts Sports for 98.0% of the test rows (98 of 100), a class that is 25.0% of them: the model "
        "has collapsed onto one class"
    ) in note
    assert "lower train.learning_rate (now 0.001), more train.epochs (now 1) or training rows" in note
    assert "train.class_weights: balanced" in note
    assert "collapsed onto" not in header_notes(run_of("healthy"))
    # A run that train.max_steps ended (a 15-row run capped at 2 steps): more epochs would change nothing.
    run.config["train"]["max_steps"] = 2
    assert "lower train.learning_rate (now 0.001), more train.max_steps (now 2) or training rows" in header_notes(run)


BASELINE = {"name": "tfidf", "description": "TF-IDF + logistic regression", "macro_f1": 0.5}


def test_a_test_split_too_small_to_judge_by_is_said_and_a_gap_within_its_noise_is_no_verdict():
    """15 rows, 3 of them test: 33.33% beside the baseline's 66.67% read 'the baseline beats tiny15', with nothing
    to say that 3 rows cannot tell the two apart. A note gives the accuracy's 95% interval, and a gap to the
    baseline within it is called a gap within the noise; a gap beyond it is still judged."""
    tiny = run_of("tiny15", matrix=[[0, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    tiny.metrics.test.accuracy, tiny.metrics.baseline = 1 / 3, Baseline.from_dict({**BASELINE, "accuracy": 2 / 3})
    said = header_notes(tiny)
    assert (
        "tiny15: only 3 test rows: its test accuracy of 33.33% has a 95% confidence interval of 6.15% to 79.23%, so "
        "its test figures, and any gap between them and another model's, may be chance; a larger test split"
    ) in said
    assert (
        "On 3 test rows, tiny15 (33.33%) and the TF-IDF + logistic regression baseline (66.67%) cannot be told apart "
        "on test accuracy: the gap is within the noise of so few rows (tiny15's test accuracy: 95% interval 6.15% to "
        "79.23%)."
    ) in said
    assert "beats" not in said
    # 8 of 8 right (interval 67.56% to 100%) against a baseline at 25%: still few rows, but a gap beyond their noise.
    sure = run_of("sure", matrix=[[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]])
    sure.metrics.test.accuracy, sure.metrics.baseline = 1.0, Baseline.from_dict({**BASELINE, "accuracy": 0.25})
    said = header_notes(sure)
    assert "sure: only 8 test rows" in said and "sure beats the TF-IDF + logistic regression baseline" in said
    assert "cannot be told apart" not in said
    healthy = run_of("healthy", baseline={**BASELINE, "accuracy": 0.79})  # 100 rows at 80%: 72% to 87%
    assert "test rows:" not in header_notes(healthy) and "beats the TF-IDF" in header_notes(healthy)


def test_a_skewed_but_not_collapsed_run_and_a_dominant_class_are_not_flagged():
    # 90% predicted one class: skewed, not collapsed.
    assert "collapsed onto" not in header_notes(run_of("skewed", matrix=collapsed_matrix(strays=10)))
    # 96% predicted a class that is 80% of the test rows: the model follows the data.
    dominant = [[78, 2], [18, 2]]
    run = run_of("spam", matrix=dominant)
    run.metrics.labels = ["ham", "spam"]
    assert "collapsed onto" not in header_notes(run)


def test_a_collapse_is_read_from_the_predictions_without_a_matrix():
    run = run_of("no_matrix")
    run.metrics.test.confusion_matrix = None
    gold = [LABELS[index % 4] for index in range(40)]
    run.predictions = pd.DataFrame({"text": ["t"] * 40, "label": gold, "predicted": ["World"] * 39 + ["Sports"]})
    assert "no_matrix: predicts World for 97.5% of the test rows (39 of 40), a class that is 25.0%" in header_notes(run)
    multi = run_of("multi", {"task": "multi_label"})
    multi.metrics.test.confusion_matrix = None
    multi.predictions = run.predictions
    assert "collapsed onto" not in header_notes(multi)


def test_a_class_the_model_never_predicts_is_named_with_its_rows():
    """A binary set at 1:200: the model says `no` to all, its accuracy 99%. No collapse (the class is 99% of the
    rows), yet the class that matters has recall 0: said, with its rows in test and train."""
    train = {"class_counts": {"train": {"per_class": {"no": 199, "yes": 1}}}}
    run = run_of("rare", train, matrix=[[100, 0], [1, 0]])
    run.metrics.labels = ["no", "yes"]
    note = header_notes(run)
    assert (
        "rare: never predicts yes (1 row in test, 1 row in train): its recall of it is 0, most often for too few "
        "training rows of it to learn from. Add rows of it, or try train.class_weights: balanced." in note
    )
    skewed = header_notes(run_of("skewed", matrix=collapsed_matrix(strays=10)))  # Business, Sci/Tech never predicted
    assert (
        "skewed: never predicts Business (25 rows in test) and Sci/Tech (25 rows in test): its recall of them" in skewed
    )
    assert "never predicts" not in header_notes(run_of("healthy"))
    assert "never predicts" not in header_notes(run_of("collapsed", matrix=collapsed_matrix(strays=2)))  # said so
    untrained = {"class_counts": {"train": {"per_class": {"no": 199, "yes": 0}}}}
    run = run_of("untrained", untrained, matrix=[[100, 0], [1, 0]])
    run.metrics.labels = ["no", "yes"]
    assert "never predicts" not in header_notes(run)  # untrained_note's: the model never learned it
