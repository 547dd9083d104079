"""The teacher: a trained run or model folder, resolved and checked before any work, and its logits for lists of
texts, computed by the prediction path and cached under data.cache_dir, keyed by the teacher's and the texts' hashes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoTokenizer

from pipeline.common.hardware import resolve_device, resolve_inference_dtype
from pipeline.common.io import atomic_path
from pipeline.config.schema import ConfigError, DataConfig, DistillConfig
from pipeline.data.text import TextSpec
from pipeline.models import load_classifier
from pipeline.predict import ModelSource, PredictError, Predictor, resolve_model_source
from pipeline.run import directory as rundir
from pipeline.run.directory import RunDir, is_number
from pipeline.run.exports import ExportError, choose_export, file_sha256, read_export_record
from pipeline.run.model_config import class_names, is_multi_label
from pipeline.text.tokenization import texts_fingerprint

logger = logging.getLogger(__name__)

TEACHER_KEY = "train.distill.teacher"
# Bump when what the caches hold, or how they are keyed, changes: old entries are then ignored.
CACHE_FORMAT = 1
WEIGHT_FILE_PATTERNS = ("*.safetensors", "*.bin", "*.pt")


def resolve_teacher(distill: DistillConfig) -> ModelSource:
    """The teacher's folder as the prediction path resolves it; a path that is not a model is an error naming the key."""
    try:
        source = resolve_model_source(Path(distill.teacher).expanduser())
    except PredictError as error:
        raise ConfigError(f"{TEACHER_KEY}: {error}") from None
    if not weight_files(source.model_dir):
        raise ConfigError(f"{TEACHER_KEY}: {source.model_dir} holds a model config but no weights (model.safetensors)")
    return source


def weight_files(model_dir: Path) -> list[Path]:
    return sorted(path for pattern in WEIGHT_FILE_PATTERNS for path in Path(model_dir).glob(pattern))


def check_reading(source: ModelSource, student: TextSpec) -> None:
    """The teacher labels the texts as this run builds them: built otherwise (columns, separator), they are texts it
    was never trained to read. Column names may differ."""
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
    parts = [f"the data's {', '.join(missing)} not among the teacher's classes"] if missing else []
    parts += [f"the teacher's {', '.join(extra)} not in the data"] if extra else []
    detail = "; ".join(parts) or "the same classes in another order"
    raise ConfigError(
        f"{TEACHER_KEY}: the teacher's labels ({', '.join(teacher)}, from {where}) do not match the data's "
        f"({', '.join(student)}): {detail}; give data.label_names in the teacher's order, or another teacher"
    )


def teacher_test_accuracy(source: ModelSource) -> float | None:
    """The teacher run's own test accuracy (its metrics.json), when the teacher is a run directory."""
    if source.run_dir is None or not RunDir(source.run_dir).metrics_path.is_file():
        return None
    try:
        accuracy = RunDir(source.run_dir).read_record(require_test=False).test.accuracy
    except rundir.RunDirError:
        return None
    return float(accuracy) if is_number(accuracy) else None


def teacher_fingerprint(source: ModelSource) -> str:
    """A hash of what decides the teacher's logits: weights, config, tokenizer, fixed length, the precision it runs
    in here, and the verified export it runs instead when there is one (each gives slightly different logits)."""
    digest = hashlib.sha256(f"v{CACHE_FORMAT}|{source.max_length}|".encode())
    for path in [
        *weight_files(source.model_dir),
        source.model_dir / rundir.MODEL_CONFIG_FILE,
        *sorted(source.model_dir.glob("tokenizer*.json")),
        *sorted(source.model_dir.glob("vocab*")),
    ]:
        digest.update(f"|{path.name}|{file_sha256(path)}".encode())
    digest.update(str(resolve_inference_dtype("auto", resolve_device("auto"))).encode())
    digest.update(_export_identity(source).encode())
    return digest.hexdigest()


def _export_identity(source: ModelSource) -> str:
    """The backend `--backend auto` takes for the teacher here, with its file's recorded sha256 ("torch" without an
    export)."""
    try:
        choice = choose_export(source.run_dir, source.model_dir, "auto", resolve_device("auto").type)
        if choice.variant is None:
            return choice.backend
        recorded = read_export_record(source.run_dir)["variants"][choice.variant].get("sha256")
        return f"{choice.backend}|{recorded or file_sha256(choice.path)}"
    except ExportError:  # a damaged export: the predictor will say so when it loads
        return "torch"


class TeacherLabeller:
    """The teacher's logits for lists of texts: from the cache, else computed (the model loaded on the first miss)."""

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
            logger.info(f"Teacher logits for {len(texts)} texts loaded from cache {path}")
            return cached
        self.misses += 1
        predictor = self._predictor()
        tick = time.perf_counter()
        with tqdm(total=len(texts), desc="Teacher labelling", unit="row", dynamic_ncols=True) as progress:
            logits = predictor.logits(list(texts), on_batch=progress.update)
        seconds = time.perf_counter() - tick
        self.compute_seconds += seconds
        self.computed_rows += len(texts)
        rate = len(texts) / max(seconds, 1e-9)
        logger.info(f"Teacher labelled {len(texts)} texts in {seconds:.1f} s ({rate:.0f} rows/s); cached in {path}")
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
            logger.warning(f"Ignoring unreadable teacher-logit cache {path} ({error})")
            return None
        return logits if logits.shape == (rows, len(self.labels)) else None

    def _predictor(self) -> Predictor:
        if self.predictor is None:
            try:
                self.predictor = Predictor.from_source(self.source, batch_size=self.batch_size)
            except PredictError as error:
                raise ConfigError(f"{TEACHER_KEY}: {error}") from None
            check_labels(self.predictor.labels, self.labels, self.source.model_dir)
            logger.info(f"Teacher {self.source.model_dir}: {self.predictor.describe_backend()}")
        return self.predictor


def init_student_embeddings(student: Any, source: ModelSource, tokenizer: Any) -> dict[str, Any]:
    """train.distill.init_embeddings: the teacher's token embeddings (V, D) projected onto their first d principal
    components (d the student's width; centred, so that no common offset is carried) become the student's (V, d).
    Same vocabulary required: row i must be the same token in both."""
    key = "train.distill.init_embeddings"
    teacher_tokenizer = AutoTokenizer.from_pretrained(str(source.model_dir))
    if teacher_tokenizer.get_vocab() != tokenizer.get_vocab():
        raise ConfigError(
            f"{key}: the teacher's vocabulary ({len(teacher_tokenizer)} tokens) is not the student's ({len(tokenizer)}); use the teacher's tokenizer (tokenizer.name_or_path) or turn it off"
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
    """Before any tokenizing or training: the teacher must be single-label, with the data's classes and texts."""
    try:
        config = AutoConfig.from_pretrained(str(source.model_dir))
    except (OSError, ValueError, KeyError) as error:
        raise ConfigError(f"{TEACHER_KEY}: cannot read the model config in {source.model_dir} ({error})") from None
    # A multi-label teacher's logits are independent sigmoids: read as a softmax over the classes (the soft targets),
    # a class it scores high takes probability from the others, which it never meant.
    if is_multi_label(config):
        raise ConfigError(
            f"{TEACHER_KEY}: {source.model_dir} is a multi-label model (a sigmoid per class), but distillation's soft targets are a softmax over the classes; give a single-label teacher"
        )
    check_labels(class_names(config), labels, source.model_dir)
    check_reading(source, TextSpec.from_data_config(data))
