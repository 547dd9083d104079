"""Training-step speed of MiniLM on the CPU under the levers the issue "Ahead of the tuned Trainer" names, each
against plain bf16 autocast, back to back in one process on the same batches.

    python benchmarks/training_levers.py                      # every lever, 40 batches of 32 AG News rows
    python benchmarks/training_levers.py --levers autocast,copy --batches 20

Each lever trains a fresh copy of the model (same seed) for `--batches` steps of `--batch-size` rows from the
shared AG News train file, padded to a multiple of 8 (the loop's own padding), after `--warmup` steps that are not
timed; a step is forward, cross-entropy, backward, gradient clipping and a fused AdamW step, as in
pipeline.train.loop. Levers:

- autocast: the loop as it is (fp32 weights, bf16 autocast): the reference.
- copy: a bf16 copy of the weights runs forward and backward; its gradients go to fp32 master weights, AdamW steps
  those, and the copy is refreshed from them (mixed precision without per-op weight casts).
- fast_dropout: dropout masks from int32 random numbers against a threshold instead of `bernoulli_` (the same
  keep probability to 2^-31; a profile of the loop put `bernoulli_` at a quarter of CPU time), attention in eager
  mode so that its dropout takes the same path.
- no_attention_dropout: attention-probability dropout 0, which lets SDPA run its fused CPU kernel in training (a
  change of recipe, measured to see what it would buy).
- frozen_embeddings: the word-embedding matrix (half of MiniLM's parameters) frozen, so that no dense gradient and
  no AdamW update of it runs (also a change of recipe).
- compile: torch.compile(dynamic=True) of the model; the compile time is printed apart.

Printed: samples/s per lever and its ratio to autocast; the last stdout line is JSON. Compare the lines of one
invocation only, on an idle machine.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
LEVERS = ("autocast", "copy", "fast_dropout", "no_attention_dropout", "frozen_embeddings", "compile")

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # input_ids (B, T), attention_mask (B, T), labels (B,)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(SHARED / "models/minilm-l6-h384-uncased"))
    parser.add_argument("--train-file", default=str(SHARED / "data/ag_news/train_20k.csv"))
    parser.add_argument("--levers", default=",".join(LEVERS), help=f"comma-separated, from {', '.join(LEVERS)}")
    parser.add_argument("--batches", type=int, default=40, help="timed steps per lever (default 40)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--batch-size", type=int, default=32)
    return parser.parse_args(argv)


def sample_ag_news(train_file: str, count: int) -> tuple[list[str], list[int]]:
    """`count` seeded random AG News rows (class_index,title,description): texts and 0-based labels."""
    with open(train_file, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row and row[0].strip().isdigit()]
    chosen = np.random.default_rng(0).choice(len(rows), size=count, replace=False)
    return [f"{rows[i][1]} {rows[i][2]}" for i in chosen], [int(rows[i][0]) - 1 for i in chosen]


def chosen_levers(text: str, known: tuple[str, ...]) -> list[str]:
    """--levers' comma-separated names, each one of `known`."""
    levers = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(levers) - set(known))
    if unknown:
        raise SystemExit(f"error: unknown lever(s) {', '.join(unknown)} (use {', '.join(known)})")
    return levers


def read_batches(args: argparse.Namespace, tokenizer) -> list[Batch]:
    """Random batches of AG News rows, each padded to a multiple of 8."""
    count = (args.batches + args.warmup) * args.batch_size
    texts, label_ids = sample_ag_news(args.train_file, count)
    labels = torch.tensor(label_ids)
    batches = []
    for start in range(0, count, args.batch_size):
        encoded = tokenizer(
            texts[start : start + args.batch_size],
            truncation=True,
            max_length=128,
            padding=True,
            pad_to_multiple_of=8,
            return_tensors="pt",
        )
        batches.append((encoded["input_ids"], encoded["attention_mask"], labels[start : start + args.batch_size]))
    return batches


class _ThresholdDropout(torch.autograd.Function):
    """Inverted dropout whose keep mask is int32 random numbers below round((1 - p) * 2^31)."""

    @staticmethod
    def forward(ctx, inputs: torch.Tensor, p: float) -> torch.Tensor:
        keep = torch.empty(inputs.shape, dtype=torch.int32).random_(0, 2**31) < round((1.0 - p) * 2**31)
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return torch.where(keep, inputs * ctx.scale, 0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (keep,) = ctx.saved_tensors
        return torch.where(keep, grad * ctx.scale, 0), None


def threshold_dropout(inputs: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _ThresholdDropout.apply(inputs, p) if training and p > 0 else inputs


def load_model(path: str, lever: str) -> torch.nn.Module:
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=4).train()
    if lever == "fast_dropout":
        model.set_attn_implementation("eager")  # its attention dropout calls nn.functional.dropout too
    if lever == "no_attention_dropout":
        for module in model.modules():
            if hasattr(module, "dropout") and type(module).__name__.endswith("SelfAttention"):
                module.dropout.p = 0.0
    if lever == "frozen_embeddings":
        model.get_input_embeddings().weight.requires_grad_(False)
    return model


def make_step(model: torch.nn.Module, lever: str) -> Callable[[Batch], float]:
    """One training step of `lever` on `model`: forward, loss, backward, clip, AdamW."""
    masters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(masters, lr=1e-4, fused=True)
    runner = model
    if lever == "copy":
        runner = copy.deepcopy(model).to(torch.bfloat16)
    if lever == "compile":
        runner = torch.compile(model, dynamic=True)
    copies = [p for p in runner.parameters() if p.requires_grad]

    def step(batch: Batch) -> float:
        input_ids, attention_mask, labels = batch
        if lever == "copy":
            logits = runner(input_ids=input_ids, attention_mask=attention_mask).logits  # (B, C) bf16
        else:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = runner(input_ids=input_ids, attention_mask=attention_mask).logits  # (B, C)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        if lever == "copy":
            for master, working in zip(masters, copies):
                master.grad, working.grad = working.grad.float(), None
        torch.nn.utils.clip_grad_norm_(masters, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if lever == "copy":
            with torch.no_grad():
                torch._foreach_copy_(copies, masters)
        return loss.item()

    return step


def measure(args: argparse.Namespace, lever: str, batches: list[Batch]) -> dict[str, float]:
    original_dropout = torch.nn.functional.dropout
    if lever == "fast_dropout":
        torch.nn.functional.dropout = threshold_dropout
    try:
        step = make_step(load_model(args.model, lever), lever)
        start = time.perf_counter()
        for batch in batches[: args.warmup]:
            step(batch)
        warmup_seconds = time.perf_counter() - start
        start = time.perf_counter()
        losses = [step(batch) for batch in batches[args.warmup :]]
        seconds = time.perf_counter() - start
    finally:
        torch.nn.functional.dropout = original_dropout
    samples = sum(len(batch[2]) for batch in batches[args.warmup :])
    return {
        "samples_per_second": samples / seconds,
        "warmup_seconds": warmup_seconds,
        "mean_loss": float(np.mean(losses)),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from transformers import AutoTokenizer

    levers = chosen_levers(args.levers, LEVERS)
    batches = read_batches(args, AutoTokenizer.from_pretrained(args.model))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}", file=sys.stderr
    )
    results = {}
    for lever in levers:
        results[lever] = measure(args, lever, batches)
        print(f"  {lever}: {results[lever]['samples_per_second']:.1f} samples/s", file=sys.stderr, flush=True)
    reference = results.get("autocast", {}).get("samples_per_second")
    print(f"\n{'lever':<22}{'samples/s':>10}{'vs autocast':>13}{'warm-up s':>11}")
    for lever, result in results.items():
        ratio = f"{result['samples_per_second'] / reference:.2f}x" if reference else "-"
        print(f"{lever:<22}{result['samples_per_second']:>10.1f}{ratio:>13}{result['warmup_seconds']:>11.1f}")
    print(json.dumps({"levers": results, "load_average": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
