"""Knowledge distillation: a trained teacher's logits travel with every training row as soft targets.

    source = resolve_teacher(config.train.distill)                     # before any work: a model, or ConfigError
    splits, counts = with_transfer_split(config, data, tokenizer.mask_token)   # + "transfer": unlabelled, augmented
    rows, record = student_rows(config, splits, tokenized, labels, source, counts)   # + the teacher's logits

The teacher is a run directory or model folder of this project (BERT or the encoder). Its logits for every row
are computed once, in batches, by the prediction path (pipeline.predict.Predictor.logits) and cached under
data.cache_dir, keyed by a hash of the teacher's weights and config and of the texts, so later runs reuse them.
The transfer set is the labelled train split, plus data.unlabeled_file (texts without labels) and copies of the
train texts made by train.distill.augment (Tang et al. 2019, "Distilling task-specific knowledge from BERT into
simple neural networks"): those rows carry label -1 and train on the soft loss alone (pipeline.train.losses).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from pipeline.common.errors import DataError
from pipeline.common.io import atomic_path, atomic_write_json
from pipeline.config.reading import PAIR_MARK
from pipeline.config.schema import ConfigError, DataConfig, DistillConfig, PipelineConfig
from pipeline.data.folders import is_folder
from pipeline.data.splits import column_values
from pipeline.data.text import TextSpec, segments_of
from pipeline.models import class_names, is_multi_label
from pipeline.run import directory as rundir
from pipeline.run.directory import RunDir, is_number, nested_get

if TYPE_CHECKING:
    import datasets

    from pipeline.data.load import LoadedData
    from pipeline.predict import ModelSource, Predictor
    from pipeline.text.batching import TokenizedRows

logger = logging.getLogger(__name__)

TEACHER_KEY = "train.distill.teacher"
TRANSFER_SPLIT = "transfer"
# Label of a transfer row without a gold label: the loss gives it the soft term alone.
NO_LABEL = -1
# Bump when what the caches hold, or how they are keyed, changes: old entries are then ignored.
CACHE_FORMAT = 1
WEIGHT_FILE_PATTERNS = ("*.safetensors", "*.bin", "*.pt")


# ---------------------------------------------------------------------------------------------------------------
# The teacher


def resolve_teacher(distill: DistillConfig) -> ModelSource:
    """The teacher's folder as the prediction path resolves it; a path that is not a model is an error naming the key."""
    from pipeline.predict import PredictError, resolve_model_source

    try:
        source = resolve_model_source(Path(distill.teacher).expanduser())
    except PredictError as error:
        raise ConfigError(f"{TEACHER_KEY}: {error}") from None
    if not weight_files(source.model_dir):
        raise ConfigError(f"{TEACHER_KEY}: {source.model_dir} holds a model config but no weights (model.safetensors)")
    return source


def weight_files(model_dir: Path) -> list[Path]:
    return sorted(path for pattern in WEIGHT_FILE_PATTERNS for path in Path(model_dir).glob(pattern))


def teacher_config(source: ModelSource) -> Any:
    """The teacher's model config (no weights loaded)."""
    from transformers import AutoConfig

    import pipeline.models.encoder  # noqa: F401 -- registers the from-scratch encoder with the Auto classes

    try:
        return AutoConfig.from_pretrained(str(source.model_dir))
    except (OSError, ValueError, KeyError) as error:
        raise ConfigError(f"{TEACHER_KEY}: cannot read the model config in {source.model_dir} ({error})") from None


def check_single_label(config: Any, where: Path) -> None:
    """A multi-label teacher's logits are independent sigmoids: read as a softmax over the classes (the soft
    targets), a class it scores high takes probability from the others, which it never meant."""
    if is_multi_label(config):
        raise ConfigError(
            f"{TEACHER_KEY}: {where} is a multi-label model (a sigmoid per class), but distillation's soft targets "
            "are a softmax over the classes; give a single-label teacher"
        )


def check_reading(source: ModelSource, student: TextSpec) -> None:
    """The teacher labels the texts as this run builds them: from another number of columns, or joined by another
    separator, they are texts it was never trained to read, and its soft targets silently get worse. Column names
    may differ (the student's file may call `text` `body`): the texts are built alike."""
    if not source.reading_recorded:
        return
    teacher = source.text_spec
    settings = {}  # key -> (this run's value, the teacher's)
    if len(student.columns) != len(teacher.columns):
        settings["data.text_columns"] = (list(student.columns), list(teacher.columns))
    joins = len(student.columns) > 1 or len(student.pair_columns) > 1  # one column a side: nothing is joined
    if joins and student.separator != teacher.separator:
        settings["data.text_separator"] = (student.separator, teacher.separator)
    if len(student.pair_columns) != len(teacher.pair_columns):
        settings["data.text_pair_columns"] = (list(student.pair_columns) or None, list(teacher.pair_columns) or None)
    if student.unescape_newlines != teacher.unescape_newlines:
        settings["data.unescape_newlines"] = (student.unescape_newlines, teacher.unescape_newlines)
    if not settings:
        return
    differences = "; ".join(
        f"{key} is {json.dumps(mine)} here, {json.dumps(theirs)} for the teacher"
        for key, (mine, theirs) in settings.items()
    )
    raise ConfigError(
        f"{TEACHER_KEY}: the teacher ({source.run_dir or source.model_dir}) was trained on texts built otherwise: "
        f"{differences}; set {' and '.join(settings)} as the teacher's, so that it reads the texts it was trained on"
    )


def check_labels(teacher: list[str], student: list[str], where: Path) -> None:
    """The teacher's logits are read column by column as the student's classes: names and order must match."""
    if teacher == student:
        return
    missing, extra = [n for n in student if n not in teacher], [n for n in teacher if n not in student]
    if missing or extra:
        detail = "; ".join(
            part
            for part in (
                f"the data's {', '.join(missing)} not among the teacher's classes" if missing else "",
                f"the teacher's {', '.join(extra)} not in the data" if extra else "",
            )
            if part
        )
    else:
        detail = "the same classes in another order"
    raise ConfigError(
        f"{TEACHER_KEY}: the teacher's labels ({', '.join(teacher)}, from {where}) do not match the data's "
        f"({', '.join(student)}): {detail}; give data.label_names in the teacher's order, or another teacher"
    )


def teacher_test_accuracy(source: ModelSource) -> float | None:
    """The teacher run's own test accuracy (its metrics.json), when the teacher is a run directory."""
    if source.run_dir is None or not RunDir(source.run_dir).metrics_path.is_file():
        return None
    try:
        accuracy = nested_get(RunDir(source.run_dir).read_metrics(require_test=False), "test", "accuracy")
    except rundir.RunDirError:
        return None
    return float(accuracy) if is_number(accuracy) else None


def teacher_fingerprint(source: ModelSource) -> str:
    """A hash of what decides the teacher's logits: its weights file(s), config, tokenizer, fixed length, the
    precision the prediction path runs it in on this machine, and the verified export it runs instead when there is
    one (ONNX Runtime or OpenVINO, bf16 or int8: each gives slightly different logits)."""
    from pipeline.common.hardware import resolve_device, resolve_inference_dtype

    digest = hashlib.sha256(f"v{CACHE_FORMAT}|{source.max_length}|".encode())
    for path in [
        *weight_files(source.model_dir),
        source.model_dir / rundir.MODEL_CONFIG_FILE,
        *sorted(source.model_dir.glob("tokenizer*.json")),
        *sorted(source.model_dir.glob("vocab*")),
    ]:
        digest.update(f"|{path.name}|".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    digest.update(str(resolve_inference_dtype("auto", resolve_device("auto"))).encode())
    digest.update(_export_identity(source).encode())
    return digest.hexdigest()


def _export_identity(source: ModelSource) -> str:
    """The backend `--backend auto` takes for the teacher here, with its file's sha256 ("torch" without an export):
    the recorded one, which choose_export has just checked the file against (the file's own for an older record)."""
    from pipeline.common.hardware import resolve_device
    from pipeline.run.exports import ExportError, choose_export, file_sha256, read_export_record

    try:
        choice = choose_export(source.run_dir, source.model_dir, "auto", resolve_device("auto").type)
        if choice.variant is None:
            return choice.backend
        recorded = read_export_record(source.run_dir)["variants"][choice.variant].get("sha256")
        return f"{choice.backend}|{recorded or file_sha256(choice.path)}"
    except ExportError:  # a damaged export: the predictor will say so when it loads
        return "torch"


def texts_fingerprint(texts: Sequence[str]) -> str:
    digest = hashlib.sha256(f"{len(texts)}|".encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


class TeacherLabeller:
    """The teacher's logits for lists of texts: from the cache when present, else computed (the model is loaded
    once, on the first miss) and cached."""

    def __init__(self, source: ModelSource, labels: list[str], cache_root: Path, batch_size: int):
        self.source = source
        self.labels = labels
        self.cache_dir = Path(cache_root) / rundir.TEACHER_LOGITS_CACHE_DIR
        self.batch_size = batch_size
        self.fingerprint = teacher_fingerprint(source)
        self.predictor: Predictor | None = None
        self.computed_rows = 0
        self.compute_seconds = 0.0
        self.misses = 0  # lists of texts not in the cache: none means every logit came from it

    def cache_path(self, texts: Sequence[str]) -> Path:
        return self.cache_dir / f"{self.fingerprint[:20]}-{texts_fingerprint(texts)[:20]}.npy"

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        """(N, K) float32, row i the teacher's logits for texts[i]."""
        path = self.cache_path(texts)
        cached = self._read(path, len(texts))
        if cached is not None:
            logger.info("Teacher logits for %d texts loaded from cache %s", len(texts), path)
            return cached
        self.misses += 1
        predictor = self._predictor()
        tick = time.perf_counter()
        with tqdm(total=len(texts), desc="Teacher labelling", unit="row", dynamic_ncols=True) as progress:
            logits = predictor.logits(list(texts), on_batch=progress.update)
        seconds = time.perf_counter() - tick
        self.compute_seconds += seconds
        self.computed_rows += len(texts)
        logger.info(
            "Teacher labelled %d texts in %.1f s (%.0f rows/s); cached in %s",
            len(texts),
            seconds,
            len(texts) / max(seconds, 1e-9),
            path,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as temp, temp.open("wb") as handle:
            np.save(handle, logits.astype(np.float32))
        return logits

    def _read(self, path: Path, rows: int) -> np.ndarray | None:
        if not path.is_file():
            return None
        try:
            logits = np.load(path)
        except (OSError, ValueError) as error:
            logger.warning("Ignoring unreadable teacher-logit cache %s (%s)", path, error)
            return None
        return logits if logits.shape == (rows, len(self.labels)) else None

    def _predictor(self) -> Predictor:
        if self.predictor is None:
            from pipeline.predict import PredictError, Predictor

            try:
                self.predictor = Predictor.from_source(self.source, batch_size=self.batch_size)
            except PredictError as error:
                raise ConfigError(f"{TEACHER_KEY}: {error}") from None
            check_labels(self.predictor.labels, self.labels, self.source.model_dir)
            logger.info("Teacher %s: %s", self.source.model_dir, self.predictor.describe_backend())
        return self.predictor


# ---------------------------------------------------------------------------------------------------------------
# The transfer set: unlabelled texts and augmented copies of the train texts


def read_unlabeled(config: DataConfig) -> list[str]:
    """data.unlabeled_file's texts by the training text rule; an empty text is an error naming the row, or left out
    under `data.incomplete_rows: drop`.

    The file is read in the train file's layout (data.column_names) when it has that many columns, else its first
    row is the header: a file of just the text columns needs no label column.
    """
    from pipeline.data.build import build_texts, texts_of
    from pipeline.data.local import read_table, warn_repeated_headers

    path, key = config.unlabeled_file, "data.unlabeled_file"
    if is_folder(path):  # its texts have no classes: a folder of class folders would have them read as unlabelled
        raise DataError(
            f"{key}: {path} is a folder; unlabelled texts are read from a file (CSV, TSV, JSON Lines, Parquet)"
        )
    spec = TextSpec.from_data_config(config)
    attempts = [config.column_names, None] if config.column_names else [None]
    for number, column_names in enumerate(attempts, 1):
        try:
            table = read_table(path, key, config, column_names)
            for column in spec.input_columns:
                table.column(column, key)
        except DataError:
            if number == len(attempts):
                raise
            continue
        if len(table.frame) == 0:
            raise DataError(f"{key}: {path} has no data rows")
        warn_repeated_headers(table, "left out")
        if config.incomplete_rows != "drop":
            return build_texts(table, spec)
        texts = texts_of(table, spec)
        kept = [text for text in texts if text]
        if len(kept) < len(texts):
            logger.warning("%s: %d empty texts left out (data.incomplete_rows: drop)", path, len(texts) - len(kept))
        if not kept:
            raise DataError(f"{key}: every one of the {len(texts)} rows of {path} has an empty text")
        return kept
    raise AssertionError("unreachable")


def augment(texts: Sequence[str], distill: DistillConfig, seed: int, mask_token: str) -> list[tuple[int, str]]:
    """(source row, augmented text) for train.distill.augment_copies copies of every text; copies equal to their
    source are left out. Seeded: the same texts, settings and seed give the same copies."""
    out = []
    for copy in range(distill.augment_copies):
        rng = np.random.default_rng([seed, copy, CACHE_FORMAT])
        for row, text in enumerate(texts):
            changed = augment_text(text, distill, rng, mask_token)
            if changed != text:
                out.append((row, changed))
    return out


def augment_text(text: str, distill: DistillConfig, rng: np.random.Generator, mask_token: str) -> str:
    """One copy of one text by train.distill.augment (words are whitespace-separated); a sentence pair's two texts
    are each changed, and stay a pair."""
    return PAIR_MARK.join(augment_words(segment, distill, rng, mask_token) for segment in segments_of(text))


def augment_words(text: str, distill: DistillConfig, rng: np.random.Generator, mask_token: str) -> str:
    words = text.split()
    if not words:
        return text
    kind, p = distill.augment, distill.augment_word_probability
    if kind in ("mask", "mask_ngram"):
        words = [mask_token if hit else word for word, hit in zip(words, rng.random(len(words)) < p)]
    elif kind == "dropout":
        kept = [word for word, hit in zip(words, rng.random(len(words)) < p) if not hit]
        words = kept or [words[int(rng.integers(len(words)))]]
    if kind in ("ngram", "mask_ngram") and rng.random() < distill.augment_ngram_probability:
        n = min(int(rng.integers(1, distill.augment_ngram_max + 1)), len(words))
        start = int(rng.integers(len(words) - n + 1))
        words = words[start : start + n]
    return " ".join(words)


def augmented_texts(
    train_texts: Sequence[str], distill: DistillConfig, seed: int, mask_token: str, cache_root: Path
) -> list[tuple[int, str]]:
    """`augment`, cached under data.cache_dir by a hash of the texts, the settings and the seed."""
    settings = {
        field: getattr(distill, field)
        for field in (
            "augment",
            "augment_copies",
            "augment_word_probability",
            "augment_ngram_probability",
            "augment_ngram_max",
        )
    }
    key = hashlib.sha256(json.dumps([CACHE_FORMAT, settings, seed, mask_token], sort_keys=True).encode())
    key.update(texts_fingerprint(train_texts).encode())
    path = Path(cache_root) / rundir.TRANSFER_CACHE_DIR / f"{key.hexdigest()[:24]}.json"
    if path.is_file():
        try:
            return [(int(row), str(text)) for row, text in json.loads(path.read_text(encoding="utf-8"))]
        except (OSError, ValueError, TypeError) as error:
            logger.warning("Ignoring unreadable augmentation cache %s (%s)", path, error)
    copies = augment(train_texts, distill, seed, mask_token)
    atomic_write_json(path, copies)
    return copies


def transfer_dataset(config: PipelineConfig, data: LoadedData, mask_token: str) -> tuple[datasets.Dataset, dict]:
    """The rows without gold labels (label -1): data.unlabeled_file's texts (those that repeat a validation or test
    text are dropped: the teacher's view of them would leak into training) and the augmented copies."""
    import datasets

    from pipeline.data.splits import duplicate_key

    texts, row_ids, counts = [], [], {"unlabeled": 0, "unlabeled_dropped_as_eval_duplicates": 0, "augmented": 0}
    if config.data.unlabeled_file:
        held_out = {
            duplicate_key(text) for name in ("validation", "test") for text in column_values(data.splits[name], "text")
        }
        for line, text in enumerate(read_unlabeled(config.data), 1):
            if duplicate_key(text) in held_out:
                counts["unlabeled_dropped_as_eval_duplicates"] += 1
                continue
            texts.append(text)
            row_ids.append(f"unlabeled:{line}")
        counts["unlabeled"] = len(texts)
    if config.train.distill.augment != "none":
        train = data.splits["train"]
        copies = augmented_texts(
            column_values(train, "text"),
            config.train.distill,
            config.run.seed,
            mask_token,
            Path(config.data.cache_dir).expanduser(),
        )
        train_ids = column_values(train, "row_id")
        texts += [text for _, text in copies]
        row_ids += [f"{config.train.distill.augment}:{train_ids[row]}" for row, _ in copies]
        counts["augmented"] = len(copies)
    features = data.splits["train"].features
    rows = {"text": texts, "label": [NO_LABEL] * len(texts), "row_id": row_ids}
    return datasets.Dataset.from_dict(rows, features=features), counts


def with_transfer_split(config: PipelineConfig, data: LoadedData, mask_token: str | None) -> tuple[dict, dict]:
    """The splits to tokenize: stage 1's, plus the transfer rows when distilling (tokenized to the same length,
    which train alone decides); and the transfer set's counts."""
    if not config.train.distill.teacher:
        return dict(data.splits), {}
    transfer, counts = transfer_dataset(config, data, mask_token or "[MASK]")
    splits = dict(data.splits)
    if len(transfer):
        splits[TRANSFER_SPLIT] = transfer
    return splits, counts


# ---------------------------------------------------------------------------------------------------------------
# The student's training rows


def student_rows(
    config: PipelineConfig, splits: dict, tokenized: Any, labels: list[str], source: ModelSource, counts: dict
) -> tuple[TokenizedRows, dict[str, Any]]:
    """Train (+ transfer) rows with the teacher's logits, and the record metrics.json keeps under `distill`.

    The teacher reads the texts of `splits` (with_transfer_split's): a tokenized split keeps no `text` column, and
    distillation's one row per text (long_text: truncate) makes row i of a tokenized split row i of its split."""
    import datasets

    from pipeline.text.batching import TokenizedRows

    distill = config.train.distill
    labeller = TeacherLabeller(source, labels, Path(config.data.cache_dir).expanduser(), distill.teacher_batch_size)
    names = ["train"] + ([TRANSFER_SPLIT] if TRANSFER_SPLIT in tokenized else [])
    logits = np.concatenate([labeller.logits(column_values(splits[name], "text")) for name in names])  # (N, K)
    parts = [tokenized[name] for name in names]
    rows = datasets.concatenate_datasets(parts) if len(parts) > 1 else parts[0]
    gold = np.asarray(column_values(tokenized["train"], "label"), dtype=np.int64)
    record = {
        "teacher": distill.teacher,
        "teacher_model_dir": str(source.model_dir),
        "teacher_test_accuracy": teacher_test_accuracy(source),
        "teacher_train_accuracy": float(np.mean(logits[: len(gold)].argmax(axis=1) == gold)) if len(gold) else None,
        "alpha": distill.alpha,
        "temperature": distill.temperature,
        "augment": distill.augment,
        "augment_copies": distill.augment_copies if distill.augment != "none" else 0,
        "unlabeled_file": config.data.unlabeled_file,
        "transfer_set": {"labelled": len(gold), **counts, "total": len(rows)},
        "teacher_logits_from_cache": labeller.misses == 0,
        "teacher_labelling_seconds": labeller.compute_seconds,
        "teacher_rows_per_second": labeller.computed_rows / labeller.compute_seconds
        if labeller.computed_rows
        else None,
    }
    return TokenizedRows(rows, teacher_logits=logits), record


def init_student_embeddings(student: Any, source: ModelSource, tokenizer: Any) -> dict[str, Any]:
    """train.distill.init_embeddings: the teacher's token embeddings (V, D) projected onto their first d principal
    components (d the student's width; centred, so that no common offset is carried) become the student's (V, d).
    Same vocabulary required: row i must be the same token in both."""
    import torch
    from transformers import AutoTokenizer

    from pipeline.models import load_classifier

    key = "train.distill.init_embeddings"
    teacher_tokenizer = AutoTokenizer.from_pretrained(str(source.model_dir))
    if teacher_tokenizer.get_vocab() != tokenizer.get_vocab():
        raise ConfigError(
            f"{key}: the teacher's vocabulary ({len(teacher_tokenizer)} tokens) is not the student's "
            f"({len(tokenizer)}); use the teacher's tokenizer (tokenizer.name_or_path) or turn it off"
        )
    teacher = load_classifier(source.model_dir)
    table = teacher.get_input_embeddings().weight.detach().float()  # (V, D)
    target = student.encoder.embeddings.token.weight  # (V, d): the from-scratch encoder's token table
    if table.shape[0] != target.shape[0]:
        raise ConfigError(f"{key}: the teacher has {table.shape[0]} token embeddings, the student {target.shape[0]}")
    width = min(table.shape[1], target.shape[1])
    centred = table - table.mean(dim=0, keepdim=True)
    _, _, components = torch.linalg.svd(centred, full_matrices=False)  # (D, D), rows by variance
    projected = centred @ components[:width].T  # (V, width)
    with torch.no_grad():
        target[:, :width] = projected.to(target.dtype)
    explained = float((projected.var(dim=0).sum() / centred.var(dim=0).sum()).item())
    return {"from": str(source.model_dir), "dimensions": width, "variance_kept": explained}


def check_teacher(source: ModelSource, labels: list[str], data: DataConfig) -> None:
    """Before any tokenizing or training: the teacher must be single-label, its classes (its config.json) the
    data's, and its texts built as the data's are (its run's data.text_columns, text_separator, unescape_newlines)."""
    config = teacher_config(source)
    check_single_label(config, source.model_dir)
    check_labels(class_names(config), labels, source.model_dir)
    check_reading(source, TextSpec.from_data_config(data))
