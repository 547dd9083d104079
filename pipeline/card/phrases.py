"""The values template.md is filled with that take more than a template's `if` to write (the tables' rows: rows.py),
from the run's facts (facts.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pipeline.card.facts import (
    DATA_DEFAULTS,
    HUB_ID_PLACEHOLDER,
    CardFacts,
    data_file_names,
    hub_id,
    local_data,
    published_name,
    read_from_folders,
    split_sizes,
    teacher_name,
    tokenizer_class,
)
from pipeline.data.text import segments_of
from pipeline.run.directory import (
    DECISION_FILE,
    PREDICTION_TEXT,
    RANKING_METRICS,
    RunDirError,
    is_number,
    per_class_score,
    saved_model_config,
    untrained_consequence,
)
from pipeline.run.record import Baseline
from pipeline.scoring.thresholds import DEFAULT_THRESHOLD, KIND_ARGMAX, KIND_BINARY, KIND_MULTI_LABEL
from pipeline.text.windows import PAIR_CUT

# Beyond this many classes the confusion matrix is left to report.md: a card table that wide is unreadable.
MAX_CONFUSION_CLASSES = 12
MAX_EXAMPLE_CHARS = 160
# A CSV/TSV file's double quotes as read (metrics.json data.quoting.read: data.quoting resolved per file), in words.
QUOTING_READINGS = {"csv": "enclose fields", "none": "are read as text"}


def pct(value: Any, digits: int = 2, missing: str = "n/a") -> str:
    return f"{100 * value:.{digits}f}%" if is_number(value) else missing


def num(value: Any, digits: int = 4, missing: str = "n/a") -> str:
    return f"{value:.{digits}f}" if is_number(value) else missing


def count(value: Any, missing: str = "n/a") -> str:
    return f"{int(value):,}" if is_number(value) else missing


def metric_value(key: str, value: Any, missing: str = "n/a") -> str:
    """A ranking metric's value (RANKING_METRICS): accuracy as a percentage, an F1 as a score."""
    return pct(value, missing=missing) if key == "accuracy" else num(value, missing=missing)


def duration(seconds: Any) -> str:
    if not is_number(seconds):
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def metric_name(facts: CardFacts, key: str) -> str:
    """A ranking metric as the card names it: accuracy is subset accuracy for multi-label runs."""
    return facts.accuracy_name if key == "accuracy" else RANKING_METRICS[key]


def test_score(facts: CardFacts, key: str) -> Any:
    return facts.record.test.figure(key)


def intro_values(facts: CardFacts) -> dict[str, Any]:
    size = ""
    if is_number(n := facts.record.run.num_parameters):
        size = f" ({n / 1e6:.1f}M parameters)" if n >= 1e6 else f" ({int(n):,} parameters)"
    figures = [
        f"**{metric_value(key, test_score(facts, key))} {metric_name(facts, key)}**"
        for key in facts.record.headline_metrics
    ]
    return {
        "model_phrase": model_phrase(facts),
        "size": size,
        "dataset_phrase": dataset_phrase(facts),
        "headline": ", ".join(figures[:-1]) + " and " + figures[-1],
        "test_count": count(facts.record.test.num_samples),
        "run_reference": f"{facts.run.path.parent.name or 'runs'}/{facts.run.path.name}",
        "teacher_phrase": teacher_phrase(facts),
    }


def teacher_phrase(facts: CardFacts) -> str:
    return f"the teacher `{teacher_name(facts)}`" if teacher_name(facts) else "a teacher"


def model_phrase(facts: CardFacts) -> str:
    """What the model is and how it was made, as the intro's clause."""
    teacher, distill = teacher_phrase(facts), facts.record.distill
    if facts.is_encoder:
        layers, width = facts.encoder.get("num_layers"), facts.encoder.get("hidden_size")
        shape = f"{layers}-layer, {width}-wide " if layers and width else ""
        if distill is None:
            return f"a {shape}Transformer encoder trained from scratch, without pretraining"
        start = ", whose token embeddings it started from" if isinstance(distill.init_embeddings, dict) else ""
        return f"a {shape}Transformer encoder without pretraining, distilled from {teacher}{start}"
    base = hub_id(facts.base)
    made = "fine-tuned" if distill is None else f"fine-tuned by distillation from {teacher}"
    if base:
        return f"[{base}](https://huggingface.co/{base}), {made}"
    return f"the pretrained checkpoint `{published_name(facts.base)}` (a local folder), {made}"


def dataset_phrase(facts: CardFacts) -> str:
    if not facts.from_hub:
        return local_data(facts)[1]
    name, config = facts.data.get("hub_name"), facts.data.get("hub_config")
    # data.hub_name may be a local folder that `datasets` reads (save_to_disk's, the Hub's data/ layout of Parquet
    # shards): named by its own name, as a local file is, not by a path on this machine.
    if hub_id(name):
        dataset = f"the Hub dataset [{name}](https://huggingface.co/datasets/{name})"
    else:
        dataset = f"the local dataset folder `{published_name(name) or 'unknown'}`"
    return dataset + (f" (config `{config}`)" if config else "")


def text_rule(facts: CardFacts) -> str:
    """How a row's columns became its text, as a clause."""
    spec = facts.text_spec

    def built(columns: tuple[str, ...]) -> str:
        if len(columns) == 1:
            return f"the `{columns[0]}` column"
        return f"the columns {', '.join(f'`{c}`' for c in columns)} joined by {json.dumps(spec.separator)}"

    if spec.pair_columns:
        return f"a sentence pair: its first text {built(spec.columns)}, its second {built(spec.pair_columns)}"
    return built(spec.columns)


def label_rule(facts: CardFacts) -> str:
    """Where a row's label came from, as a clause."""
    indicators = facts.data.get("label_columns")
    if indicators:
        columns = ", ".join(f"`{column}`" for column in indicators)
        return f"a row has each class whose own column ({columns}) holds 1, true or yes"
    return f"the label is the `{facts.data.get('label_column', DATA_DEFAULTS.label_column)}` column"


def data_values(facts: CardFacts) -> dict[str, Any]:
    """The Training data section's: where the rows came from, how they were read, split and cleaned."""
    record, data = facts.record.data, facts.data
    files = data_file_names(facts)
    split_column = record.split_column if isinstance(record.split_column, dict) else {}
    sizes = split_sizes(facts)
    return {
        "data_files": ", ".join(f"{split} `{name}`" for split, name in files.items()),
        "split_column": split_column.get("column") if isinstance(split_column.get("rows"), dict) else None,
        "split_column_rows": ", ".join(f"{s} {count(n)}" for s, n in (split_column.get("rows") or {}).items() if n),
        "column_rule": not (files and set(files) <= read_from_folders(facts)),  # else the class folders line says
        "text_rule": text_rule(facts),
        "label_rule": label_rule(facts),
        "carved": [(split, pct(share, 0)) for split, share in (record.carved_from_train or {}).items()],
        "caps": ", ".join(f"`data.{k}={data[k]}`" for k in ("max_train_samples", "max_eval_samples") if data.get(k)),
        "size_rows": [(split, count(sizes[split])) for split in ("train", "validation", "test") if split in sizes],
        "train_size": sizes.get("train"),
        "duplicates": duplicates_values(record.duplicates),
        "incomplete": by_split(nested_record(record.incomplete_rows, "removed"), count, any_nonzero=True),
        "quoting": read_per_file(record.quoting, lambda reading: QUOTING_READINGS.get(reading, reading)),
        "delimiter": read_per_file(record.delimiter, lambda d: "tab" if d == "\t" else f"`{d}`", plain=(",", "\t")),
        "class_folders": per_split_record(record.class_folders, lambda name, files: f"`{name}` {count(files)}"),
        "class_files": per_split_record(record.class_files, lambda name, file: f"`{name}` {file}"),
        "decoding": decoding_values(record.decoding),
    }


def decoding_values(record: Any) -> dict[str, str] | None:
    """data.decoding: the files read as Windows-1252 under `data.encoding: auto`, the lines read as U+FFFD."""
    files = (record or {}).get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict):
        return None
    read_as = [f"`{name}` ({file['encoding']})" for name, file in files.items() if file.get("encoding")]
    replaced = [
        f"`{name}` {count(len(file['replaced_lines']))}" for name, file in files.items() if file.get("replaced_lines")
    ]
    return {"setting": str(record.get("setting")), "read_as": ", ".join(read_as), "replaced": ", ".join(replaced)}


def nested_record(record: Any, key: str) -> Any:
    return record.get(key) if isinstance(record, dict) else None


def by_split(counts: Any, show: Callable[[Any], str], any_nonzero: bool = False) -> str:
    """{key: n} as "key n, key n" (underscores as spaces), numbers only; "" where there are none (or all are 0)."""
    if not isinstance(counts, dict) or (any_nonzero and not any(is_number(n) and n for n in counts.values())):
        return ""
    return ", ".join(f"{key.replace('_', ' ')} {show(n)}" for key, n in counts.items() if is_number(n))


def duplicates_values(record: Any) -> dict[str, Any] | None:
    """data.duplicates (stage 1's count of repeated texts and what it removed), in words."""
    if not isinstance(record, dict):
        return None
    within, across = by_split(record.get("within"), count), by_split(record.get("across"), count)
    parts = [f"repeated within a split: {within}"] if within else []
    parts += [f"across splits: {across}"] if across else []
    if is_number(conflicts := record.get("conflicts")) and conflicts:
        parts.append(f"texts carrying more than one label: {count(conflicts)}")
    return {"mode": record.get("mode"), "found": "; ".join(parts), "removed": by_split(record.get("removed"), count)}


def read_per_file(record: Any, phrase: Callable[[str], str], plain: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """A record of how each CSV/TSV file was read (data.reading_record) as its setting and its readings by split,
    the splits read alike grouped ("<phrase> in train, validation; <phrase> in test"); None where there is none, or
    where every file was read the `plain` way (commas and tabs: what a reader of the files assumes)."""
    read = nested_record(record, "read")
    if not isinstance(read, dict) or not read or all(reading in plain for reading in read.values()):
        return None
    splits_by_reading: dict[str, list[str]] = {}
    for split, reading in read.items():
        splits_by_reading.setdefault(str(reading), []).append(split)
    readings = "; ".join(f"{phrase(reading)} in {', '.join(splits)}" for reading, splits in splits_by_reading.items())
    return {"setting": record.get("setting"), "read": readings}


def per_split_record(record: Any, entry: Callable[[str, Any], str]) -> str:
    """A data record of class -> value by split, as "train: `neg` 6, `pos` 6; test: ..." ("" where there is none)."""
    if not isinstance(record, dict):
        return ""
    parts = [
        f"{split}: {', '.join(entry(name, value) for name, value in by_class.items())}"
        for split, by_class in record.items()
        if isinstance(by_class, dict)
    ]
    return "; ".join(parts)


def example_input(facts: CardFacts) -> str:
    """transformers.pipeline's argument for the example: the first test text (test_predictions.csv) on one line,
    cut at a word; for a pair model a {text, text_pair} dict."""
    segments = [_example_length(segment) for segment in segments_of(_first_test_text(facts))]
    if not facts.text_spec.pair_columns:
        return json.dumps(segments[0] or "Replace this with the text to classify.", ensure_ascii=False)
    first, second = segments if len(segments) == 2 else ("", "")
    example = {"text": first or "Replace this with the first text.", "text_pair": second or "And this with the second."}
    return json.dumps(example, ensure_ascii=False)


def _first_test_text(facts: CardFacts) -> str:
    if not facts.run.predictions_path.is_file():
        return ""
    try:
        predictions = facts.run.read_predictions()
    except RunDirError:
        return ""
    return str(predictions.iloc[0][PREDICTION_TEXT]) if len(predictions) else ""


def _example_length(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXAMPLE_CHARS else text[:MAX_EXAMPLE_CHARS].rsplit(" ", 1)[0] + " ..."


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


def untrained_values(facts: CardFacts) -> dict[str, Any]:
    """Classes without training rows, and classes of test texts the model found none of (recall 0), those aside."""
    untrained, per_class = facts.record.untrained_classes, facts.record.test.per_class
    unfound = {
        name: scores.get("support")
        for name, scores in (per_class if isinstance(per_class, dict) else {}).items()
        if isinstance(scores, dict) and per_class_score(scores, "recall") == 0 and name not in untrained
    }
    return {
        "untrained_names": ", ".join(f"`{name}`" for name in untrained),
        "untrained_consequence": untrained_consequence(untrained) if untrained else "",
        "unfound": ", ".join(f"`{name}` ({count(n)} test text{'' if n == 1 else 's'})" for name, n in unfound.items()),
        "unfound_pronoun": "it" if len(unfound) == 1 else "them",
    }


def limitations_values(facts: CardFacts) -> dict[str, Any]:
    """The Limitations section's: how long texts were read, classes never learnt or never found, what the model
    learned from, and a baseline that beats it."""
    length, truncated = facts.record.tokenization.max_length, facts.record.tokenization.truncated_fraction
    shares = None
    if isinstance(truncated, dict) and is_number(length):
        shares = ", ".join(f"{split} {pct(share)}" for split, share in truncated.items() if is_number(share))
    train_size = split_sizes(facts).get("train")
    return {
        "pair_cut": PAIR_CUT,
        "pct": pct,
        "truncated_shares": shares,
        "trained_on": f"{count(train_size)} training texts" if is_number(train_size) else "its training data",
        "baseline_beats": baseline_beats(facts),
        "ensemble_text": ensemble_text(facts),
        "label_audit": label_audit_phrase(facts),
        **untrained_values(facts),
    }


def ensemble_text(facts: CardFacts) -> str:
    """The Ensemble section: what the run kept, and what `transformers.pipeline` on model/ alone gives instead."""
    record = facts.record.ensemble
    if record is None or record.kept is None:
        return ""
    if not record.kept:
        return f"An ensemble with the baseline was tried and not kept: {record.reason}."
    validation = record.validation or {}

    def scores(member: str) -> str:
        figures = validation.get(member) or {}
        shown = [
            f"{name} {figures[name]:.4f}" for name in ("accuracy", "micro_f1", "loss") if is_number(figures.get(name))
        ]
        return ", ".join(shown) or "not recorded"

    return (
        f"The labels and scores above are an ensemble: {record.weight:.2f} x the model's probabilities plus "
        f"{1 - record.weight:.2f} x the TF-IDF baseline's, saved beside the model as `ensemble.json` and "
        "`baseline.safetensors`. `pipeline.predict`, `pipeline.evaluate`, `pipeline.serve` and `Predictor` apply it. "
        "`transformers.pipeline` on this folder alone gives the model without the baseline. "
        f"On validation, the model alone: {scores('model')}; the ensemble: {scores('ensemble')}."
    )


def label_audit_phrase(facts: CardFacts) -> str:
    """The limitation the label audit found: rows whose given label the evidence contradicts; "" where none."""
    audit = facts.record.label_audit
    splits = (audit.splits or {}) if audit is not None else {}
    flagged = {split: part.get("flagged") for split, part in splits.items() if is_number(part.get("flagged"))}
    if not any(flagged.values()):
        return ""
    shown = ", ".join(f"{split} {count(rows)}" for split, rows in flagged.items())
    return f"The label audit found rows whose label looks wrong ({shown}; see `label_issues.csv`): the model learned from, and was scored on, some wrong labels."


def baseline_beats(facts: CardFacts) -> str:
    """The limitation a baseline more accurate than this model (by the ranking metric) is; "" where none is."""
    key, record = facts.record.ranking_metric, facts.record.baseline
    ours, (theirs,) = test_score(facts, key), baseline_figures(record, [key]) or (None,)
    if not is_number(ours) or not is_number(theirs) or theirs <= ours:
        return ""
    better = "is more accurate" if key == "accuracy" else f"scores a higher {RANKING_METRICS[key]}"
    return (
        f"The {baseline_name(record)} baseline {better} on the same test split ({metric_value(key, theirs)} "
        f"against {metric_value(key, ours)}): as trained, this model does not earn its cost over it."
    )


def baseline_figures(record: Baseline | None, keys: list[str]) -> tuple[Any, ...] | None:
    """The `keys` figures of a baseline record (the first a number), at its top level or under `test` (older runs)."""
    for candidate in (record, older_baseline(record)):
        if candidate is not None and is_number(candidate.figure(keys[0])):
            return tuple(candidate.figure(key) for key in keys)
    return None


def older_baseline(record: Baseline | None) -> Baseline | None:
    """Older runs recorded the baseline's test figures under `baseline.test`."""
    nested = record.extra.get("test") if record is not None else None
    return Baseline.from_dict(nested) if isinstance(nested, dict) else None


def named_baselines(record: Baseline) -> dict[str, Baseline]:
    """Several baselines, recorded by name (each a baseline record of its own)."""
    return {name: Baseline.from_dict(value) for name, value in record.extra.items() if isinstance(value, dict)}


def baseline_name(record: Baseline | None, key: str = "baseline") -> str:
    if record is None:
        return key
    return str(record.description or record.name or record.extra.get("model") or key)


def usage_values(facts: CardFacts) -> dict[str, Any]:
    """The How to use section's: the example call, and what transformers.pipeline does otherwise than training."""
    length = facts.record.tokenization.max_length
    saved = saved_model_config(facts.run.model_dir) or {}
    model_id = HUB_ID_PLACEHOLDER.format(name=facts.run.path.name)  # its Hub id once uploaded, unknown here
    return {
        "model_id": model_id,
        "example_input": example_input(facts),
        "truncation": f", truncation=True, max_length={int(length)}" if is_number(length) else "",
        "thresholds_note": thresholds_note(facts),
        "decision_file": DECISION_FILE,
        "reads_long_texts_otherwise": not facts.long_text_rule.is_plain_head,
        "has_auto_map": "AutoModelForSequenceClassification" in (saved.get("auto_map") or {}),
        "tokenizer_code": "\n".join(tokenizer_code(model_id, tokenizer_class(facts))),
    }


def thresholds_note(facts: CardFacts) -> dict[str, str] | None:
    """What transformers.pipeline does not apply: the decision thresholds chosen on validation (decision.json)."""
    recorded = facts.record.thresholds
    thresholds, kind = (recorded.thresholds, recorded.kind) if recorded else (None, None)
    if not isinstance(thresholds, dict) or not thresholds or kind == KIND_ARGMAX:
        return None
    rule = {
        KIND_MULTI_LABEL: "a label applies when its score is at least its threshold",
        KIND_BINARY: "the positive class is predicted when its score is at least its threshold",
    }.get(kind, "a row whose top score is below its class's threshold is flagged as low-confidence")
    if len(thresholds) < len(facts.labels):  # eval.threshold named some classes: what the others get
        rule += {
            KIND_MULTI_LABEL: f" (the other classes' threshold is {DEFAULT_THRESHOLD})",
            KIND_BINARY: "",
        }.get(kind, " (a row of another class is never flagged)")
    listed = ", ".join(f"{name} {value:.4f}" for name, value in thresholds.items() if is_number(value))
    return {"listed": listed, "rule": rule}
