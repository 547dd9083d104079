"""Batches for training and evaluation, built from the fixed-length tensors of stage 2.

Rows stay padded to one fixed length on disk; per batch, trailing columns that are padding in every row are
dropped. That is exact (padded keys are masked out of attention and positions are absolute) and saves most of
the compute on short texts, especially when batches group rows of similar length.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import numpy as np
import torch
from datasets import Dataset
from torch.utils.data import DataLoader, Sampler

from pipeline.data.splits import MULTI_LABEL_COLUMN, column_values, label_column
from pipeline.text.lengths import padded_width, sorted_batches
from pipeline.text.windows import SEGMENT_IDS

# Pools of this many batches are sorted by length before being cut into batches (as HF's LengthGroupedSampler).
LENGTH_POOL_BATCHES = 50
# A batch's tensors that the model's forward takes (segment ids only for sentence pairs; BERT reads absent ones as 0).
MODEL_INPUTS = ("input_ids", "attention_mask", SEGMENT_IDS)


class TokenizedRows(torch.utils.data.Dataset):
    """A tokenized split held as tensors; a whole batch is fetched with one indexing operation."""

    def __init__(self, split: Dataset, teacher_logits: np.ndarray | None = None):
        labels = label_column(split.column_names)
        self.multi_label = labels == MULTI_LABEL_COLUMN
        columns = split.with_format("numpy", columns=["input_ids", "attention_mask", labels, "length"])[:]
        self.input_ids = torch.from_numpy(np.asarray(columns["input_ids"], dtype=np.int32))  # (N, T)
        self.attention_mask = torch.from_numpy(np.asarray(columns["attention_mask"], dtype=np.int8))  # (N, T)
        # Sentence pairs only: each token's segment; None for single texts (all 0).
        self.token_type_ids = None
        if SEGMENT_IDS in split.column_names:
            types = split.with_format("numpy", columns=[SEGMENT_IDS])[:][SEGMENT_IDS]
            self.token_type_ids = torch.from_numpy(np.asarray(types, dtype=np.int8))  # (N, T)
        label_type = np.float32 if self.multi_label else np.int64
        self.labels = torch.from_numpy(np.asarray(columns[labels], dtype=label_type))  # (N,) or (N, C)
        self.lengths = np.asarray(columns["length"], dtype=np.int64)  # (N,)
        self.row_index = torch.arange(len(self.labels))  # (N,) lets distributed evaluation restore row order
        # Distillation: the teacher's logits for each row (N, C), carried into batches.
        self.teacher_logits = None if teacher_logits is None else torch.as_tensor(teacher_logits, dtype=torch.float32)
        if self.teacher_logits is not None and self.teacher_logits.shape[0] != len(self.labels):
            raise ValueError(f"{self.teacher_logits.shape[0]} teacher logit rows for {len(self.labels)} rows")
        # Chunked long texts: the document each row (window) belongs to.
        self.documents = (
            np.asarray(column_values(split, "document"), dtype=np.int64) if "document" in split.column_names else None
        )

    @property
    def num_documents(self) -> int:
        return len(self.labels) if self.documents is None else int(self.documents.max()) + 1

    def document_labels(self) -> np.ndarray:
        """(D,) each document's label (multi-label: (D, C)): that of its first window (all its windows carry it)."""
        if self.documents is None:
            return self.labels.numpy()
        first = np.unique(self.documents, return_index=True)[1]
        return self.labels.numpy()[first]

    def subset(self, indices: np.ndarray) -> TokenizedRows:
        """The rows at `indices` (increasing) as rows of their own: documents renumbered 0..D'-1 in order."""
        index = torch.as_tensor(indices, dtype=torch.long)
        part = copy.copy(self)
        for name in ("input_ids", "attention_mask", "token_type_ids", "labels", "teacher_logits"):
            if getattr(self, name) is not None:
                setattr(part, name, getattr(self, name)[index])
        part.lengths = self.lengths[indices]
        part.row_index = torch.arange(len(indices))
        if self.documents is not None:
            part.documents = np.unique(self.documents[indices], return_inverse=True)[1].astype(np.int64)
        return part

    def __len__(self) -> int:
        return len(self.labels)

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        index = torch.as_tensor(indices, dtype=torch.long)
        batch = {
            "input_ids": self.input_ids[index],
            "attention_mask": self.attention_mask[index],
            "labels": self.labels[index],
            "row_index": self.row_index[index],
        }
        if self.token_type_ids is not None:
            batch[SEGMENT_IDS] = self.token_type_ids[index]
        if self.teacher_logits is not None:
            batch["teacher_logits"] = self.teacher_logits[index]  # (B, C)
        return batch

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {key: value[0] for key, value in self.__getitems__([index]).items()}


def collate_fixed(
    batch: dict[str, torch.Tensor] | list[dict[str, torch.Tensor]], trim: bool = False
) -> dict[str, torch.Tensor]:
    """A batch by column (single-item fetches, from a sampler that bypasses __getitems__, stacked first), its model
    inputs as int64; `trim`: (B, T) -> (B, T'), the trailing columns that are padding in every row dropped (T' rounded
    up to a multiple of 8)."""
    if isinstance(batch, list):
        batch = {key: torch.stack([row[key] for row in batch]) for key in batch[0]}
    keep = batch["input_ids"].shape[1]
    if trim:
        keep = padded_width(int(batch["attention_mask"].sum(dim=1).max()), keep)
    return {**batch, **{name: batch[name][:, :keep].long() for name in MODEL_INPUTS if name in batch}}


def collate_trimmed(batch: dict[str, torch.Tensor] | list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return collate_fixed(batch, trim=True)


def model_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: batch[name] for name in MODEL_INPUTS if name in batch}


class ShuffledBatchSampler(Sampler[list[int]]):
    """Seeded random batches, a new order each epoch; optionally grouped by length.

    The order depends only on (seed, epoch), so a resumed run draws the same batches. The sampler forms the
    optimizer step's batch of `slices` (accumulation x processes) x batch_size rows, as one process would, and
    yields it as `slices` consecutive slices: any split over micro-batches and processes trains on the same rows.
    """

    def __init__(self, lengths: np.ndarray, batch_size: int, seed: int, group_by_length: bool, slices: int = 1):
        self.lengths = lengths
        self.rows_per_slice = batch_size
        # What accelerate shards by: None ("varying size") hands a short last step's slices out as they are.
        self.batch_size = batch_size if slices == 1 else None
        self.seed = seed
        self.group_by_length = group_by_length
        self.slices = slices
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        step_rows = self.rows_per_slice * self.slices
        full, rest = divmod(len(self.lengths), step_rows)
        return full * self.slices + min(rest, self.slices)

    def batches(self) -> list[list[int]]:
        step_batches = self._step_batches(self.rows_per_slice * self.slices)
        if self.slices == 1:
            return step_batches
        # A short last step batch is cut into as many non-empty slices as it can fill.
        return [
            part.tolist()
            for batch in step_batches
            for part in np.array_split(np.asarray(batch), self.slices)
            if len(part)
        ]

    def _step_batches(self, batch_size: int) -> list[list[int]]:
        generator = np.random.default_rng([self.seed, self.epoch])
        order = generator.permutation(len(self.lengths))
        if not self.group_by_length:
            return [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
        pool_size = batch_size * LENGTH_POOL_BATCHES
        batches = []
        for start in range(0, len(order), pool_size):
            pool = order[start : start + pool_size]
            pool = pool[np.argsort(-self.lengths[pool], kind="stable")]
            batches.extend(pool[i : i + batch_size].tolist() for i in range(0, len(pool), batch_size))
        # A partial batch can only be the very last one, so that every optimizer window but the last is full.
        full = [batch for batch in batches if len(batch) == batch_size]
        partial = [batch for batch in batches if len(batch) < batch_size]
        shuffled = [full[i] for i in generator.permutation(len(full))]
        return shuffled + partial

    def __iter__(self) -> Iterator[list[int]]:
        yield from self.batches()


def _loader(rows: TokenizedRows, batches: Sampler[list[int]], trim: bool, seed: int) -> DataLoader:
    """A DataLoader with a private generator: it draws a seed each time it is iterated, which from the global RNG would
    shift every later dropout mask, and a resumed run would no longer match an uninterrupted one."""
    collate = collate_trimmed if trim else collate_fixed
    return DataLoader(rows, batch_sampler=batches, collate_fn=collate, generator=torch.Generator().manual_seed(seed))


def training_loader(
    rows: TokenizedRows, batch_size: int, seed: int, group_by_length: bool, trim: bool, slices: int = 1
) -> DataLoader:
    """`slices`: micro-batches per optimizer step over all processes (accumulation steps x processes)."""
    return _loader(rows, ShuffledBatchSampler(rows.lengths, batch_size, seed, group_by_length, slices), trim, seed)


def evaluation_loader(
    rows: TokenizedRows, batch_size: int, trim: bool = True, max_tokens: int | None = None
) -> DataLoader:
    """Longest rows first, so each batch is padded only to its own length and memory peaks at the start. With
    `max_tokens`, a batch holds at most that many tokens (rows x padded width), and at most `batch_size` rows."""
    order = np.argsort(-rows.lengths, kind="stable") if trim else np.arange(len(rows))
    budget = max_tokens if trim else None  # untrimmed rows all have the fixed length
    cuts = sorted_batches(rows.lengths[order], rows.input_ids.shape[1], batch_size, budget)
    # Batches of varying size (a token budget): accelerate then hands each process whole batches (batch_size None).
    return _loader(
        rows, FixedBatches([order[cut].tolist() for cut in cuts], batch_size if budget is None else None), trim, 0
    )


class FixedBatches(Sampler[list[int]]):
    """A precomputed list of batches; `batch_size` tells accelerate how to shard it across processes (None: batches
    of varying size, each handed to a process whole)."""

    def __init__(self, batches: list[list[int]], batch_size: int | None):
        self.batches = batches
        self.batch_size = batch_size
        self.drop_last = False

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[int]]:
        yield from self.batches
