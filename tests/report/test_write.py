"""Reports over fake run directories written to the run-directory contract (docs/run-directory.md).

The fake runs are built from their own predictions, so metrics.json, test_predictions.csv and the report can be
checked against each other exactly.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pipeline.report import (
    ReportError,
    ReportWarning,
    compare_predictions,
    default_output_dir,
    load_run,
    load_runs,
    mcnemar_exact_p,
    most_confident_mistakes,
    plot_confusion_matrix,
    write_report,
)
from pipeline.report.analysis import accuracy_interval
from pipeline.report.runs import Run

REPO_ROOT = Path(__file__).resolve().parents[2]
LABELS = ["World", "Sports", "Business", "Sci/Tech"]
NUM_TEST_ROWS = 50
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SECTION_HEADINGS = [
    "Summary",
    "Confusion matrices",
    "Validation curves",
    "Per-class F1",
    "Where the runs disagree",
    "Most confident mistakes",
]
TOPICS = [
    "markets rally as",
    "striker scores twice in",
    "chipmaker unveils",
    "talks resume over",
    "league confirms",
    "central bank weighs",
    "satellite launch for",
    "ceasefire holds near",
]


# ---------------------------------------------------------------------------------------------------------------
# Fake run directories


def fake_texts(num_rows: int = NUM_TEST_ROWS) -> list[str]:
    texts = [
        f"Story {i}: {TOPICS[i % len(TOPICS)]} quarter {i % 7} " + "and more words " * (i % 5) for i in range(num_rows)
    ]
    # Characters that must survive CSV, Markdown tables and HTML escaping.
    texts[3] = 'Quote "here", a | pipe & <script>alert(1)</script>'
    texts[4] = "Line one\nline two"
    texts[5] = "NA"
    return texts


def gold_labels(num_rows: int = NUM_TEST_ROWS) -> np.ndarray:
    # One fixed draw so that every fake run shares the same test set.
    return np.random.default_rng(0).integers(0, len(LABELS), num_rows)


def classification_metrics(gold: np.ndarray, predicted: np.ndarray) -> dict:
    num_classes = len(LABELS)
    matrix = np.zeros((num_classes, num_classes), dtype=int)
    np.add.at(matrix, (gold, predicted), 1)
    per_class = {}
    for index, label in enumerate(LABELS):
        true_positive = matrix[index, index]
        precision = true_positive / max(matrix[:, index].sum(), 1)
        recall = true_positive / max(matrix[index, :].sum(), 1)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[label] = {
            "precision": float(precision),
            "recall": float(recall),
            "f1": float(f1),
            "support": int(matrix[index, :].sum()),
        }
    return {
        "accuracy": float((gold == predicted).mean()),
        "macro_f1": float(np.mean([values["f1"] for values in per_class.values()])),
        "loss": 0.4321,
        "num_samples": int(len(gold)),
        "per_class": per_class,
        "confusion_matrix": matrix.tolist(),
    }


def make_fake_run(
    root: Path,
    name: str,
    *,
    seed: int,
    correct_share: float,
    model_kind: str = "bert",
    texts: list[str] | None = None,
    with_predictions: bool = True,
    with_eval_lines: bool = True,
) -> Path:
    """A finished run directory: config.yaml, metrics.json, history.jsonl, test_predictions.csv."""
    rng = np.random.default_rng(seed)
    texts = texts if texts is not None else fake_texts()
    gold = gold_labels(len(texts))
    is_correct = rng.random(len(texts)) < correct_share
    wrong = (gold + rng.integers(1, len(LABELS), len(texts))) % len(LABELS)
    predicted = np.where(is_correct, gold, wrong)
    scores = np.round(rng.uniform(0.3, 0.99, len(texts)), 4)

    run_dir = root / name
    run_dir.mkdir(parents=True)
    model_name = "bert-base-uncased"
    config = {
        "run": {"name": name, "output_dir": str(root), "seed": 42},
        "model": {"kind": model_kind, "name_or_path": model_name},
        "tokenizer": {"name_or_path": "bert-base-uncased", "max_length": "auto"},
        "train": {"per_device_batch_size": 16, "gradient_accumulation_steps": 2, "mixed_precision": "auto"},
    }
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    test_metrics = classification_metrics(gold, predicted)
    metrics = {
        "run": {
            "name": name,
            "model_kind": model_kind,
            "model_name_or_path": model_name,
            "num_parameters": 109_485_316 if model_kind == "bert" else 4_385_796,
            "started_at": "2025-05-01T10:00:00+00:00",
            "finished_at": "2025-05-01T10:21:13+00:00",
        },
        "labels": LABELS,
        "test": test_metrics,
        "validation": test_metrics,
        "best": {"step": 150, "validation_accuracy": 0.8123},
        "tokenization": {
            "max_length": 64,
            "max_length_setting": "auto",
            "truncated_fraction": {"train": 0.0098, "validation": 0.011, "test": 0.0123},
        },
        "timings": {
            "data_seconds": 1.2,
            "tokenize_seconds": 3.4,
            "train_seconds": 1234.5,
            "eval_seconds": 12.3,
            "total_seconds": 1271.0,
        },
        "throughput": {"train_samples_per_second": 1532.25, "eval_samples_per_second": 8120.0},
        "training": {
            "global_steps": 200,
            "epochs_completed": 2.0,
            "effective_batch_size": 32,
            "mixed_precision": "bf16",
            "num_processes": 1,
            "stopped_early": False,
        },
        "device": {"type": "cuda", "name": "NVIDIA H200", "num_processes": 1},
        "versions": {
            "python": "3.11.7",
            "torch": "2.5.0",
            "transformers": "4.46.0",
            "datasets": "3.0.0",
            "accelerate": "1.0.0",
            "pipeline": "0.1.0",
        },
    }
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))

    history = []
    seconds_per_step = 6.1 / seed  # runs of different speed, so the wall-clock chart differs from the step chart
    for step in range(10, 201, 10):
        elapsed = step * seconds_per_step
        history.append(
            {
                "step": step,
                "epoch": step / 100,
                "elapsed_seconds": elapsed,
                "loss": 1.4 - step / 250,
                "learning_rate": 5e-5 * (1 - step / 200),
                "samples_per_second": 1500.0,
            }
        )
        if with_eval_lines and step % 50 == 0:
            eval_accuracy = 0.5 + 0.35 * (1 - np.exp(-step * seed / 120))
            history.append(
                {
                    "step": step,
                    "epoch": step / 100,
                    "elapsed_seconds": elapsed + 1.5,
                    "eval_loss": 1.0 - step / 400,
                    "eval_accuracy": eval_accuracy,
                    "eval_macro_f1": eval_accuracy - 0.01,
                }
            )
    (run_dir / "history.jsonl").write_text("".join(json.dumps(line) + "\n" for line in history))

    if with_predictions:
        probabilities = {}
        for index, label in enumerate(LABELS):
            others = (1 - scores) / (len(LABELS) - 1)
            probabilities[f"prob_{label}"] = np.where(predicted == index, scores, others)
        pd.DataFrame(
            {
                "text": texts,
                "label": [LABELS[i] for i in gold],
                "predicted": [LABELS[i] for i in predicted],
                "score": scores,
                **probabilities,
            }
        ).to_csv(run_dir / "test_predictions.csv", index=False)
    return run_dir


# Module scope: rendering the figures is the slow part, and no test changes these runs.
@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    bert = make_fake_run(root, "ag_news_bert", seed=1, correct_share=0.85)
    encoder = make_fake_run(root, "ag_news_encoder", seed=2, correct_share=0.6, model_kind="encoder")
    return bert, encoder


@pytest.fixture(scope="module")
def two_run_report(two_runs, tmp_path_factory) -> tuple[str, str]:
    markdown_path, html_path = write_report(list(two_runs), tmp_path_factory.mktemp("report"))
    return markdown_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# Reading the Markdown back


def markdown_section(markdown: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, flags=re.M | re.S)
    assert match, f"section '{heading}' not found"
    return match.group(1)


def markdown_table_rows(section: str) -> list[list[str]]:
    """Cells of every table row in a section (header included, separator excluded), emphasis removed."""
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or re.fullmatch(r"\|[-:|]+\|", line):
            continue
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([cell.strip().strip("*") for cell in cells])
    return rows


def summary_rows(markdown: str) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in markdown_table_rows(markdown_section(markdown, "Summary"))}


def percent(text: str) -> float:
    return float(text.rstrip("%")) / 100


# ---------------------------------------------------------------------------------------------------------------
# Two-run report


def test_report_has_every_section_in_markdown_and_html(two_run_report):
    markdown, html_text = two_run_report
    for heading in SECTION_HEADINGS:
        assert f"\n## {heading}\n" in markdown
        assert f"<h2>{heading}</h2>" in html_text
    assert markdown.startswith("# Evaluation report: ag_news_bert vs ag_news_encoder")
    assert "Best by test accuracy: ag_news_bert" in markdown


def test_html_is_self_contained_and_escaped(two_run_report):
    _, html_text = two_run_report
    # Two confusion matrices, the validation curves and the per-class F1 bars.
    assert html_text.count('src="data:image/png;base64,') == 4
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html_text)
    assert not re.search(r"url\(|@import|https?://", html_text)
    assert "<script" not in html_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text


def test_summary_numbers_match_metrics_json(two_runs, two_run_report):
    markdown, _ = two_run_report
    rows = summary_rows(markdown)
    for column, run_dir in enumerate(two_runs):
        metrics = json.loads((run_dir / "metrics.json").read_text())
        test = metrics["test"]
        assert percent(rows["Test accuracy"][column]) == pytest.approx(test["accuracy"], abs=5.1e-5)
        assert float(rows["Macro-F1"][column]) == pytest.approx(test["macro_f1"], abs=5.1e-5)
        for label in LABELS:
            assert float(rows[f"F1: {label}"][column]) == pytest.approx(test["per_class"][label]["f1"], abs=5.1e-5)
        assert rows["Parameters"][column] == f"{metrics['run']['num_parameters']:,}"
        assert rows["Fixed length (tokens)"][column] == "64 (auto)"
        assert rows["Longer than the fixed length (test)"][column] == "1.23% truncated"
        assert rows["Longer than the fixed length (train)"][column] == "0.98% truncated"
        assert rows["Training time"][column] == "20m 34s"
        assert rows["Effective batch size"][column] == "32"
        assert rows["Device"][column] == "cuda (NVIDIA H200), 1 process"


def test_disagreement_count_matches_predictions(two_runs, two_run_report):
    markdown, _ = two_run_report
    first, second = (pd.read_csv(run_dir / "test_predictions.csv", keep_default_na=False) for run_dir in two_runs)
    differ = first["predicted"] != second["predicted"]
    expected_count = int(differ.sum())
    assert 0 < expected_count < NUM_TEST_ROWS, "the fixture should make the runs disagree on some rows"

    section = markdown_section(markdown, "Where the runs disagree")
    assert re.search(rf"disagree on {expected_count} of {NUM_TEST_ROWS} test texts", section)
    first_right = int((differ & (first["predicted"] == first["label"])).sum())
    second_right = int((differ & (second["predicted"] == second["label"])).sum())
    assert f"ag_news_bert right on {first_right}" in section
    assert f"ag_news_encoder right on {second_right}" in section

    table_rows = markdown_table_rows(section)[1:]
    assert len(table_rows) == min(expected_count, 20)
    assert {int(row[0]) for row in table_rows} <= set(np.flatnonzero(differ.to_numpy()))

    comparison = compare_predictions(load_runs(list(two_runs)))
    assert list(comparison.disagreements.index) == list(np.flatnonzero(differ.to_numpy()))


def test_runs_tested_on_different_data_are_not_compared(tmp_path: Path):
    other_texts = fake_texts()
    other_texts[10] = "A different story altogether"
    first = make_fake_run(tmp_path, "first", seed=1, correct_share=0.8)
    second = make_fake_run(tmp_path, "second", seed=2, correct_share=0.8, texts=other_texts)
    markdown_path, _ = write_report([first, second], tmp_path / "report")
    markdown = markdown_path.read_text()
    assert "Caution: the runs were tested on different data." in markdown.split("## Summary")[0]
    section = markdown_section(markdown, "Where the runs disagree")
    assert "tested on different data" in section and "row 10" in section
    assert not markdown_table_rows(section)


def test_mcnemar_reading_follows_the_p_value(tmp_path: Path):
    first = make_fake_run(tmp_path, "first", seed=1, correct_share=0.8)
    second = make_fake_run(tmp_path, "second", seed=2, correct_share=0.8)
    p_value = compare_predictions(load_runs([first, second])).mcnemar_p_value
    assert p_value is not None and p_value >= 0.05, "the fixture should give runs whose gap may be chance"
    markdown_path, _ = write_report([first, second], tmp_path / "report")
    section = markdown_section(markdown_path.read_text(), "Where the runs disagree")
    assert f"p = {p_value:.2g} (not below 0.05: the accuracy gap may be chance)" in section
    assert "unlikely to be chance" not in section
    # The verdict reads the same test the same way.
    verdict = header_of(markdown_path.read_text())
    assert f"p = {p_value:.2g} (not below 0.05: the accuracy gap may be chance)" in verdict


def test_accuracy_interval_is_the_wilson_score_interval():
    low, high = accuracy_interval(1 / 3, 3)  # by hand: 3 rows at 33.33%
    assert (round(100 * low, 2), round(100 * high, 2)) == (6.15, 79.23)
    assert accuracy_interval(1.0, 10)[1] == pytest.approx(1.0) and accuracy_interval(0.0, 5)[0] == pytest.approx(0.0)
    stats = pytest.importorskip("scipy.stats")
    for right, rows in [(1, 3), (0, 5), (10, 10), (37, 50), (6840, 7600)]:
        expected = stats.binomtest(right, rows).proportion_ci(method="wilson")
        assert accuracy_interval(right / rows, rows) == pytest.approx(
            (expected.low, expected.high), rel=1e-9, abs=1e-12
        )


def test_mcnemar_exact_p_matches_known_values():
    assert mcnemar_exact_p(0, 0) is None, "no discordant pairs, no test"
    # By hand: all 6 discordant texts favour one run, so p = 2 * 0.5**6.
    assert mcnemar_exact_p(0, 6) == pytest.approx(0.03125, rel=1e-12)
    assert mcnemar_exact_p(1, 0) == 1.0
    stats = pytest.importorskip("scipy.stats")
    # The last pairs: thousands of discordant texts, where 0.5 ** n would underflow in floating point.
    for b, c in [(1, 0), (5, 5), (3, 12), (10, 25), (40, 60), (0, 6), (700, 820), (2400, 2600)]:
        expected = stats.binomtest(k=min(b, c), n=b + c, p=0.5).pvalue
        assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300), (b, c)
        assert mcnemar_exact_p(c, b) == mcnemar_exact_p(b, c), "two-sided: the order of the runs does not matter"


def test_three_runs_leave_out_the_one_without_predictions(two_runs, tmp_path: Path):
    third = make_fake_run(tmp_path, "no_predictions", seed=5, correct_share=0.7, with_predictions=False)
    with pytest.warns(ReportWarning):
        markdown_path, _ = write_report([*two_runs, third], tmp_path / "report")
    markdown = markdown_path.read_text()
    section = markdown_section(markdown, "Where the runs disagree")
    assert "Left out for lack of test_predictions.csv: no_predictions" in section
    header = markdown.split("## Summary")[0]
    # The verdict ranks three runs; a test on the two with predictions would not be about that ranking.
    assert "runner-up" in header and "McNemar" not in header
    assert len(summary_rows(markdown)["Test accuracy"]) == 3


# ---------------------------------------------------------------------------------------------------------------
# Single-run report (what the pipeline writes after each run)


def test_single_run_report_in_the_run_directory(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "solo", seed=3, correct_share=0.7)
    markdown_path, html_path = write_report([run_dir], run_dir)
    assert (markdown_path, html_path) == (run_dir / "report.md", run_dir / "report.html")
    markdown, html_text = markdown_path.read_text(), html_path.read_text()
    assert "Where the runs disagree" not in markdown and "Where the runs disagree" not in html_text
    assert markdown.startswith("# Evaluation report: solo\n")
    assert "solo: test accuracy" in markdown
    assert html_text.count("data:image/png;base64,") == 3

    predictions = pd.read_csv(run_dir / "test_predictions.csv", keep_default_na=False)
    num_wrong = int((predictions["predicted"] != predictions["label"]).sum())
    rows = markdown_table_rows(markdown_section(markdown, "Most confident mistakes"))[1:]
    assert len(rows) == min(10, num_wrong)
    scores = [float(row[4]) for row in rows]
    assert scores == sorted(scores, reverse=True)
    for row in rows:
        source = predictions.iloc[int(row[0])]
        assert (row[2], row[3]) == (source["label"], source["predicted"])
        assert source["label"] != source["predicted"]
    assert not list(run_dir.glob("*.tmp"))


def test_a_class_without_test_rows_shows_no_recall_or_f1(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "solo", seed=3, correct_share=0.7)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    absent = LABELS[0]
    metrics["test"]["per_class"][absent].update(support=0, precision=0.0, recall=0.0, f1=0.0)
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    markdown = write_report([run_dir], tmp_path / "report")[0].read_text()
    (row,) = [row for row in markdown_table_rows(markdown_section(markdown, "Per-class F1")) if row[0] == absent]
    assert row[1:] == ["0", "0.0000", "—", "—"]  # wrong every time it was predicted; nothing to recall
    (summary_row,) = [row for row in markdown_table_rows(markdown_section(markdown, "Summary")) if absent in row[0]]
    assert summary_row[1] == "—"


def test_a_class_without_training_rows_is_named_in_a_note(tmp_path: Path):
    """A class the model has but train lacked (data.label_names, or a data.label_columns column all 0 in train): the
    run's log warned, and the report, which is what is read, says so too."""
    run_dir = make_fake_run(tmp_path, "solo", seed=3, correct_share=0.7)
    per_class = {label: (0 if label == LABELS[2] else 50) for label in LABELS}
    update_metrics(run_dir, data={"class_counts": {"train": {"rows": 150, "per_class": per_class}}})
    markdown = write_report([run_dir], tmp_path / "report")[0].read_text()
    assert f"> Note: solo: no training rows for {LABELS[2]}: the model never learned it" in markdown
    clean = make_fake_run(tmp_path, "clean", seed=3, correct_share=0.7)
    assert "no training rows" not in write_report([clean], tmp_path / "clean_report")[0].read_text()


def test_most_confident_mistakes_are_sorted_wrong_predictions():
    predictions = pd.DataFrame(
        {
            "text": list("abcdef"),
            "label": ["A", "A", "B", "B", "C", "C"],
            "predicted": ["A", "B", "B", "C", "A", "C"],
            "score": [0.99, 0.60, 0.95, 0.90, 0.70, 0.50],
        }
    )
    mistakes = most_confident_mistakes(predictions, limit=2)
    assert list(mistakes["text"]) == ["d", "e"]
    assert (mistakes["label"] != mistakes["predicted"]).all()


def test_missing_optional_pieces_are_reported_not_fatal(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "bare", seed=4, correct_share=0.7, with_predictions=False, with_eval_lines=False)
    with pytest.warns(ReportWarning, match="test_predictions.csv"):
        markdown_path, _ = write_report([run_dir], tmp_path / "out")
    markdown = markdown_path.read_text()
    assert "history.jsonl has no evaluation lines" in markdown_section(markdown, "Validation curves")
    assert "No test_predictions.csv" in markdown_section(markdown, "Most confident mistakes")


# ---------------------------------------------------------------------------------------------------------------
# Broken and unfinished run directories


def test_missing_run_directory(tmp_path: Path):
    with pytest.raises(ReportError, match=r"nowhere: run directory does not exist"):
        load_run(tmp_path / "nowhere")


def test_missing_metrics_json_says_the_run_is_unfinished(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "training", seed=1, correct_share=0.8)
    (run_dir / "metrics.json").unlink()
    with pytest.raises(ReportError, match=r"training: metrics\.json is missing, so the run has not finished"):
        load_run(run_dir)
    (run_dir / "checkpoints" / "step_40").mkdir(parents=True)  # then the command that continues it, as predict says
    with pytest.raises(
        ReportError, match=r"checkpoint \(step_40\): python -m pipeline\.finetune .* train\.resume=true"
    ):
        load_run(run_dir)


def test_a_folder_of_runs_is_not_a_run(two_runs):
    with pytest.raises(ReportError, match=r"not a run directory.*ag_news_bert, ag_news_encoder"):
        load_run(two_runs[0].parent)


def test_broken_metrics_json_names_file_and_line(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "broken", seed=1, correct_share=0.8)
    (run_dir / "metrics.json").write_text('{\n  "labels": ["a"],\n  "test": {"accuracy": 0.5,,}\n}\n')
    with pytest.raises(ReportError, match=r"broken/metrics\.json: invalid JSON at line 3"):
        load_run(run_dir)


def test_broken_history_line_in_the_middle_is_an_error(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "midbroken", seed=1, correct_share=0.8)
    lines = (run_dir / "history.jsonl").read_text().splitlines()
    lines[2] = lines[2][:15]
    (run_dir / "history.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportError, match=r"history\.jsonl: line 3 is not valid JSON"):
        load_run(run_dir)


def test_truncated_last_history_line_is_skipped_with_a_warning(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "killed", seed=1, correct_share=0.8)
    text = (run_dir / "history.jsonl").read_text()
    (run_dir / "history.jsonl").write_text(text + '{"step": 210, "epo')
    with pytest.warns(ReportWarning, match="truncated"):
        run = load_run(run_dir)
    assert len(run.history) == len(text.splitlines())
    assert any("truncated" in note for note in run.notes)


def test_cli_error_is_one_line_and_nonzero(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.report", str(tmp_path / "missing_run")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "missing_run: run directory does not exist" in result.stderr


@pytest.mark.slow  # a Python process that imports the report stack
def test_cli_writes_both_files_and_prints_their_paths(two_runs, tmp_path: Path):
    output_dir = tmp_path / "cli_report"
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.report", *map(str, two_runs), "--output", str(output_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str(output_dir / "report.md"), str(output_dir / "report.html")]


def test_default_output_directory_joins_run_names():
    assert default_output_dir(["runs/bert", "runs/encoder"]) == Path("reports/bert_vs_encoder")


# ---------------------------------------------------------------------------------------------------------------
# Confusion matrix image


def test_confusion_matrix_png_is_written_atomically(tmp_path: Path):
    matrix = [[40, 3, 2, 1], [2, 45, 1, 0], [5, 1, 30, 6], [0, 0, 4, 38]]
    path = plot_confusion_matrix(matrix, LABELS, tmp_path / "confusion_matrix.png", title="test")
    assert path == tmp_path / "confusion_matrix.png"
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert [p.name for p in tmp_path.iterdir()] == ["confusion_matrix.png"]


def test_confusion_matrix_shape_must_match_labels(tmp_path: Path):
    with pytest.raises(ValueError, match="does not match 4 labels"):
        plot_confusion_matrix([[1, 2], [3, 4]], LABELS, tmp_path / "cm.png")
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------------------------
# Two real runs: the pipeline's own run directories, not fakes


@pytest.fixture(scope="module")
def two_real_runs(tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv) -> tuple[Path, Path]:
    """A tiny BERT run and a tiny encoder run, trained in-process on the same few hundred AG News rows.

    80 steps are what it takes both models to leave the one-class stage (at 20 they each predict a single class,
    often the same one), so that the runs have real, different predictions to compare.
    """

    from pipeline import finetune
    from pipeline.config.load import load_config
    from tests.helpers import MINILM_CONFIG, one_torch_thread, reset_accelerate, tiny_run_overrides

    root = tmp_path_factory.mktemp("real_runs")
    common = tiny_run_overrides(root, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv) + [
        "train.max_steps=80",
        "train.per_device_batch_size=16",
        "train.warmup_ratio=0",
    ]
    bert = ["run.name=tiny_bert", "train.learning_rate=2e-3"]
    encoder = [
        "run.name=tiny_encoder",
        "train.learning_rate=3e-3",
        "model.kind=encoder",
        "model.encoder.hidden_size=32",
        "model.encoder.num_layers=2",
        "model.encoder.num_heads=2",
        "model.encoder.intermediate_size=64",
        "model.encoder.pooling=mean",
    ]
    run_dirs = []
    try:
        with one_torch_thread():
            for overrides in (bert, encoder):
                reset_accelerate()  # accelerate's process-wide singletons must not carry over from one run to the next
                config = load_config(MINILM_CONFIG, common + overrides)
                finetune.run(config)
                run_dirs.append(config.run_dir)
    finally:
        reset_accelerate()
    return run_dirs[0], run_dirs[1]


@pytest.fixture(scope="module")
def real_run_report(two_real_runs, tmp_path_factory) -> tuple[str, str]:
    markdown_path, html_path = write_report(list(two_real_runs), tmp_path_factory.mktemp("real_report"))
    return markdown_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")


@pytest.mark.slow  # two fine-tuning runs (the fixture)
def test_report_over_two_real_runs_matches_their_files(two_real_runs, real_run_report):
    markdown, html_text = real_run_report
    for heading in SECTION_HEADINGS:
        assert f"\n## {heading}\n" in markdown
        assert f"<h2>{heading}</h2>" in html_text
    assert markdown.startswith("# Evaluation report: tiny_bert vs tiny_encoder")

    rows = summary_rows(markdown)
    per_class_rows = markdown_table_rows(markdown_section(markdown, "Per-class F1"))
    assert per_class_rows[0] == ["Class", "Support", "Run", "Precision", "Recall", "F1"]
    per_class, label = {}, None  # (class, run) -> (precision, recall, F1) as printed
    for row in per_class_rows[1:]:
        label = row[0] or label  # a class's name is printed on the first row of its group only
        per_class[label, row[2]] = tuple(float(cell) for cell in row[3:])

    predictions = {}
    for column, run_dir in enumerate(two_real_runs):
        metrics = json.loads((run_dir / "metrics.json").read_text())
        test = metrics["test"]
        assert metrics["run"]["model_kind"] == ("bert", "encoder")[column]
        assert percent(rows["Test accuracy"][column]) == pytest.approx(test["accuracy"], abs=5.1e-5)
        assert float(rows["Macro-F1"][column]) == pytest.approx(test["macro_f1"], abs=5.1e-5)
        for label in LABELS:
            expected = test["per_class"][label]
            assert float(rows[f"F1: {label}"][column]) == pytest.approx(expected["f1"], abs=5.1e-5)
            printed = per_class[label, run_dir.name]
            assert printed == pytest.approx((expected["precision"], expected["recall"], expected["f1"]), abs=5.1e-5)
        assert rows["Parameters"][column] == f"{metrics['run']['num_parameters']:,}"

        frame = pd.read_csv(run_dir / "test_predictions.csv", keep_default_na=False)
        assert len(frame) == test["num_samples"]
        # metrics.json and test_predictions.csv describe the same predictions.
        assert (frame["predicted"] == frame["label"]).mean() == pytest.approx(test["accuracy"], abs=1e-12)
        predictions[run_dir.name] = frame

    first, second = predictions["tiny_bert"], predictions["tiny_encoder"]
    assert list(first["text"]) == list(second["text"]) and list(first["label"]) == list(second["label"])
    differ = first["predicted"] != second["predicted"]
    expected_count = int(differ.sum())
    assert 0 < expected_count < len(first), "the runs should agree on some texts and disagree on others"
    section = markdown_section(markdown, "Where the runs disagree")
    assert re.search(rf"disagree on {expected_count:,} of {len(first):,} test texts", section)
    table_rows = markdown_table_rows(section)[1:]
    assert len(table_rows) == min(expected_count, 20)
    # The Row column holds each text's id in the data (here its line number in test.csv).
    assert {row[0] for row in table_rows} <= set(first.loc[differ, "row_id"].astype(str))


# ---------------------------------------------------------------------------------------------------------------
# The classical baseline, unequal training budgets, truncation over budget


def update_metrics(run_dir: Path, **sections) -> Path:
    """Merge sections into a fake run's metrics.json (one level deep), e.g. training={"global_steps": 10}."""
    path = run_dir / "metrics.json"
    metrics = json.loads(path.read_text())
    for key, value in sections.items():
        metrics[key] = (
            {**metrics[key], **value} if isinstance(value, dict) and isinstance(metrics.get(key), dict) else value
        )
    path.write_text(json.dumps(metrics, indent=2))
    return run_dir


def baseline_record(accuracy: float, train_seconds: float = 3.2) -> dict:
    gold = gold_labels()
    predicted = np.where(np.arange(len(gold)) < round(accuracy * len(gold)), gold, (gold + 1) % len(LABELS))
    return {
        "name": "tfidf",
        "description": "TF-IDF + logistic regression",
        **classification_metrics(gold, predicted),
        "train_seconds": train_seconds,
        "seconds": train_seconds + 0.4,
    }


def header_of(markdown: str) -> str:
    return markdown.split("## Summary")[0]


def test_old_runs_show_no_baseline_and_equal_budgets_no_caveat(two_run_report):
    markdown, _ = two_run_report
    assert not any(row.startswith("Baseline") for row in summary_rows(markdown))
    assert "baseline" not in header_of(markdown).lower()
    assert "recipes, not architectures" not in markdown
    assert "over the" not in markdown


def test_single_run_report_says_when_the_baseline_beats_the_model(tmp_path: Path):
    run_dir = make_fake_run(tmp_path, "solo", seed=3, correct_share=0.7)
    accuracy = json.loads((run_dir / "metrics.json").read_text())["test"]["accuracy"]
    update_metrics(run_dir, baseline=baseline_record(0.96))
    markdown_path, html_path = write_report([run_dir], run_dir)
    markdown, html_text = markdown_path.read_text(), html_path.read_text()
    assert (
        f"The TF-IDF + logistic regression baseline beats solo on test accuracy (96.00% vs "
        f"{100 * accuracy:.2f}%): a model fitted in 3.2s does better than one trained for 20m 34s."
    ) in header_of(markdown)
    rows = summary_rows(markdown)
    assert rows["Baseline test accuracy"] == ["96.00%"]
    assert rows["Baseline macro-F1"] == [f"{baseline_record(0.96)['macro_f1']:.4f}"]
    assert rows["Baseline training time"] == ["3.2s"]
    assert "Baseline test accuracy" in html_text and "baseline beats solo" in html_text


def test_side_by_side_report_shows_each_runs_baseline(tmp_path: Path):
    ahead = update_metrics(make_fake_run(tmp_path, "ahead", seed=1, correct_share=0.9), baseline=baseline_record(0.80))
    behind = update_metrics(
        make_fake_run(tmp_path, "behind", seed=2, correct_share=0.6), baseline=baseline_record(0.80)
    )
    old = make_fake_run(tmp_path, "old", seed=5, correct_share=0.7)
    markdown_path, _ = write_report([ahead, behind, old], tmp_path / "report")
    markdown = markdown_path.read_text()
    accuracies = {
        name: json.loads((tmp_path / name / "metrics.json").read_text())["test"]["accuracy"]
        for name in ("ahead", "behind")
    }
    header = header_of(markdown)
    assert (
        f"The TF-IDF + logistic regression baseline beats behind on test accuracy "
        f"(80.00% vs {100 * accuracies['behind']:.2f}%)"
    ) in header
    assert (
        f"Ahead of the TF-IDF + logistic regression baseline: ahead by "
        f"{100 * (accuracies['ahead'] - 0.8):.2f} points of accuracy (baseline 80.00%)."
    ) in header
    assert "baseline beats ahead" not in header
    assert "baseline beats old" not in header and "old by" not in header, "a run without a baseline is not judged"
    rows = summary_rows(markdown)
    assert rows["Baseline test accuracy"] == ["80.00%", "80.00%", "—"]
    assert rows["Baseline training time"] == ["3.2s", "3.2s", "—"]


def test_side_by_side_verdict_names_budget_differences(tmp_path: Path):
    big = update_metrics(
        make_fake_run(tmp_path, "big", seed=1, correct_share=0.85),
        training={"global_steps": 3125, "effective_batch_size": 32, "epochs_completed": 5.0},
        tokenization={"max_length": 128},
    )
    small = update_metrics(
        make_fake_run(tmp_path, "small", seed=2, correct_share=0.8),
        training={"global_steps": 625, "effective_batch_size": 32, "epochs_completed": 1.0},
    )
    # The run that saw more samples is named first, whichever order the runs are given in.
    markdown_path, _ = write_report([small, big], tmp_path / "report")
    header = header_of(markdown_path.read_text())
    assert (
        "big saw 5.0x the training samples of small (100,000 vs 20,000), completed 5.00 vs 1.00 epochs and "
        "used fixed length 128 vs 64; the comparison is of recipes, not architectures."
    ) in header


def test_samples_seen_are_the_runs_own_count_where_it_recorded_one(tmp_path: Path):
    """Steps times the batch counts a short last batch as full; a run's recorded count is taken over it."""
    counted = update_metrics(
        make_fake_run(tmp_path, "counted", seed=1, correct_share=0.85),
        training={"global_steps": 38, "effective_batch_size": 16, "samples_seen": 600, "epochs_completed": 1.0},
    )
    older = update_metrics(
        make_fake_run(tmp_path, "older", seed=2, correct_share=0.8),
        training={"global_steps": 100, "effective_batch_size": 16, "epochs_completed": 1.0},
    )
    header = header_of(write_report([counted, older], tmp_path / "report")[0].read_text())
    assert "older saw 2.7x the training samples of counted (1,600 vs 600)" in header


def test_budget_differences_without_a_samples_gap_and_among_three_runs(tmp_path: Path):
    first = make_fake_run(tmp_path, "first", seed=1, correct_share=0.85)
    second = update_metrics(
        make_fake_run(tmp_path, "second", seed=2, correct_share=0.8),
        tokenization={"max_length": 256, "truncated_fraction": {"train": 0.0, "test": 0.0}},
    )
    third = update_metrics(make_fake_run(tmp_path, "third", seed=5, correct_share=0.7), training={"global_steps": 400})
    markdown_path, _ = write_report([first, second], tmp_path / "pair")
    header = header_of(markdown_path.read_text())
    assert (
        "Compared with second, first used fixed length 64 vs 256 and truncated 0.98% vs 0.00% of the training "
        "texts; the comparison is of recipes, not architectures."
    ) in header
    markdown_path, _ = write_report([first, second, third], tmp_path / "three")
    header = header_of(markdown_path.read_text())
    assert (
        "Training budgets differ: samples seen 6,400 (first), 6,400 (second), 12,800 (third); "
        "fixed length 64 (first), 256 (second), 64 (third); "
        "truncated training texts 0.98% (first), 0.00% (second), 0.98% (third); "
        "the comparison is of recipes, not architectures."
    ) in header


def test_training_truncation_over_budget_is_flagged(tmp_path: Path):
    over = update_metrics(
        make_fake_run(tmp_path, "over", seed=1, correct_share=0.8),
        tokenization={"truncated_fraction": {"train": 0.05, "validation": 0.05, "test": 0.06}},
    )
    lenient = update_metrics(
        make_fake_run(tmp_path, "lenient", seed=2, correct_share=0.8),
        tokenization={"truncated_fraction": {"train": 0.05, "validation": 0.05, "test": 0.06}},
    )
    middle = update_metrics(
        make_fake_run(tmp_path, "middle", seed=3, correct_share=0.8),
        tokenization={"truncated_fraction": {"train": 0.05, "validation": 0.05, "test": 0.06}},
    )
    for run, setting in ((lenient, {"max_truncated_fraction": 0.1}), (middle, {"truncation": "head_tail"})):
        config = yaml.safe_load((run / "config.yaml").read_text())
        config["tokenizer"].update(setting)
        (run / "config.yaml").write_text(yaml.safe_dump(config))
    markdown_path, _ = write_report([over, lenient, middle], tmp_path / "report")
    markdown = markdown_path.read_text()
    assert (
        "over: 5.00% of its training texts were truncated at fixed length 64, over the budget of 1.00% "
        "(tokenizer.max_truncated_fraction): the model never saw the end of those texts."
    ) in header_of(markdown)
    # head_tail keeps both ends: what it never read is the middle.
    assert "middle: 5.00% of its training texts were truncated" in header_of(markdown)
    assert "the model never saw the middle of those texts." in header_of(markdown)
    assert "lenient: 5.00% of its training texts" not in markdown
    assert summary_rows(markdown)["Longer than the fixed length (train)"] == [
        "5.00% truncated (over the 1.00% budget)",
        "5.00% truncated",
        "5.00% truncated (over the 1.00% budget)",
    ]


@pytest.mark.slow  # two fine-tuning runs (the fixture)
def test_real_runs_record_their_baseline_and_the_report_shows_it(two_real_runs, real_run_report):
    markdown, _ = real_run_report
    rows = summary_rows(markdown)
    for column, run_dir in enumerate(two_real_runs):
        metrics = json.loads((run_dir / "metrics.json").read_text())
        baseline = metrics["baseline"]
        assert set(metrics["test"]) - {"loss"} <= set(baseline)
        assert baseline["name"] == "tfidf" and baseline["num_samples"] == metrics["test"]["num_samples"]
        assert percent(rows["Baseline test accuracy"][column]) == pytest.approx(baseline["accuracy"], abs=5.1e-5)
    # Both runs trained on the same rows: one baseline, twice.
    first, second = (json.loads((run_dir / "metrics.json").read_text())["baseline"] for run_dir in two_real_runs)
    assert first["confusion_matrix"] == second["confusion_matrix"]


def test_row_tables_show_the_datas_own_ids(tmp_path: Path):
    """Results join back to the source: with a row_id column the mistakes and disagreements show it."""
    runs = [make_fake_run(tmp_path, name, seed=seed, correct_share=0.6) for name, seed in (("a", 3), ("b", 4))]
    for run in runs:
        predictions = pd.read_csv(run / "test_predictions.csv", keep_default_na=False)
        predictions.insert(4, "row_id", [f"msg-{index:04d}" for index in range(len(predictions))])
        predictions.to_csv(run / "test_predictions.csv", index=False)
    markdown_path, _ = write_report(runs, tmp_path / "report")
    markdown = markdown_path.read_text()
    for heading in ("Where the runs disagree", "Most confident mistakes"):
        rows = markdown_table_rows(markdown_section(markdown, heading))
        body = [row for row in rows if row[0] != "Row"]  # one table per run under its own heading
        assert body and all(row[0].startswith("msg-") for row in body), heading


def test_a_chunked_run_is_not_flagged_as_truncated(tmp_path: Path):
    run = make_fake_run(tmp_path, "chunked", seed=3, correct_share=0.8)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["tokenizer"].update(long_text="chunk", max_truncated_fraction=0.01)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["tokenization"]["truncated_fraction"]["train"] = 0.9
    metrics["tokenization"]["windows_per_document"] = {"train": {"mean": 2.5, "p95": 4, "max": 6}}
    (run / "metrics.json").write_text(json.dumps(metrics))
    markdown = write_report([run], tmp_path / "report")[0].read_text()
    assert "over the" not in markdown and "never saw" not in markdown
    assert summary_rows(markdown)["Longer than the fixed length (train)"] == [
        "90.00%, read in windows (2.50 per text, max 6)"
    ]


def test_multi_label_runs_are_judged_and_set_against_the_baseline_on_micro_f1(tmp_path: Path):
    """Runs whose best model was picked by micro-F1 lead with it, are ranked by it (without McNemar's test, which
    counts whole rows right or wrong), and meet the baseline on it, even where its subset accuracy is higher."""
    micro = {"first": 0.9177, "second": 0.8977}
    runs = [
        update_metrics(
            make_fake_run(tmp_path, name, seed=seed, correct_share=0.8),
            best={"metric": "micro_f1"},
            test={"micro_f1": micro[name], "samples_f1": 0.93, "hamming_loss": 0.04},
            baseline={**baseline_record(0.96), "micro_f1": 0.8701},
        )
        for seed, name in enumerate(micro, start=1)
    ]
    single = header_of(write_report(runs[:1], tmp_path / "single")[0].read_text())
    assert "first: test micro-F1 0.9177, subset accuracy" in single
    assert (
        "first beats the TF-IDF + logistic regression baseline (0.8701, fitted in 3.2s) by 4.76 points of micro-F1."
    ) in single
    assert "baseline beats" not in single
    markdown = write_report(runs, tmp_path / "both")[0].read_text()
    assert "Best by test micro-F1: first with 0.9177, 2.00 points ahead of second (0.8977)." in header_of(markdown)
    assert "McNemar" not in header_of(markdown)
    assert summary_rows(markdown)["Baseline micro-F1"] == ["0.8701", "0.8701"]


def test_a_skewed_multi_label_run_still_leads_with_micro_f1(tmp_path: Path):
    """Multi-label classes are nearly always skewed (a rare label in 1-3% of rows), but the run has no balanced
    accuracy and micro-F1 picked its model: the report does not switch to the single-label imbalance reading."""
    run = update_metrics(
        make_fake_run(tmp_path, "tags", seed=1, correct_share=0.8),
        best={"metric": "micro_f1"},
        test={"micro_f1": 0.7911, "samples_f1": 0.82, "hamming_loss": 0.02},
        data={"task": "multi_label", "class_counts": {"train": {"imbalance_ratio": 59.5}}},
        baseline={**baseline_record(0.5), "micro_f1": 0.7},
    )
    markdown = write_report([run], tmp_path / "report")[0].read_text()
    assert "tags: test micro-F1 0.7911, subset accuracy" in header_of(markdown)
    assert "balanced accuracy" not in markdown.lower() and "imbalanced" not in markdown
    summary = markdown[markdown.index("## Summary") :]
    headline = [line.split("|")[1].strip() for line in summary.splitlines()[4:7]]
    assert headline == ["Micro-F1", "Macro-F1", "Subset accuracy"] and "Test accuracy" not in summary
    assert summary_rows(markdown)["Baseline subset accuracy"] == ["50.00%"]  # its baseline's, named alike


def multi_label_run(name: str, separator: str, predicted_sets: list[set[str]], class_order: list[str]) -> Run:
    gold_sets = [{"sports"}, {"sports", "politics"}, set(), {"tech", "politics"}]

    def joined(label_set: set[str]) -> str:
        return separator.join(label for label in class_order if label in label_set)

    predictions = pd.DataFrame(
        {
            "text": [f"text {index}" for index in range(len(gold_sets))],
            "label": [joined(labels) for labels in gold_sets],
            "predicted": [joined(labels) for labels in predicted_sets],
            "score": 0.9,
        }
    )
    config = {"data": {"task": "multi_label", "label_separator": separator}}
    return Run(name, Path(name), config, {"labels": class_order, "data": {"task": "multi_label"}}, [], predictions)


def test_multi_label_runs_are_compared_by_class_sets_whatever_their_separators():
    """Two runs that join the same class sets with different separators, in different class orders, were tested
    on the same data; a row counts as right when its whole set matches."""
    first = multi_label_run(
        "pipes", "|", [{"sports"}, {"sports"}, set(), {"tech", "politics"}], ["politics", "sports", "tech"]
    )
    second = multi_label_run(
        "semicolons",
        ";",
        [{"sports"}, {"politics", "sports"}, {"tech"}, {"politics", "tech"}],
        ["tech", "sports", "politics"],
    )
    assert first.predictions["label"][1] != second.predictions["label"][1], "the fixture should join differently"
    comparison = compare_predictions([first, second])
    assert not comparison.different_test_data, comparison.unavailable_reason
    assert list(comparison.disagreements.index) == [1, 2]
    assert comparison.right_counts == {"pipes": 1, "semicolons": 1}
    assert comparison.all_wrong_count == 0

    from pipeline.report.sections import _comparison_blocks

    note = " ".join(block.text for block in _comparison_blocks(comparison, multi_label=True) if hasattr(block, "text"))
    assert "score: probability of the predicted class; for a multi-label run, its highest class probability" in note

    second.predictions.loc[3, "label"] = "tech"
    assert "gold labels differ between pipes and semicolons first at row 3" in (
        compare_predictions([first, second]).unavailable_reason
    )


def test_validation_curves_follow_the_metric_that_selected_the_models(tmp_path: Path):
    """Runs picked by macro-F1 are drawn and tabled in macro-F1 (as scores); runs picked by different metrics are
    each tabled in their own, named in a column (tests/report/test_runs.py draws a multi-label run beside them)."""
    runs = [
        update_metrics(make_fake_run(tmp_path, name, seed=seed, correct_share=0.8), best={"metric": "macro_f1"})
        for name, seed in (("a", 1), ("b", 2))
    ]
    section = markdown_section(write_report(runs, tmp_path / "macro")[0].read_text(), "Validation curves")
    header, *rows = markdown_table_rows(section)
    assert header[2] == "First macro-F1"
    for run, row in zip(runs, rows):
        history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
        highest = max(line["eval_macro_f1"] for line in history if "eval_macro_f1" in line)
        assert row[3].startswith(f"{highest:.4f} (step ")

    update_metrics(runs[1], best={"metric": "accuracy"})
    section = markdown_section(write_report(runs, tmp_path / "mixed")[0].read_text(), "Validation curves")
    header, macro_row, accuracy_row = markdown_table_rows(section)
    assert header[1:4] == ["Metric (selected the model)", "Evaluations", "First"]
    assert macro_row[1] == "macro-F1" and re.match(r"0\.\d{4} \(step ", macro_row[3])
    assert accuracy_row[1] == "accuracy" and re.match(r"\d+\.\d{2}% \(step ", accuracy_row[3])


def test_a_run_beside_its_evaluation_folders_is_one_model_not_a_ranking(tmp_path: Path):
    """pipeline.evaluate folders name the run they scored: one model on several files is set side by side, no file
    emphasised as the best, and notes on how the model was trained appear once, on the run."""
    run = update_metrics(
        make_fake_run(tmp_path, "tickets", seed=1, correct_share=0.9),
        tokenization={"max_length": 32, "max_length_setting": 32, "truncated_fraction": {"train": 0.4, "test": 0.4}},
    )
    scored = shutil.copytree(run, tmp_path / "tickets_on_march")
    update_metrics(scored, evaluation={"model": str(run.resolve()), "input": "/data/march.csv", "rows": 40})
    update_metrics(scored, test={"accuracy": 0.5})
    markdown = write_report([run, scored], tmp_path / "report")[0].read_text()
    assert "One model on 2 files, by test accuracy:" in header_of(markdown)
    assert "50.00% on march.csv" in header_of(markdown) and "Best by" not in markdown
    assert not [row for row in markdown.split("## Summary")[1].split("\n## ")[0].splitlines() if "**" in row]
    assert header_of(markdown).count("truncated at fixed length") == 1


def test_an_evaluated_folder_of_class_folders_is_named_with_its_parent_not_as_a_split(tmp_path: Path):
    """pipeline.evaluate --input aclImdb/test (and aclImdb/train): "on test", "on train" would read as the run's own
    splits beside its test split; the folder is named as one."""
    run = make_fake_run(tmp_path, "imdb", seed=1, correct_share=0.9)
    scored = {}
    for split in ("test", "train"):
        scored[split] = shutil.copytree(run, tmp_path / f"imdb_on_{split}")
        evaluation = {"model": str(run.resolve()), "input": f"/data/aclImdb/{split}", "rows": 40}
        update_metrics(scored[split], evaluation=evaluation, data={"class_folders": {"test": {"neg": 20, "pos": 20}}})
    header = header_of(write_report([run, *scored.values()], tmp_path / "report")[0].read_text())
    assert "on imdb's test split (" in header
    assert "on aclImdb/test/ (" in header and "on aclImdb/train/ (" in header


def test_per_class_support_is_each_runs_own_when_their_test_data_differ(tmp_path: Path):
    """A run beside one tested on fewer rows (an evaluated file, another data set): each run's row gives the
    support its own metrics.json records, not the first run's."""
    full = make_fake_run(tmp_path, "full", seed=1, correct_share=0.8)
    fewer = make_fake_run(tmp_path, "fewer", seed=2, correct_share=0.8, texts=fake_texts(NUM_TEST_ROWS // 2))
    markdown = write_report([full, fewer], tmp_path / "report")[0].read_text(encoding="utf-8")
    printed, label = {}, None
    for row in markdown_table_rows(markdown_section(markdown, "Per-class F1"))[1:]:
        label = row[0] or label
        printed[label, row[2]] = row[1]
    for run in (full, fewer):
        per_class = json.loads((run / "metrics.json").read_text())["test"]["per_class"]
        for label in LABELS:
            assert printed[label, run.name] == f"{per_class[label]['support']:,}", (label, run.name)


def test_a_run_scored_on_another_file_is_not_ranked_against_its_own_run(tmp_path: Path):
    """Two models and the first one's pipeline.evaluate folder: the models are ranked on their own test split (same
    texts, so McNemar applies), the folder, however high its score on an easier file, is neither best nor bold."""
    tickets = make_fake_run(tmp_path, "tickets", seed=1, correct_share=0.8)
    rival = make_fake_run(tmp_path, "rival", seed=2, correct_share=0.6)
    scored = shutil.copytree(tickets, tmp_path / "tickets_on_march")
    update_metrics(scored, evaluation={"model": str(tickets.resolve()), "input": "/data/march.csv", "rows": 40})
    update_metrics(scored, test={"accuracy": 0.99})
    markdown = write_report([tickets, scored, rival], tmp_path / "report")[0].read_text()
    verdict = header_of(markdown)
    accuracy = json.loads((tickets / "metrics.json").read_text())["test"]["accuracy"]
    assert f"Best by test accuracy: tickets with {100 * accuracy:.2f}%" in verdict
    assert "McNemar" in verdict and "different data" not in verdict
    assert "tickets_on_march (" not in verdict.split("Best by")[1].split(".")[0]
    assert not summary_rows(markdown)["Test accuracy"][1].startswith("**")
