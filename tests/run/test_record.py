"""metrics.json as a RunRecord (pipeline.run.record): written and read back unchanged, every earlier version read,
unknown keys kept, and docs/run-directory.md naming exactly the keys the classes hold."""

from __future__ import annotations

import dataclasses
import json
import re
import typing

import pytest

from pipeline.report.runs import load_run
from pipeline.run import record as record_module
from pipeline.run.directory import RunDir, RunDirError, RunDirWarning
from pipeline.run.record import (
    FORMAT_VERSION,
    RunRecord,
    Section,
    Thresholds,
    Throughput,
    read_record,
    write_record,
)
from tests.helpers import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "run-directory.md"

# A version-1 file: what runs wrote before format_version, as a finished run of that time left it.
VERSION_1 = {
    "run": {"name": "old", "model_kind": "bert", "model_name_or_path": "bert-base-uncased", "num_parameters": 10},
    "labels": ["neg", "pos"],
    "validation": {"accuracy": 0.8, "macro_f1": 0.79, "loss": 0.4, "num_samples": 10},
    "test": {
        "accuracy": 0.75,
        "macro_f1": 0.74,
        "loss": 0.5,
        "num_samples": 4,
        "per_class": {"neg": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2}},
        "confusion_matrix": [[1, 1], [0, 2]],
        "areas": {"per_class": {"pos": {"roc_auc": 0.9, "average_precision": 0.8}}, "macro_roc_auc": 0.9},
    },
    "best": {"step": 40, "metric": "macro_f1", "validation_macro_f1": 0.79},
    "data": {"task": "single_label", "sizes": {"train": 20, "test": 4}, "split_column": None, "id_column": None},
    "tokenization": {"max_length": 64, "truncated_fraction": {"train": 0.1}, "windows_per_document": None},
    "timings": {"train_seconds": 3.0, "total_seconds": 5.0},
    "training": {"global_steps": 40, "class_weights": None, "loss": "cross_entropy"},
    "thresholds": {"kind": "binary", "thresholds": {"pos": 0.4}, "chosen": {"pos": {"setting": "best_f1"}}},
}


def test_a_record_written_reads_back_equal_and_its_file_unchanged(tmp_path):
    path = tmp_path / "metrics.json"
    record = RunRecord.from_dict(VERSION_1)
    record.throughput = Throughput(predict_rows_per_second=100.0, predict_rows_timed=4, predict_backend="torch-fp32")
    write_record(path, record)
    again = read_record(path)
    assert again == record and again.format_version == FORMAT_VERSION
    written = path.read_text()
    write_record(path, again)
    assert path.read_text() == written


def test_a_version_1_file_reads_with_every_key_and_writes_back_the_same_keys(tmp_path):
    """No format_version: version 1. Nulls stay null, absent keys stay absent, key order is kept."""
    run = RunDir(tmp_path)
    run.metrics_path.write_text(json.dumps(VERSION_1))
    record = run.read_record()
    assert record.format_version == 1
    assert (record.test.accuracy, record.best.score, record.ranking_metric) == (0.75, 0.79, "macro_f1")
    assert record.test.areas.per_class["pos"]["roc_auc"] == 0.9
    assert record.thresholds.chosen["pos"].setting == "best_f1" and record.data.split_column is None
    assert (record.calibration, record.baseline, record.distill, record.evaluation) == (None, None, None, None)
    assert record.throughput.predict_rows_per_second is None  # an absent section reads as an empty one
    assert record.headline_scores == "macro-F1 0.7400, accuracy 0.7500 on 4 rows"
    written = record.to_dict()
    assert written.pop("format_version") == 1
    assert json.dumps(written) == json.dumps(VERSION_1)


def test_unknown_keys_and_shapes_of_other_versions_are_kept_and_never_crash(tmp_path):
    newer = {
        **VERSION_1,
        "format_version": FORMAT_VERSION + 1,
        "something_new": {"a": 1},
        "test": {**VERSION_1["test"], "new_score": 0.5},
        "best": None,  # a section every run has, written as null
        "calibration": "not a section",
        "thresholds": {**VERSION_1["thresholds"], "chosen": {"pos": "a string"}},
    }
    record = RunRecord.from_dict(newer)
    assert record.extra["something_new"] == {"a": 1} and record.test.extra == {"new_score": 0.5}
    assert record.calibration is None and record.best.step is None and record.ranking_metric == "accuracy"
    assert record.thresholds.chosen["pos"] == "a string"
    assert json.dumps(record.to_dict()) == json.dumps(newer)
    # The report reads it too.
    (tmp_path / "config.yaml").write_text("run:\n  name: newer\n")
    RunDir(tmp_path).metrics_path.write_text(json.dumps(newer))
    with pytest.warns(RunDirWarning, match="missing"):  # no history, no predictions: said, and skipped
        assert load_run(tmp_path).metrics.test.accuracy == 0.75


def test_a_damaged_file_is_a_run_directory_error_naming_it(tmp_path):
    run = RunDir(tmp_path)
    run.metrics_path.write_text('{"labels": []}')
    with pytest.raises(RunDirError, match=re.escape(f"{run.metrics_path}: 'labels'")):
        run.read_record()


def test_thresholds_built_in_code_write_only_what_they_hold():
    assert Thresholds(kind="binary", thresholds={"pos": 0.5}).to_dict() == {
        "kind": "binary",
        "thresholds": {"pos": 0.5},
    }


# --- docs/run-directory.md against the classes


def _metrics_part() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("\n## metrics.json")
    return text[start : text.index("\n## ", start + 1)]


def _sections() -> list[type[Section]]:
    """Every section class of pipeline.run.record."""
    return [
        c for c in vars(record_module).values() if isinstance(c, type) and issubclass(c, Section) and c is not Section
    ]


def _field_names(cls: type[Section]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if not f.metadata.get("internal")]


def test_the_page_names_every_field_of_every_section():
    prose = re.sub(r"```.*?```", "", _metrics_part(), flags=re.DOTALL)  # the example's fences would pair up wrongly
    named = {word for quoted in re.findall(r"`([^`]+)`", prose) for word in re.findall(r"\w+", quoted)}
    missing = [f"{cls.__name__}.{name}" for cls in _sections() for name in _field_names(cls) if name not in named]
    assert not missing, f"docs/run-directory.md does not name: {missing}"


def test_every_key_the_page_lists_is_a_field():
    """The first column of each table under metrics.json: `key`, `a`, `b`, `section.key`, `chosen.<class>.key`.
    Past a map with keys of the run's own (a split, a class: `class_counts.train.rows`) nothing more is checked."""
    hints = {name: str(hint) for cls in _sections() for name, hint in typing.get_type_hints(cls).items()}
    sections = "|".join(cls.__name__ for cls in _sections())
    maps = {name for name, hint in hints.items() if "dict[" in hint and not re.search(rf"\b({sections})\b", hint)}
    listed = set()
    for line in _metrics_part().splitlines():
        for quoted in re.findall(r"`([^`]+)`", line.split("|")[1]) if line.startswith("| `") else []:
            for part in (part for part in quoted.split(".") if part and "<" not in part):
                listed.add(part)
                if part in maps:
                    break
    assert listed and not listed - set(hints), f"listed but not in pipeline.run.record: {sorted(listed - set(hints))}"


def test_the_pages_example_has_only_the_sections_keys():
    """The JSON example of metrics.json: each object that is a section holds only that section's keys."""
    part = _metrics_part()
    example = json.loads(part[part.index("```json\n") + 8 : part.index("\n```", part.index("```json\n"))])

    def unknown(value: dict, cls: type[Section], where: str) -> list[str]:
        hints, out = typing.get_type_hints(cls), []
        for key, inner in value.items():
            if key == "..." or key.startswith("validation_"):  # `best`'s validation_<metric>
                continue
            if key not in hints:
                out.append(f"{where}.{key}")
                continue
            section = next((c for c in _sections() if re.search(rf"\b{c.__name__}\b", str(hints[key]))), None)
            if section is not None and isinstance(inner, dict) and "dict[" not in str(hints[key]):
                out += unknown(inner, section, f"{where}.{key}")
        return out

    assert unknown(example, RunRecord, "metrics") == []
