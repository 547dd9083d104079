"""Score a trained model on a labelled file it has not seen: the same metrics and report as its own test split.

    python -m pipeline.evaluate --model runs/ag_news_minilm --input new_labelled.csv
    python -m pipeline.evaluate --model runs/tickets --input march.csv data.label_column=queue --output reports/march

The file is read as the run read its training files (its config.yaml), with `data.*` reading settings overridden
by KEY=VALUE, and scored whole by the run's model. The output folder (default reports/<run>_on_<file name>) is laid
out as a run directory, so that `python -m pipeline.report` reads it; it is built beside its place and renamed in.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.common.errors import DataError, one_line
from pipeline.common.hardware import INFERENCE_PRECISIONS
from pipeline.common.io import check_can_write, replace_directory
from pipeline.config.load import load_config, save_config
from pipeline.config.options import check_reading_overrides
from pipeline.config.schema import ConfigError, PipelineConfig
from pipeline.data.label_scheme import UnknownLabels, leave_out_hint
from pipeline.data.load import read_labelled_file
from pipeline.data.splits import RemovedRow, column_values, labels_of, write_removed_rows
from pipeline.data.text import fewer_columns_warning
from pipeline.predict import PredictError, Predictor, resolve_model_source
from pipeline.predict.speed import speed_record, warm_up
from pipeline.report.write import write_report
from pipeline.run.directory import REMOVED_ROWS_FILE, RunDir, RunDirError, folded_temperature
from pipeline.run.exports import BACKENDS
from pipeline.run.ownership import foreign_names
from pipeline.run.record import Calibration, Data, Evaluation, RunRecord, Scores, Throughput, Tokenization
from pipeline.scoring.decide import calibration_record
from pipeline.scoring.evaluation import EvalResult, result_from_probabilities, write_predictions
from pipeline.text.lengths import truncated_share
from pipeline.text.tokenization import TokenCounts

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT_ROOT = Path("reports")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.evaluate",
        description="Score a trained run's model on a labelled file and write its metrics and report.",
    )
    parser.add_argument("--model", required=True, help="run directory (runs/<name>)")
    parser.add_argument(
        "--input",
        required=True,
        help="labelled CSV, TSV, JSON Lines, Parquet or fastText file, Excel workbook (.xlsx; its sheet: data.sheet=NAME), or a folder of class folders",
    )
    parser.add_argument(
        "--output", help="folder to write (default: reports/<run>_on_<file name>); refused if it exists"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the output folder if it exists and holds only an earlier evaluation",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="torch",
        help="what runs the model: torch (default); onnx-fp32 (or onnx), onnx-int8, openvino, openvino-int8: the run's verified export of that name; auto: as pipeline.predict chooses",
    )
    parser.add_argument(
        "--precision",
        choices=INFERENCE_PRECISIONS,
        default=None,
        help="PyTorch's: fp32 or bf16 (default with --backend torch: the precision and batches stage 4 scored the "
        "run's test split with), auto (the default with any other backend, which runs an export at its own precision)",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="data.KEY=VALUE",
        help="how to read the file where it differs from the run's training files, e.g. data.label_column=topic",
    )
    return parser.parse_args(argv)


def predictor_options(backend: str, precision: str | None, run: RunRecord, config: PipelineConfig) -> dict[str, Any]:
    """Predictor.from_source's options. --backend torch with no --precision scores as stage 4 did: the run's
    precision, its evaluation batches and no fp32 recheck of near-ties. Batches matter under bf16, where a row's
    logits depend on its batch's padded width; so the run's own test rows score exactly what stage 4 recorded (on a
    CPU; a GPU's autocast rounds differently). Any other choice scores as pipeline.predict does."""
    if backend != "torch" or precision is not None:
        return {"backend": backend, "precision": precision or "auto"}  # an export runs at its own precision
    return {
        "backend": backend,
        "precision": run.training.scoring_precision,
        "batch_size": config.eval.batch_size,
        "max_batch_tokens": config.eval.max_batch_tokens,
        "recheck_margin": 0.0,
    }


def reading_config(run: RunDir, overrides: Sequence[str], input_path: Path) -> PipelineConfig:
    """The run's config with `data.*` overrides: how the file is read (its path as data.test_file, so that the
    saved config.yaml says what was scored). Other keys describe training, which is done."""
    check_reading_overrides(overrides)
    config = load_config(run.config_path, list(overrides))
    trained = load_config(run.config_path).data
    check_same_kind_of_text(trained.text_pair_columns, config.data.text_pair_columns)
    for key in ("text_columns", "text_pair_columns"):
        warning = fewer_columns_warning(getattr(trained, key) or (), getattr(config.data, key), f"data.{key}")
        if warning:
            logger.warning("%s", warning)
    config.data.test_file = str(input_path)  # set, not parsed: a path is no YAML value
    # The file is scored whole, as the test split: a split column divided the run's training file, not this one,
    # and beside data.test_file the saved config.yaml would be refused when read back (config_checks).
    config.data.split_column = None
    return config


def check_same_kind_of_text(trained: list[str] | None, given: list[str] | None) -> None:
    """The file's columns may be named otherwise, but a pair model reads pairs and a single-text model single texts:
    the other kind is a text it was never trained on, scored without a word of warning."""
    if bool(trained) != bool(given):
        kind = "sentence pairs (data.text_pair_columns)" if trained else "single texts"
        raise ConfigError(
            f"data.text_pair_columns: the model was trained on {kind}; an override may rename the columns, not change what the model reads"
        )


def check_paths(run: RunDir, input_path: Path, output: Path, overwrite: bool) -> None:
    """The output folder may replace an earlier one (--overwrite), never a file, the run directory or the input; and
    its place must be writable, said before the file is scored."""
    if not input_path.is_file() and not input_path.is_dir():
        raise DataError(
            f"--input: file not found: {input_path} (evaluation reads a file whole, or a folder of class folders; not stdin)"
        )
    target = output.resolve()
    input_kind = "the input folder" if input_path.is_dir() else "the input file"
    for protected, what in ((run.path.resolve(), "the run directory"), (input_path, input_kind)):
        if target == protected or target in protected.parents or protected in target.parents:
            raise RunDirError(f"--output {output}: overlaps {what} {protected}; write the evaluation elsewhere")
    check_can_write(output, "--output")
    if not output.exists():
        return
    if not output.is_dir():
        raise RunDirError(f"--output {output}: is a file, not a folder")
    if not overwrite:
        raise RunDirError(f"{output} exists; pass --overwrite to replace it, or --output another folder")
    check_replaceable(output)


def check_replaceable(output: Path) -> None:
    """--overwrite replaces a whole folder: only an earlier evaluation's, never a training run or a folder of the
    user's own files."""
    foreign = foreign_names(output)
    if foreign:
        held = f"files evaluation did not write ({', '.join(foreign[:5])})"
    elif RunDir(output).model_dir.exists():
        held = "a trained run (its model folder)"
    else:
        return
    raise RunDirError(f"--output {output}: holds {held}; --overwrite replaces only an earlier evaluation's folder")


# The run's own files that an input may be by mistake: the model learnt from train's rows (validation and test may be
# carved from them) and chose its best step, temperature and thresholds on validation's.
RUN_FILE_KEYS = ("data.train_file", "data.validation_file")


def run_file_of(run: RunDir, input_path: Path) -> str | None:
    """The key of the run's own file that the input is (config.yaml holds them absolute), or None."""
    data = run.read_config().get("data") or {}
    for key in RUN_FILE_KEYS:
        path = data.get(key.removeprefix("data."))
        if path and Path(str(path)).expanduser().resolve() == input_path:
            return key
    return None


def default_output(model: Path, input_path: str) -> Path:
    stem = Path(input_path).name.split(".")[0] or "input"
    return DEFAULT_OUTPUT_ROOT / f"{model.resolve().name}_on_{stem}"


@dataclass
class Scored:
    """One pass of the file through the model, and what it measured."""

    result: EvalResult  # the saved (calibrated) model's probabilities, labelled by its decision, and the metrics
    uncalibrated: EvalResult  # the same rows before calibration: the folded temperature taken back out
    temperature: float  # folded into the saved model (1.0: none)
    counts: TokenCounts  # the texts' untruncated lengths and unknown tokens, from the tokenization the model read
    speed: Throughput  # rows/s after a warm-up batch (pipeline.predict.speed)


def score(predictor: Predictor, texts: list[str], gold: Any, labels: list[str], temperature: float) -> Scored:
    """The texts scored by the model's decision, calibrated and (logits times the folded `temperature`) before
    calibration, from one forward pass; timed after a warm-up batch, tokenization included."""
    warm_up(predictor, texts)
    started = time.perf_counter()
    encoded = predictor.encode(texts)
    logits = predictor.row_logits(encoded)
    probabilities = predictor.with_ensemble(predictor.document_probabilities(logits, encoded), texts)
    speed = speed_record(predictor, len(texts), time.perf_counter() - started)
    result = result_from_probabilities(probabilities, gold, labels, predictor.decision)
    # The run's ensemble (if any) on both sides: calibration's effect is measured on what prediction writes.
    before = predictor.with_ensemble(predictor.document_probabilities(logits, encoded, scale=temperature), texts)
    uncalibrated = result_from_probabilities(before, gold, labels)
    counts = TokenCounts.of_encoding(encoded, predictor.tokenizer)
    return Scored(result, uncalibrated, temperature, counts, speed)


def calibration_of(scored: Scored, run: RunRecord) -> Calibration:
    """metrics.json `calibration` in a trained run's shape: the file's figures as `test`, the run's as validation."""
    own = run.calibration or Calibration()
    enabled = bool(own.enabled if own.enabled is not None else scored.temperature != 1.0)
    record = Calibration.from_dict(
        calibration_record(enabled, scored.temperature, {"test": scored.uncalibrated}, {"test": scored.result})
    )
    record.ece = {"validation": (own.ece or {}).get("validation"), **record.ece}
    record.loss = {"validation": (own.loss or {}).get("validation"), **record.loss}
    record.reliability = {"validation": (own.reliability or {}).get("validation"), **record.reliability}
    record.warning = own.warning or None
    record.fitted_temperature, record.applied, record.fitted_on = own.fitted_temperature, own.applied, own.fitted_on
    return record


def tokenization_of(counts: TokenCounts, max_length: int, run: RunRecord) -> Tokenization:
    """The run's tokenization record with this file's truncated and unknown-token shares as `test`."""
    record = replace(run.tokenization)  # a copy: the run's own stays as it was
    for key, value in (
        ("truncated_fraction", truncated_share(counts.lengths, max_length)),
        ("unknown_token_share", counts.unknown_share),
        ("mostly_unknown_share", counts.mostly_unknown_share),
    ):
        shares = getattr(record, key) if isinstance(getattr(record, key), dict) else {}
        setattr(record, key, {**{split: share for split, share in shares.items() if split == "train"}, "test": value})
    return record


def build_record(
    run: RunRecord,
    scored: Scored,
    tokenization: Tokenization,
    removed: list[RemovedRow],
    read: dict[str, Any],
    evaluation: Evaluation,
    name: str,
) -> RunRecord:
    """metrics.json of the output folder: the run's own records of how it was trained and validated, this file's
    metrics as `test` (`read`: how it was read, data.source_records)."""
    data = run.data
    repeated_headers = sum(read["repeated_headers"]["removed"].values())  # the rest of `removed` were incomplete
    return RunRecord(
        run=replace(run.run, name=name),
        labels=run.labels,
        validation=run.validation,
        test=Scores.from_dict(scored.result.metrics),
        best=run.best,
        # How the model was trained and its thresholds chosen: the run's, unchanged.
        training=run.training,
        thresholds=run.thresholds,
        tokenization=tokenization,
        throughput=scored.speed,
        calibration=calibration_of(scored, run),
        data=Data.from_dict(
            {
                "task": data.task,
                "class_counts": data.class_counts,
                "sizes": {"test": len(scored.result.labels)},
                "incomplete_rows": {"removed": {"test": len(removed) - repeated_headers}},
                **read,
            }
        ),
        evaluation=evaluation,
        read_keys=["format_version", "run", "labels", "validation"],  # validation: null where the run has none
    )


def evaluate_file(args: argparse.Namespace) -> tuple[Path, RunRecord]:
    """Score the file and write the folder; its path and metrics.json's contents."""
    run = RunDir(Path(args.model))
    run.check_finished()
    input_path = Path(args.input).resolve()
    output = Path(args.output) if args.output else default_output(run.path, args.input)
    check_paths(run, input_path, output, args.overwrite)
    config = reading_config(run, args.overrides, input_path)
    run_record = run.read_record()
    labels = run_record.labels
    reading = run_record.data.label_reading
    try:
        dataset, removed, read = read_labelled_file(config.data, args.input, "--input", labels, reading)
    except UnknownLabels as error:  # a class the model never saw: how to score the file without those rows
        raise DataError(f"{error}{leave_out_hint(config.data, error.labels)}") from None
    run_file = run_file_of(run, input_path)
    if run_file:
        logger.warning(
            f"--input {args.input} is the run's own {run_file}: the model learnt from (or was chosen on) its rows, so its scores here overstate how it does on new text"
        )
    options = predictor_options(args.backend, args.precision, run_record, config)
    predictor = Predictor.from_source(resolve_model_source(run.path), **options)
    temperature = folded_temperature(run.model_dir)
    scored = score(predictor, column_values(dataset, "text"), labels_of(dataset), labels, temperature)
    unknown = scored.counts.unknown and scored.counts.unknown.warning("the input's", predictor.tokenizer)
    if unknown:  # the report's note says it too (report.caveats.unknown_tokens_note)
        logger.warning("%s", unknown)
    evaluation = Evaluation(
        model=str(run.path.resolve()),
        input=str(input_path),
        run_file=run_file,  # the run's own data.train_file or data.validation_file, which the input is; or None
        overrides=list(args.overrides),
        rows=len(dataset),
        removed_rows=len(removed),
        backend=predictor.describe_backend(),
        read_keys=["run_file"],  # null when the input is no file of the run's
    )
    tokenization = tokenization_of(scored.counts, predictor.max_length, run_record)
    record = build_record(run_record, scored, tokenization, removed, read, evaluation, output.name)
    write_folder(output, run, config, record, scored.result, dataset, removed)
    return output, record


def write_folder(
    output: Path,
    run: RunDir,
    config: PipelineConfig,
    record: RunRecord,
    result: EvalResult,
    dataset: Any,
    removed: list[RemovedRow],
) -> None:
    """The output folder, built beside its place and renamed into it whole, its report included."""

    def fill(folder: Path) -> None:
        written = RunDir(folder)
        save_config(config, written.config_path)
        if run.history_path.is_file():  # the model's own validation curves, for the report
            shutil.copyfile(run.history_path, written.history_path)
        written.write_record(record)
        write_predictions(written.predictions_path, result, dataset, record.labels, config.data.label_separator)
        write_removed_rows(folder / REMOVED_ROWS_FILE, removed)
        write_report([folder], folder, final_dirs=[output])  # before the swap: the folder arrives whole

    replace_directory(output, fill)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        output, record = evaluate_file(args)
    except (ConfigError, DataError, PredictError, RunDirError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # a read-only folder, a full disk: io.OutputError names the output, not a temporary file
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 1
    print(f"{args.input}: {record.headline_scores}. Written: {output} (report.md, report.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
