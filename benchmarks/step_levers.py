"""The training-step levers not yet measured: sequence packing, the optimizer step's implementation, and an update
of the word embedding over the rows a batch uses only. MiniLM on AG News, back to back in one process, same rows.

    python benchmarks/step_levers.py                        # every lever, 47 timed steps of 32 rows each
    python benchmarks/step_levers.py --levers padded,packed --steps 20

Rows are grouped by length as the loop groups them (a pool of LENGTH_POOL_BATCHES batches' rows sorted, cut into
batches of --batch-size, the batches shuffled; the default 3 + 47 steps are one pool) and padded to a multiple of 8. A step is forward, cross-entropy on the [CLS] vector through the pooler and the
classifier, backward, gradient clipping and the optimizer step, in fp32 (bf16 autocast with --bf16). Levers:

- padded: the loop's batches as they are, fused AdamW: the reference.
- packed: each batch's rows packed into windows of --window tokens (first fit, longest first), no padding between
  rows: a block-diagonal attention mask and positions counted from each row's start keep the rows apart (exact:
  the same logits as the rows alone, to float rounding; printed), each row classified from its own [CLS].
- foreach: AdamW with foreach=True instead of fused=True.
- sparse_embedding: the word embedding's gradient sparse (its rows seen in the batch only) and stepped by
  SparseAdam (lazy: unseen rows keep their moments and skip weight decay; not AdamW's semantics), fused AdamW for
  the rest.

Printed: samples/s per lever and its ratio to padded, the share of padding tokens in the padded and packed batches;
the last stdout line is JSON. Compare the lines of one invocation only, on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from training_levers import chosen_levers, sample_ag_news

from pipeline.text.batching import LENGTH_POOL_BATCHES

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
LEVERS = ("padded", "packed", "foreach", "sparse_embedding")


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, T) or, packed, (W, T): W windows
    attention_mask: torch.Tensor  # (B, T) padding mask, or (W, 1, T, T) block-diagonal
    position_ids: torch.Tensor | None  # (W, T) packed: counted from each row's start
    cls_index: torch.Tensor  # (B, 2): window and position of each row's [CLS]
    labels: torch.Tensor  # (B,)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(SHARED / "models/minilm-l6-h384-uncased"))
    parser.add_argument("--train-file", default=str(SHARED / "data/ag_news/train_20k.csv"))
    parser.add_argument("--levers", default=",".join(LEVERS), help=f"comma-separated, from {', '.join(LEVERS)}")
    parser.add_argument("--steps", type=int, default=47, help="timed steps per lever")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--window", type=int, default=128, help="packed window length in tokens")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (where the CPU has bf16 instructions)")
    return parser.parse_args(argv)


def read_rows(args: argparse.Namespace, tokenizer) -> list[tuple[list[int], int]]:
    """(token ids, label) of random AG News rows, truncated to --window tokens."""
    texts, labels = sample_ag_news(args.train_file, (args.steps + args.warmup) * args.batch_size)
    ids = tokenizer(texts, truncation=True, max_length=args.window)["input_ids"]
    return list(zip(ids, labels))


def length_grouped(rows: list[tuple[list[int], int]], batch_size: int) -> list[list[tuple[list[int], int]]]:
    pool = batch_size * LENGTH_POOL_BATCHES
    batches = []
    for first in range(0, len(rows), pool):
        ordered = sorted(rows[first : first + pool], key=lambda row: len(row[0]))
        batches += [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]
    order = np.random.default_rng(1).permutation(len(batches))
    return [batches[i] for i in order]


def padded_batch(rows: list[tuple[list[int], int]]) -> tuple[Batch, int]:
    """The loop's batch: rows padded to the longest, rounded up to a multiple of 8; and its padding tokens."""
    length = -(-max(len(ids) for ids, _ in rows) // 8) * 8
    input_ids = torch.zeros(len(rows), length, dtype=torch.long)  # (B, T)
    mask = torch.zeros(len(rows), length, dtype=torch.long)  # (B, T)
    for i, (ids, _) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        mask[i, : len(ids)] = 1
    cls_index = torch.stack([torch.arange(len(rows)), torch.zeros(len(rows), dtype=torch.long)], dim=1)
    labels = torch.tensor([label for _, label in rows])
    return Batch(input_ids, mask, None, cls_index, labels), int((mask == 0).sum())


def packed_batch(rows: list[tuple[list[int], int]], window: int) -> tuple[Batch, int]:
    """The same rows in windows of `window` tokens (first fit, longest first); and the padding tokens left."""
    windows: list[list[int]] = []  # row indices per window
    fill: list[int] = []
    for index in sorted(range(len(rows)), key=lambda i: -len(rows[i][0])):
        size = len(rows[index][0])
        target = next((w for w, used in enumerate(fill) if used + size <= window), None)
        if target is None:
            windows.append([])
            fill.append(0)
            target = len(windows) - 1
        windows[target].append(index)
        fill[target] += size
    length = -(-max(fill) // 8) * 8
    input_ids = torch.zeros(len(windows), length, dtype=torch.long)  # (W, T)
    positions = torch.zeros(len(windows), length, dtype=torch.long)  # (W, T)
    segment = torch.full((len(windows), length), -1, dtype=torch.long)  # (W, T): the row each token belongs to
    cls_index = torch.zeros(len(rows), 2, dtype=torch.long)
    for w, members in enumerate(windows):
        start = 0
        for index in members:
            ids = rows[index][0]
            input_ids[w, start : start + len(ids)] = torch.tensor(ids)
            positions[w, start : start + len(ids)] = torch.arange(len(ids))
            segment[w, start : start + len(ids)] = index
            cls_index[index] = torch.tensor([w, start])
            start += len(ids)
    # A token attends to its own row only; padding tokens to each other (their outputs are never read).
    mask = (segment[:, :, None] == segment[:, None, :])[:, None]  # (W, 1, T, T)
    labels = torch.tensor([label for _, label in rows])
    return Batch(input_ids, mask, positions, cls_index, labels), int((segment == -1).sum())


class Classifier(torch.nn.Module):
    """BertForSequenceClassification's parts, reading each row's [CLS] wherever it sits."""

    def __init__(self, path: str):
        super().__init__()
        from transformers import AutoModelForSequenceClassification
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=4, attn_implementation="sdpa")
        self.bert, self.dropout, self.classifier = model.bert, model.dropout, model.classifier

    def forward(self, batch: Batch) -> torch.Tensor:
        hidden = self.bert(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids
        ).last_hidden_state  # (W, T, H)
        cls = hidden[batch.cls_index[:, 0], batch.cls_index[:, 1]]  # (B, H)
        pooled = self.bert.pooler.activation(self.bert.pooler.dense(cls))  # (B, H)
        return self.classifier(self.dropout(pooled))  # (B, C)


def make_step(model: Classifier, lever: str, bf16: bool):
    embedding = model.bert.embeddings.word_embeddings
    if lever == "sparse_embedding":
        embedding.sparse = True
        rest = [p for p in model.parameters() if p is not embedding.weight]
        optimizers = [torch.optim.SparseAdam([embedding.weight], lr=1e-4), torch.optim.AdamW(rest, lr=1e-4, fused=True)]
    elif lever == "foreach":
        optimizers = [torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)]
    else:
        optimizers = [torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)]
    parameters = list(model.parameters())

    def step(batch: Batch) -> float:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(batch)  # (B, C)
        loss = torch.nn.functional.cross_entropy(logits.float(), batch.labels)
        loss.backward()
        if lever == "sparse_embedding":  # clip_grad_norm_ takes dense gradients only: the norm by hand
            norms = [p.grad.coalesce().values().norm() if p.grad.is_sparse else p.grad.norm() for p in parameters]
            scale = torch.clamp(1.0 / (torch.stack(norms).norm() + 1e-6), max=1.0)
            for p in parameters:
                p.grad.mul_(scale)
        else:
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def packing_is_exact(path: str, rows: list[tuple[list[int], int]], window: int) -> float:
    """The largest logit difference between rows scored packed and scored padded (eval mode, fp32)."""
    model = Classifier(path).eval()
    with torch.no_grad():
        packed = model(packed_batch(rows, window)[0])
        padded = model(padded_batch(rows)[0])
    return float((packed - padded).abs().max())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from transformers import AutoTokenizer

    levers = chosen_levers(args.levers, LEVERS)
    groups = length_grouped(read_rows(args, AutoTokenizer.from_pretrained(args.model)), args.batch_size)
    padded = [padded_batch(rows) for rows in groups]
    packed = [packed_batch(rows, args.window) for rows in groups]
    real = sum(len(ids) for rows in groups for ids, _ in rows)
    shares = {
        "padded": sum(pad for _, pad in padded) / (real + sum(pad for _, pad in padded)),
        "packed": sum(pad for _, pad in packed) / (real + sum(pad for _, pad in packed)),
    }
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}", file=sys.stderr
    )
    print(f"padding tokens: {shares['padded']:.1%} padded, {shares['packed']:.1%} packed", file=sys.stderr)
    print(f"packed vs padded logits: {packing_is_exact(args.model, groups[0], args.window):.2e}", file=sys.stderr)
    results = {}
    for lever in levers:
        batches = [batch for batch, _ in (packed if lever == "packed" else padded)]
        step = make_step(Classifier(args.model).train(), lever, args.bf16)
        for batch in batches[: args.warmup]:
            step(batch)
        start = time.perf_counter()
        losses = [step(batch) for batch in batches[args.warmup :]]
        seconds = time.perf_counter() - start
        samples = sum(len(batch.labels) for batch in batches[args.warmup :])
        results[lever] = {"samples_per_second": samples / seconds, "mean_loss": float(np.mean(losses))}
        print(f"  {lever}: {results[lever]['samples_per_second']:.1f} samples/s", file=sys.stderr, flush=True)
    reference = results.get("padded", {}).get("samples_per_second")
    print(f"\n{'lever':<18}{'samples/s':>10}{'vs padded':>11}{'mean loss':>11}")
    for lever, result in results.items():
        ratio = f"{result['samples_per_second'] / reference:.2f}x" if reference else "-"
        print(f"{lever:<18}{result['samples_per_second']:>10.1f}{ratio:>11}{result['mean_loss']:>11.4f}")
    print(json.dumps({"levers": results, "padding_share": shares, "load_average": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
