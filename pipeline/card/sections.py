"""The model card's readable body (pipeline/card/write.py writes it under the metadata): Markdown sections on what
the model does, its labels, the data and splits, the training settings, the test metrics per class, a baseline and
calibration where metrics.json records them, limitations, how to use it and the environment it was trained in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.card.facts import DATA_DEFAULTS, CardFacts, hub_id, published_name
from pipeline.data.text import segments_of
from pipeline.run.directory import (
    DECISION_FILE,
    PREDICTION_TEXT,
    RANKING_METRICS,
    RunDirError,
    headline_metrics,
    is_number,
    per_class_score,
    saved_model_config,
    untrained_classes,
    untrained_consequence,
)
from pipeline.scoring.thresholds import (
    DEFAULT_THRESHOLD,
    KIND_ARGMAX,
    KIND_BINARY,
    KIND_MULTI_LABEL,
    selection_cut_off,
)
from pipeline.text.windows import PAIR_CUT

# Beyond this many classes the confusion matrix is left to report.md: a card table that wide is unreadable.
MAX_CONFUSION_CLASSES = 12
MAX_EXAMPLE_CHARS = 160


def _pct(value: Any, digits: int = 2) -> str:
    return f"{100 * value:.{digits}f}%" if is_number(value) else "n/a"


def _num(value: Any, digits: int = 4, missing: str = "n/a") -> str:
    return f"{value:.{digits}f}" if is_number(value) else missing


# A CSV/TSV file's double quotes as read (metrics.json data.quoting.read: data.quoting resolved per file), in words.
QUOTING_READINGS = {"csv": "enclose fields", "none": "are read as text"}
# The before/after measures of a calibration record (pipeline.scoring.decide.calibration_record), as the card names them.
CALIBRATION_MEASURES = {"ece": "expected calibration error", "loss": "negative log-likelihood"}


def _grouped_by_reading(read: dict[str, Any], phrase: Callable[[str], str]) -> str:
    """A per-file reading by split, the splits read alike grouped: "<phrase> in train, validation; <phrase> in test"."""
    splits_by_reading: dict[str, list[str]] = {}
    for split, reading in read.items():
        splits_by_reading.setdefault(str(reading), []).append(split)
    return "; ".join(f"{phrase(reading)} in {', '.join(splits)}" for reading, splits in splits_by_reading.items())


def _calibration_rows(calibration: dict[str, Any]) -> list[tuple[str, str]]:
    """The calibration record as (measure, value) rows: method, temperature, then each measure per split, before ->
    after temperature scaling (one value where only one was measured)."""
    rows = []
    if calibration.get("enabled") is False:
        rows.append(("method", "none (train.calibrate: false)"))
    elif isinstance(calibration.get("method"), str):
        rows.append(("method", calibration["method"]))
    if is_number(calibration.get("temperature")):
        rows.append(("temperature", _num(calibration["temperature"], 3)))
    for key, name in CALIBRATION_MEASURES.items():
        splits = calibration.get(key) if isinstance(calibration.get(key), dict) else {}
        for split, pair in splits.items():
            if not isinstance(pair, dict):
                continue
            measured = [value for value in (pair.get("before"), pair.get("after")) if is_number(value)]
            if measured:
                label = f"{name}, {split}" + (" (before → after)" if len(measured) == 2 else "")
                rows.append((label, " → ".join(_num(value) for value in measured)))
    if is_number(calibration.get("bins")):
        rows.append(("confidence bins (expected calibration error)", str(int(calibration["bins"]))))
    return rows


def _metric(key: str, value: Any) -> str:
    """A ranking metric's value (rundir.RANKING_METRICS): accuracy as a percentage, an F1 as a score."""
    return _pct(value) if key == "accuracy" else _num(value)


def _count(value: Any) -> str:
    return f"{int(value):,}" if is_number(value) else "n/a"


def _cell(value: Any) -> str:
    """A value inside a Markdown table cell: pipes escaped, newlines flattened."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> list[str]:
    aligns = [":--" if (align[i : i + 1] or "l") == "l" else "--:" for i in range(len(header))]
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(aligns) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _duration(seconds: Any) -> str:
    if not is_number(seconds):
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as (dotted key, leaf) pairs, lists kept whole."""
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            pairs += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return pairs
    return [(prefix, value)]


def _scores(record: Any, keys: tuple[str, ...] = ("accuracy", "macro_f1")) -> tuple[Any, ...] | None:
    """The `keys` figures of a baseline record (accuracy first), at its top level or under `test`."""
    if not isinstance(record, dict):
        return None
    for candidate in (record, record.get("test")):
        if isinstance(candidate, dict) and is_number(candidate.get(keys[0])):
            return tuple(candidate.get(key) for key in keys)
    return None


def _baseline_name(record: Any, key: str = "baseline") -> str:
    if not isinstance(record, dict):
        return key
    return str(record.get("description") or record.get("name") or record.get("model") or key)


class CardSections(CardFacts):
    """The card's body, one method per section; `body()` joins them."""

    def body(self) -> str:
        sections = [
            self.intro(),
            self.labels_section(),
            self.data_section(),
            self.training_section(),
            self.distillation_section(),
            self.evaluation_section(),
            self.baseline_section(),
            self.calibration_section(),
            self.limitations_section(),
            self.usage_section(),
            self.environment_section(),
        ]
        return "\n\n".join("\n".join(lines) for lines in sections if lines) + "\n"

    def intro(self) -> list[str]:
        parameters = self.get("run", "num_parameters")
        size = ""
        if is_number(parameters):
            size = f"{parameters / 1e6:.1f}M" if parameters >= 1e6 else f"{int(parameters):,}"
            size = f" ({size} parameters)"
        return [
            f"# {self.name}",
            "",
            f"A text classifier: given a {'pair of texts' if self.text_spec.pair_columns else 'text'}, it "
            f"{self.task_phrase()}. It is {self.model_phrase()}{size}, "
            f"trained with the `pipeline` package on {self.dataset_phrase()}. On the held-out test split it reaches "
            f"{self.headline()} ({_count(self.get('test', 'num_samples'))} texts).",
            "",
            self.licence_line(),
        ]

    def licence_line(self) -> str:
        """The licence `run.license` gave (also in the metadata), or how to give one: a card without a licence
        leaves users unable to tell whether they may use the model."""
        licence = self.setting("run", "license")
        if licence:
            return f"Licence: `{licence}`."
        base = " (mind the licence of the checkpoint it was fine-tuned from)" if not self.is_encoder else ""
        return (
            f"Licence: none given. Set `run.license` to a Hub licence id such as `apache-2.0` or `mit`{base} and "
            f"rewrite this card: `python -m pipeline.report --model-card {self.run_reference()}`."
        )

    def headline(self) -> str:
        """The test figures, the one that picked the model first (rundir.headline_metrics), each in bold."""
        keys = headline_metrics(self.metrics)
        figures = [f"**{_metric(key, self.get('test', key))} {self.metric_name(key)}**" for key in keys]
        return ", ".join(figures[:-1]) + " and " + figures[-1]

    def metric_name(self, key: str) -> str:
        """A ranking metric (rundir.RANKING_METRICS) as the card names it: accuracy is subset accuracy for
        multi-label runs."""
        return self.accuracy_name if key == "accuracy" else RANKING_METRICS[key]

    def labels_section(self) -> list[str]:
        rows = [(index, label) for index, label in enumerate(self.labels)]
        return ["## Labels", "", *_table(["id", "label"], rows, "rl")]

    def duplicates_lines(self) -> list[str]:
        """data.duplicates (stage 1's count of repeated texts and what it removed), in words."""
        record = self.get("data", "duplicates")
        if not isinstance(record, dict):
            return []

        def counts(value: Any) -> str:
            if not isinstance(value, dict):
                return ""
            return ", ".join(f"{key.replace('_', ' ')} {_count(n)}" for key, n in value.items() if is_number(n))

        parts = []
        if counts(record.get("within")):
            parts.append(f"repeated within a split: {counts(record['within'])}")
        if counts(record.get("across")):
            parts.append(f"across splits: {counts(record['across'])}")
        if is_number(record.get("conflicts")) and record["conflicts"]:
            parts.append(f"texts carrying more than one label: {_count(record['conflicts'])}")
        removed = counts(record.get("removed"))
        mode = record.get("mode")
        found = "; ".join(parts) if parts else "none found"
        lines = [f"Duplicate texts (equal after whitespace is normalised; `data.deduplicate: {mode}`): {found}."]
        lines.append(f"Removed before training and evaluation: {removed}." if removed else "None were removed.")
        return lines

    def incomplete_lines(self) -> list[str]:
        """data.incomplete_rows: the rows left out of their file for want of a text or a label. Without this line
        the card's split sizes and duplicate removals fall short of the file's rows with no word of why."""
        removed = self.get("data", "incomplete_rows", "removed")
        if not isinstance(removed, dict) or not any(is_number(n) and n for n in removed.values()):
            return []
        counts = ", ".join(f"{split} {_count(n)}" for split, n in removed.items() if is_number(n))
        return ["", f"Rows without a text or a label, left out (`data.incomplete_rows: drop`): {counts}."]

    def quoting_lines(self) -> list[str]:
        """data.quoting: how each CSV/TSV file's double quotes were read (`auto` decides per file, by its start).
        Without it the card cannot say whether a text that starts with a quote kept it or was enclosed by it."""
        setting, read = self.read_per_file("quoting")
        if not read:
            return []
        parts = _grouped_by_reading(read, lambda reading: QUOTING_READINGS.get(reading, reading))
        return ["", f"Double quotes in the files (`data.quoting: {setting}`): {parts}."]

    def delimiter_lines(self) -> list[str]:
        """data.delimiter: said when a CSV/TSV file's fields were separated by other than a comma or a tab (a
        spreadsheet's semicolon, the Financial PhraseBank's @), which a reader of the files would otherwise assume."""
        setting, read = self.read_per_file("delimiter")
        if not read or all(delimiter in (",", "\t") for delimiter in read.values()):
            return []
        parts = _grouped_by_reading(read, lambda delimiter: "tab" if delimiter == "\t" else f"`{delimiter}`")
        how = f"`data.delimiter: {setting}`" if setting else "`data.delimiter` unset: read off each file's first line"
        return ["", f"Fields separated by {parts} ({how})."]

    def read_per_file(self, key: str) -> tuple[Any, dict[str, Any]]:
        """A metrics.json data record of how each CSV/TSV file was read (data.reading_record): its setting and
        its readings by split ({} where there is no such record)."""
        record = self.get("data", key)
        read = record.get("read") if isinstance(record, dict) else None
        return (record.get("setting"), read) if isinstance(read, dict) else (None, {})

    def class_folder_lines(self) -> list[str]:
        """data.class_folders: the splits read from a folder of class folders, and the files read from each class
        folder (before rows were left out, carved or capped); data.class_files: those read from a folder of class
        files, and each class's file."""
        folders = self.per_split_record("class_folders", lambda name, files: f"`{name}` {_count(files)}")
        files = self.per_split_record("class_files", lambda name, file: f"`{name}` {file}")
        lines = []
        if folders:
            lines += [
                "",
                "Read from folders of class folders, each file one text labelled by the name of its folder; files per "
                f"class: {folders}.",
            ]
        if files:
            lines += [
                "",
                f"Read from folders of class files, each non-blank line one text of the class its file names: {files}.",
            ]
        return lines

    def per_split_record(self, key: str, entry: Callable[[str, Any], str]) -> str:
        """A metrics.json data record of class -> value by split, as "train: `neg` 6, `pos` 6; test: ..." ("" where
        there is none)."""
        record = self.get("data", key)
        if not isinstance(record, dict):
            return ""
        parts = [
            f"{split}: {', '.join(entry(name, value) for name, value in by_class.items())}"
            for split, by_class in record.items()
            if isinstance(by_class, dict)
        ]
        return "; ".join(parts)

    def data_section(self) -> list[str]:
        seed = self.get("data", "seed")
        seed = seed if seed is not None else self.setting("run", "seed")
        lines = ["## Training data", "", *self.source_lines(seed), *self.sizes_lines()]
        duplicates = self.duplicates_lines()
        if duplicates:
            lines += ["", *duplicates]
        lines += self.incomplete_lines()
        lines += self.quoting_lines()
        lines += self.delimiter_lines()
        lines += self.class_folder_lines()
        lines += ["", f"Seed: {seed} (splits, sampling, initialisation, dropout)."]
        return lines

    def source_lines(self, seed: Any) -> list[str]:
        """Where the rows came from, how a row became a text and its label, and how splits were carved and capped."""
        files = list(self.data_file_names())
        if self.from_hub:
            lines = [f"Source: {self.dataset_phrase()}."]
        else:
            named = [f"{split} `{name}`" for split, name in self.data_file_names().items()]
            lines = [f"Source: local files: {', '.join(named)}."]
        lines += self.split_column_lines()
        if not (files and set(files) <= self.read_from_folders()):  # else class_folder_lines says
            lines.append(f"Each text is {self.text_rule()}; {self.label_rule()}.")
        carved = self.get("data", "carved_from_train")
        if isinstance(carved, dict):
            for split, fraction in carved.items():
                lines.append(
                    f"The {split} split is {_pct(fraction, 0)} of the source's train split, held out "
                    f"stratified by label with seed {seed}."
                )
        caps = [(key, self.data.get(key)) for key in ("max_train_samples", "max_eval_samples") if self.data.get(key)]
        if caps:
            lines.append(
                "Seeded, stratified subsets were used: "
                + ", ".join(f"`data.{key}={value}`" for key, value in caps)
                + "."
            )
        return lines

    def split_column_lines(self) -> list[str]:
        """Where the splits came from when a column of the train data said each row's (data.split_column)."""
        record = self.get("data", "split_column")
        if not isinstance(record, dict) or not isinstance(record.get("rows"), dict):
            return []
        rows = ", ".join(f"{split} {_count(count)}" for split, count in record["rows"].items() if count)
        return [f"Each row's split is the `{record.get('column')}` column of the train data ({rows} rows)."]

    def sizes_lines(self) -> list[str]:
        """The rows per split as a table, and a line where the run did not record train's."""
        sizes = self.split_sizes()
        lines = []
        if sizes:
            rows = [(split, _count(sizes.get(split))) for split in ("train", "validation", "test") if split in sizes]
            lines += ["", *_table(["split", "rows"], rows, "lr")]
        if "train" not in sizes:
            lines += ["", "The run did not record the number of training rows."]
        return lines

    def label_rule(self) -> str:
        """Where a row's label came from, as a clause."""
        indicators = self.data.get("label_columns")
        if indicators:
            columns = ", ".join(f"`{column}`" for column in indicators)
            return f"a row has each class whose own column ({columns}) holds 1, true or yes"
        return f"the label is the `{self.data.get('label_column', DATA_DEFAULTS.label_column)}` column"

    def training_section(self) -> list[str]:
        train = self.config.get("train") if isinstance(self.config.get("train"), dict) else {}
        rows = []
        if self.is_encoder:
            encoder = self.setting("model", "encoder") or {}
            shape = ", ".join(f"{key} {value}" for key, value in encoder.items()) if isinstance(encoder, dict) else ""
            rows.append(("model", f"from-scratch Transformer encoder ({shape})"))
        else:
            rows.append(("base model", self.base_model_cell()))
        rows.append(("tokenizer", f"`{published_name(self.setting('tokenizer', 'name_or_path'))}`"))
        length = self.get("tokenization", "max_length")
        setting = self.get("tokenization", "max_length_setting")
        rows.append(("fixed length", f"{length} tokens" + (" (chosen automatically)" if setting == "auto" else "")))
        if train.get("max_steps"):
            rows.append(("optimizer steps", f"{train['max_steps']} (max_steps)"))
        else:
            completed = self.get("training", "epochs_completed")
            done = f" ({completed:g} completed)" if is_number(completed) and completed != train.get("epochs") else ""
            rows.append(("epochs", f"{train.get('epochs', 'n/a')}{done}"))
        rows += [
            ("steps run", _count(self.get("training", "global_steps"))),
            ("effective batch", _count(self.get("training", "effective_batch_size"))),
            ("learning rate", str(train.get("learning_rate", "n/a")) + " (AdamW, linear warm-up then decay)"),
            *self._head_learning_rate(train),
            ("weight decay", str(train.get("weight_decay", "n/a"))),
            ("warm-up ratio", str(train.get("warmup_ratio", "n/a"))),
            ("gradient clipping", str(train.get("max_grad_norm", "n/a"))),
            ("mixed precision", str(self.get("training", "mixed_precision") or train.get("mixed_precision", "n/a"))),
        ]
        best_step = self.get("best", "step")
        if is_number(best_step):
            # Older runs record best.validation_accuracy; runs that select on another metric name it.
            metric = self.ranking_metric
            score = self.get("best", f"validation_{metric}")
            score = score if is_number(score) else self.get("best", "score")
            cut_off = selection_cut_off(self.metrics)  # the validation table applies the thresholds; this did not
            rows.append(
                (
                    "model kept",
                    f"step {int(best_step)}, the best validation {RANKING_METRICS[metric]} ({_metric(metric, score)}"
                    f"{', ' + cut_off if cut_off else ''})",
                )
            )
        if self.get("training", "stopped_early"):
            rows.append(
                (
                    "early stopping",
                    f"stopped after {train.get('early_stopping_patience')} evaluations without improvement",
                )
            )
        rows.append(("training time", _duration(self.get("timings", "train_seconds"))))
        return ["## Training", "", *_table(["setting", "value"], rows)]

    def base_model_cell(self) -> str:
        """The checkpoint fine-tuned: a Hub id is the metadata's base_model too; a local folder is named here only."""
        if hub_id(self.base):
            return f"`{self.base}`"
        return (
            f"`{published_name(self.base)}`, a local folder: the metadata names no base_model (add its Hub id there "
            "if the folder is a copy of a Hub model)"
        )

    def distillation_section(self) -> list[str]:
        """How a distilled model was made, from metrics.json's `distill` record alone (pipeline.distill.teacher)."""
        record = self.distill
        if record is None:
            return []
        alpha, temperature = record.get("alpha"), record.get("temperature")
        rows = [("teacher", f"`{self.teacher_name() or 'unrecorded'}`")]
        for key, name in (
            ("teacher_test_accuracy", "teacher's test accuracy (its own run's test split)"),
            ("teacher_train_accuracy", "teacher's accuracy on this model's train split"),
        ):
            if is_number(record.get(key)):
                rows.append((name, _pct(record[key])))
        if is_number(alpha) and is_number(temperature):
            rows.append(
                (
                    "loss",
                    f"{alpha:g} × KL(teacher ‖ student) at temperature {temperature:g} (× T²) + {1 - alpha:g} × "
                    "cross-entropy on the gold labels; rows without a gold label: the KL term alone",
                )
            )
        rows += self._transfer_rows(record)
        embeddings = record.get("init_embeddings")
        if isinstance(embeddings, dict):
            kept = (
                f", {_pct(embeddings['variance_kept'])} of their variance kept"
                if is_number(embeddings.get("variance_kept"))
                else ""
            )
            rows.append(
                (
                    "token embeddings",
                    f"initialised from the teacher's, projected onto their first {embeddings.get('dimensions')} "
                    f"principal components{kept}; the rest of the model at random",
                )
            )
        return [
            "## Distillation",
            "",
            f"Trained by knowledge distillation (`train.distill`): it learned the scores {self.teacher_phrase()} "
            "gives its training texts, besides their gold labels.",
            "",
            *_table(["setting", "value"], rows),
        ]

    def _transfer_rows(self, record: dict[str, Any]) -> list[tuple[str, str]]:
        """The transfer set (the texts the teacher scored) and how it was enlarged."""
        rows = []
        transfer = record.get("transfer_set")
        if isinstance(transfer, dict) and is_number(transfer.get("total")):
            parts = [
                f"{_count(transfer[key])} {name}"
                for key, name in (
                    ("labelled", "labelled train texts"),
                    ("unlabeled", "unlabelled texts"),
                    ("augmented", "augmented copies"),
                )
                if is_number(transfer.get(key)) and (transfer[key] or key == "labelled")
            ]
            rows.append(("transfer set", f"{_count(transfer['total'])} texts: {', '.join(parts)}"))
        if record.get("unlabeled_file"):
            rows.append(("unlabelled texts from", f"`{published_name(str(record['unlabeled_file']))}`"))
        augment = record.get("augment")
        if augment and augment != "none":
            rows.append(("augmentation", f"`{augment}`, {record.get('augment_copies')} copies per train text"))
        elif augment:
            rows.append(("augmentation", "none"))
        return rows

    def _head_learning_rate(self, train: dict) -> list[tuple[str, str]]:
        """The new head's own rate, when it had one (runs before head_parameters was recorded show none)."""
        names = self.get("training", "head_parameters")
        rate = train.get("head_learning_rate")
        if not names or not rate or rate == train.get("learning_rate"):
            return []
        return [("head learning rate", f"{rate} (new parameters: {', '.join(names)})")]

    def evaluation_section(self) -> list[str]:
        test = self.get("test")
        lines = [
            "## Evaluation",
            "",
            f"On the test split ({_count(test.get('num_samples'))} texts, never used for training or model selection):",
            "",
            *_table(
                ["metric", "test", "validation"],
                [
                    (self.accuracy_name, _pct(test.get("accuracy")), _pct(self.get("validation", "accuracy"))),
                    ("macro-F1", _num(test.get("macro_f1")), _num(self.get("validation", "macro_f1"))),
                    *(
                        [("micro-F1", _num(test.get("micro_f1")), _num(self.get("validation", "micro_f1")))]
                        if is_number(test.get("micro_f1"))
                        else []
                    ),
                    ("loss", _num(test.get("loss")), _num(self.get("validation", "loss"))),
                ],
                "lrr",
            ),
        ]
        return lines + self.per_class_lines(test) + self.confusion_lines(test)

    def per_class_lines(self, test: dict[str, Any]) -> list[str]:
        """The test split's precision, recall, F1 and support of every class, as a table."""
        per_class = test.get("per_class")
        if not isinstance(per_class, dict) or not per_class:
            return []
        rows = []
        for label in self.labels:
            scores = per_class.get(label) if isinstance(per_class.get(label), dict) else {}
            rows.append(
                (
                    label,
                    *(_num(per_class_score(scores, key), missing="—") for key in ("precision", "recall", "f1")),
                    _count(scores.get("support")),
                )
            )
        return ["", "Per class (test):", "", *_table(["label", "precision", "recall", "F1", "support"], rows, "lrrrr")]

    def confusion_lines(self, test: dict[str, Any]) -> list[str]:
        """The test split's confusion matrix as a table, up to MAX_CONFUSION_CLASSES classes."""
        matrix = test.get("confusion_matrix")
        if not (isinstance(matrix, list) and len(matrix) == len(self.labels) <= MAX_CONFUSION_CLASSES):
            return []
        rows = [(self.labels[i], *[_count(v) for v in row]) for i, row in enumerate(matrix)]
        return [
            "",
            "Confusion matrix (test; rows: true label, columns: predicted):",
            "",
            *_table(["true \\ predicted", *self.labels], rows, "l" + "r" * len(self.labels)),
        ]

    def baseline_section(self) -> list[str]:
        """This model against the classical baseline, led by the figure that picked the model (rundir.ranking_metric:
        accuracy, macro-F1 for imbalanced classes, micro-F1 for multi-label, where accuracy is subset accuracy)."""
        baseline = self.get("baseline")
        if baseline is None:
            return []
        lines = ["## Baseline", ""]
        keys = tuple(headline_metrics(self.metrics))
        entries = []
        scores = _scores(baseline, keys)
        if scores is not None:
            entries.append((_baseline_name(baseline), *scores))
        elif isinstance(baseline, dict) and baseline.get("error"):
            return lines + [f"The baseline ({_baseline_name(baseline)}) could not be fitted: {baseline['error']}"]
        elif isinstance(baseline, dict):
            entries += [
                (_baseline_name(value, key), *_scores(value, keys))
                for key, value in baseline.items()
                if _scores(value, keys)
            ]
        if not entries:
            return lines + [
                f"metrics.json records a baseline in a form this card does not read: `{json.dumps(baseline)[:200]}`"
            ]
        ours = self.get("test", keys[0])
        rows = [(f"this model ({self.name})", *[_metric(key, self.get("test", key)) for key in keys], "")]
        for label, *base in entries:
            lead = f"{100 * (ours - base[0]):+.2f} points" if is_number(base[0]) and is_number(ours) else "n/a"
            rows.append((label, *[_metric(key, value) for key, value in zip(keys, base)], lead))
        headers = [f"test {self.metric_name(key)}" for key in keys]
        return lines + [
            "A classical model fitted on the same train split and scored on the same test split:",
            "",
            *_table(
                ["model", *headers, f"this model's {RANKING_METRICS[self.ranking_metric]} lead"],
                rows,
                "l" + "r" * (len(keys) + 1),
            ),
        ]

    def calibration_section(self) -> list[str]:
        calibration = self.get("calibration")
        if calibration is None:
            calibration = self.get("test", "calibration")
        if calibration is None:
            return []
        if isinstance(calibration, dict) and isinstance(calibration.get("ece"), dict):
            rows = _calibration_rows(calibration)
        else:  # another shape: every number and string it holds, by its key path
            pairs = [(key, value) for key, value in _flatten(calibration) if is_number(value) or isinstance(value, str)]
            rows = [(key or "value", _num(value) if isinstance(value, float) else str(value)) for key, value in pairs]
        if not rows:
            return []
        return [
            "## Calibration",
            "",
            "How well the predicted probabilities match observed accuracy (from metrics.json):",
            "",
            *_table(["measure", "value"], rows, "lr"),
        ]

    def limitations_section(self) -> list[str]:
        lines = ["## Limitations", ""]
        length = self.get("tokenization", "max_length")
        truncated = self.get("tokenization", "truncated_fraction")
        if isinstance(truncated, dict) and is_number(length):
            shares = ", ".join(f"{split} {_pct(share)}" for split, share in truncated.items() if is_number(share))
            lines.append(f"- {self.long_text_limit(int(length))} Share of texts longer than that: {shares}.")
        if self.multi_label:
            lines.append(
                f"- It judges each of its {len(self.labels)} labels on its own, also for text unlike its "
                "training data; labels it never saw together may still be predicted together."
            )
        else:
            lines.append(
                f"- It always answers with one of its {len(self.labels)} labels, also for text unlike its "
                "training data; a high score is no guarantee that the text belongs to any of them."
            )
        untrained = untrained_classes(self.metrics)
        if untrained:
            names = ", ".join(f"`{name}`" for name in untrained)
            lines.append(
                f"- No training text had {names}: {untrained_consequence(untrained)}; disregard those scores, or "
                "retrain with labelled examples."
            )
        lines += self.unfound_lines(untrained)
        sizes = self.split_sizes()
        trained_on = "its training data"
        if is_number(sizes.get("train")):
            trained_on = f"{_count(sizes['train'])} training texts"
        lines.append(
            f"- It learned from {trained_on} of {self.dataset_phrase()}; the test metrics above hold for "
            "text like that. Other sources, periods, languages or styles will score lower, by an unknown "
            "amount: measure on your own labelled sample first."
        )
        if self.is_encoder:
            taught = f", and what {self.teacher_phrase()} showed it there" if self.distill is not None else ""
            lines.append(
                f"- Without pretraining, it knows only the words and patterns of its training texts{taught}; a "
                "pretrained model fine-tuned on the same data is usually more accurate and robust."
            )
        baseline = self.get("baseline")
        key = self.ranking_metric
        scores, ours = _scores(baseline, (key,)), self.get("test", key)
        if scores is not None and is_number(scores[0]) and is_number(ours) and scores[0] > ours:
            better = "is more accurate" if key == "accuracy" else f"scores a higher {RANKING_METRICS[key]}"
            lines.append(
                f"- The {_baseline_name(baseline)} baseline {better} on the same test split "
                f"({_metric(key, scores[0])} against {_metric(key, ours)}): as trained, this model does not earn its "
                "cost over it."
            )
        lines.append("- Biases in the training texts and their labels carry over into its predictions.")
        return lines

    def unfound_lines(self, untrained: list[str]) -> list[str]:
        """Classes of test texts that the model found none of (recall 0), those without training rows aside (said
        above): a class too rare in train to be learnt, which accuracy hides."""
        per_class = self.get("test", "per_class")
        if not isinstance(per_class, dict):
            return []
        unfound = {
            name: scores.get("support")
            for name, scores in per_class.items()
            if isinstance(scores, dict) and per_class_score(scores, "recall") == 0 and name not in untrained
        }
        if not unfound:
            return []
        named = ", ".join(
            f"`{name}` ({_count(support)} test text{'' if support == 1 else 's'})" for name, support in unfound.items()
        )
        pronoun = "it" if len(unfound) == 1 else "them"
        return [
            f"- It found none of the test texts of {named}: recall 0, most often for too few training texts of "
            f"{pronoun}. Do not rely on this model to find {pronoun}."
        ]

    def usage_section(self) -> list[str]:
        model_id = self.published_id()
        remote = ", trust_remote_code=True" if self.is_encoder else ""
        lines = [
            "## How to use",
            "",
            f"With transformers: `{model_id}` stands for its Hub id once uploaded; a copy of this folder loads by "
            "its path.",
            "",
            "```python",
            "from transformers import pipeline",
            "",
            f'classifier = pipeline("text-classification", model="{model_id}"{remote})',
            f"classifier({self.example_input()}{self.truncation()}"
            + (
                ", top_k=None)  # every label's sigmoid score"
                if self.multi_label
                else ")  # [{'label': ..., 'score': ...}]"
            ),
            "```",
            "",
            *self.thresholds_note(),
            *self.transformers_long_text_note(),
        ]
        if self.is_encoder:
            lines += self.custom_code_lines(model_id)
        lines += [
            f"Give it texts built as in training: {self.text_rule()}. With the `pipeline` package, which does "
            "that from the run's settings and reads long texts as training did (this folder records them in "
            f"`decision.json`, so `--model` may name the run directory, here `{self.run_reference()}`, or this "
            "folder itself, wherever it was copied):",
            "",
            "```bash",
            f"python -m pipeline.predict --model {self.run_reference()} --input texts.csv --output labelled.csv",
            "```",
        ]
        return lines

    def custom_code_lines(self, model_id: str) -> list[str]:
        """The from-scratch encoder: why trust_remote_code=True, and how its tokenizer loads without it."""
        lines = [
            "The from-scratch architecture is not part of transformers: its code, `modeling_encoder.py`, is "
            "saved next to the weights, and `trust_remote_code=True` lets transformers run it (only "
            "torch and transformers are needed). Read it before trusting it.",
            "",
        ]
        if not self.has_auto_map():
            return lines + [
                f"This folder was saved before the code was stored with the model, so that option does "
                f"not work yet: `python -m pipeline.report --upgrade-model {self.run_reference()}` "
                "adds it.",
                "",
            ]
        return lines + [
            "Its tokenizer is transformers' own and needs none of that code; `trust_remote_code=False` says so "
            "(transformers reads `config.json` before the tokenizer's files, and without it asks whether to run "
            "the model's code):",
            "",
            "```python",
            *tokenizer_code(model_id, self.tokenizer_class()),
            "```",
            "",
        ]

    def long_text_limit(self, length: int) -> str:
        """What the model reads of a text longer than `length` tokens, by the run's tokenizer settings."""
        rule = self.long_text_rule
        if self.text_spec.pair_columns:
            return f"A pair longer than {length} tokens is cut to that length, keeping {PAIR_CUT}."
        if rule.long_text == "chunk":
            return (
                f"A text longer than {length} tokens is read as overlapping windows of {length} tokens (at most "
                f"{rule.max_chunks}: the first {rule.max_chunks - 1} and the last), whose scores are pooled; the "
                "middle of a longer text is skipped."
            )
        kept = {
            "tail": "their last tokens: a long document is judged on its end only.",
            "head_tail": (
                f"their first {_pct(rule.head_fraction, 0)} and last {_pct(1 - rule.head_fraction, 0)} of that "
                "length: the middle of a long document is ignored."
            ),
        }.get(rule.truncation, "their first tokens: a long document is judged on its beginning only.")
        return f"Texts are cut to {length} tokens, keeping {kept}"

    def transformers_long_text_note(self) -> list[str]:
        """transformers.pipeline cuts at the head only: where training read long texts otherwise, say so."""
        if self.long_text_rule.is_plain_head:
            return []
        return [
            "`transformers.pipeline` keeps the first tokens of a long text; this model was trained reading long "
            "texts otherwise (see Limitations), so on texts longer than its training length its scores can differ "
            "from `pipeline.predict`, which reads them as in training.",
            "",
        ]

    def thresholds_note(self) -> list[str]:
        """What transformers.pipeline does not apply: the decision thresholds chosen on validation (decision.json)."""
        thresholds = self.get("thresholds", "thresholds")
        kind = self.get("thresholds", "kind")
        if not isinstance(thresholds, dict) or not thresholds or kind == KIND_ARGMAX:
            return []
        listed = ", ".join(f"{name} {value:.4f}" for name, value in thresholds.items() if is_number(value))
        rule = {
            KIND_MULTI_LABEL: "a label applies when its score is at least its threshold",
            KIND_BINARY: "the positive class is predicted when its score is at least its threshold",
        }.get(kind, "a row whose top score is below its class's threshold is flagged as low-confidence")
        if len(thresholds) < len(self.labels):  # eval.threshold named some classes: what the others get
            rule += {
                KIND_MULTI_LABEL: f" (the other classes' threshold is {DEFAULT_THRESHOLD})",
                KIND_BINARY: "",
            }.get(kind, " (a row of another class is never flagged)")
        return [
            f"Decision thresholds, chosen on validation, are stored in `{DECISION_FILE}` next to the weights "
            f"({listed}): {rule}. `transformers.pipeline` returns the scores only; `pipeline.predict` applies the "
            "thresholds.",
            "",
        ]

    def truncation(self) -> str:
        """Keyword arguments that cut texts where training did (transformers.pipeline does not truncate)."""
        length = self.get("tokenization", "max_length")
        return f", truncation=True, max_length={int(length)}" if is_number(length) else ""

    def has_auto_map(self) -> bool:
        saved = saved_model_config(self.run.model_dir) or {}
        return "AutoModelForSequenceClassification" in (saved.get("auto_map") or {})

    def example_input(self) -> str:
        """transformers.pipeline's argument for the example: a text, or for a pair model a {text, text_pair} dict."""
        segments = [_example_length(segment) for segment in segments_of(self.example_text())]
        if not self.text_spec.pair_columns:
            return json.dumps(segments[0] or "Replace this with the text to classify.", ensure_ascii=False)
        first, second = segments if len(segments) == 2 else ("", "")
        example = {
            "text": first or "Replace this with the first text.",
            "text_pair": second or "And this with the second.",
        }
        return json.dumps(example, ensure_ascii=False)

    def example_text(self) -> str:
        """The first test text (from test_predictions.csv); "" when there is none."""
        text = ""
        if self.run.predictions_path.is_file():
            try:
                predictions = self.run.read_predictions()
            except RunDirError:
                predictions = None
            if predictions is not None and len(predictions):
                text = str(predictions.iloc[0][PREDICTION_TEXT])
        return text

    def environment_section(self) -> list[str]:
        versions = self.get("versions")
        rows = []
        device = self.get("device")
        if isinstance(device, dict):
            processes = device.get("num_processes")
            rows.append(
                (
                    "device",
                    f"{device.get('type', '?')} ({device.get('name', '?')})"
                    + (f", {processes} process(es)" if is_number(processes) else ""),
                )
            )
        if isinstance(versions, dict):
            rows += [(name, str(version)) for name, version in versions.items()]
        finished = self.get("run", "finished_at")
        if finished:
            rows.append(("finished", str(finished)))
        rows.append(("total run time", _duration(self.get("timings", "total_seconds"))))
        return ["## Environment", "", *_table(["component", "version or value"], rows)]


def tokenizer_code(model: str, tokenizer_class: str | None) -> list[str]:
    """Python that loads a from-scratch encoder folder's tokenizer without its custom code. transformers 5's
    AutoTokenizer reads the model's config.json (AutoConfig) before tokenizer_config.json; its auto_map names custom
    code, so without trust_remote_code transformers asks "Do you wish to run the custom code? [y/N]". False refuses:
    AutoTokenizer then reads config.json as a plain config and takes the class tokenizer_config.json names."""
    named = f"  # {tokenizer_class}" if tokenizer_class else ""
    return [
        "from transformers import AutoTokenizer",
        "",
        f'tokenizer = AutoTokenizer.from_pretrained("{model}", trust_remote_code=False){named}',
    ]


def _example_length(text: str) -> str:
    """A text on one line, cut at a word to about MAX_EXAMPLE_CHARS characters."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXAMPLE_CHARS else text[:MAX_EXAMPLE_CHARS].rsplit(" ", 1)[0] + " ..."
