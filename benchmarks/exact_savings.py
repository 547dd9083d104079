"""What the two exact savings of issue 16 buy, each against its absence, back to back in one process.

    python benchmarks/exact_savings.py                  # MiniLM, 40 training steps and 2,000 test rows, 3 rounds
    python benchmarks/exact_savings.py --rounds 1 --steps 10 --rows 256     # smoke run

1. `model.last_layer_cls_only`: the last encoder layer computes only the [CLS] token (pipeline/models/cls_only.py).
   Training steps (forward, cross-entropy, backward, fused AdamW, fast dropout, as in pipeline.train.loop) on the same
   length-grouped batches of 32 AG News rows, and scoring test rows longest first, with the full last layer and with
   the restricted one. Also checks that both give the same logits.
2. `eval.max_batch_tokens`: scoring the same test rows (restricted model) in batches of 128 rows whatever their
   length, against batches of at most 4,096 tokens (pipeline.text.lengths.sorted_batches).

Each measurement alternates its two sides over `--rounds` rounds (the order flips every round) and prints every
round and the median ratio. The precision is the pipeline's own choice for this CPU (bf16 autocast in training and a
bf16 copy of the weights in scoring where the CPU has native bf16, else fp32). The last stdout line is JSON. Compare
the lines of one invocation only, on an idle machine.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from pipeline.common.hardware import cpu_supports_bf16
from pipeline.config.schema import MAX_BATCH_TOKENS
from pipeline.models.cls_only import restrict_last_layer_to_cls
from pipeline.text.lengths import padded_width, sorted_batches
from pipeline.train.dropout import use_fast_dropout

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
BATCH_SIZE, EVAL_ROWS_PER_BATCH, MAX_LENGTH = 32, 128, 128


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(SHARED / "models/minilm-l6-h384-uncased"))
    parser.add_argument("--train-file", default=str(SHARED / "data/ag_news/train_20k.csv"))
    parser.add_argument("--test-file", default=str(SHARED / "data/ag_news/test.csv"))
    parser.add_argument("--steps", type=int, default=40, help="timed training steps per side and round (default 40)")
    parser.add_argument("--rows", type=int, default=2000, help="test rows scored per side and round (default 2000)")
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args(argv)


def read_texts(path: str) -> tuple[list[str], list[int]]:
    """AG News rows (class_index, title, description); a header row, where there is one, is skipped."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row and row[0].strip().isdigit()]
    return [f"{title} {description}" for _, title, description in rows], [int(row[0]) - 1 for row in rows]


def encode(tokenizer, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
    ids = tokenizer(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"]
    return ids, np.array([len(row) for row in ids])


def pad(ids: list[list[int]], lengths: np.ndarray, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids and mask, T the batch's longest row rounded up as the pipeline pads it."""
    width = padded_width(int(lengths[rows].max()), MAX_LENGTH)
    input_ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for position, row in enumerate(rows):
        input_ids[position, : lengths[row]] = torch.tensor(ids[row])
        mask[position, : lengths[row]] = 1
    return input_ids, mask


def training_batches(tokenizer, args: argparse.Namespace) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Length-grouped batches of random train rows: one pool sorted by length, cut into batches, shuffled."""
    texts, labels = read_texts(args.train_file)
    rng = np.random.default_rng(0)
    chosen = rng.choice(len(texts), size=(args.steps + 2) * BATCH_SIZE, replace=False)
    ids, lengths = encode(tokenizer, [texts[i] for i in chosen])
    order = np.argsort(lengths, kind="stable").reshape(-1, BATCH_SIZE)
    rng.shuffle(order)
    gold = torch.tensor([labels[i] for i in chosen])
    return [(*pad(ids, lengths, rows), gold[rows]) for rows in order]


def scoring_batches(tokenizer, args: argparse.Namespace, max_tokens: int | None) -> list[tuple[torch.Tensor, ...]]:
    texts, _ = read_texts(args.test_file)
    ids, lengths = encode(tokenizer, texts[: args.rows])
    order = np.argsort(-lengths, kind="stable")
    cuts = sorted_batches(lengths[order], MAX_LENGTH, EVAL_ROWS_PER_BATCH, max_tokens)
    return [pad(ids, lengths, order[cut]) for cut in cuts]


def train_rate(model, optimizer, batches, bf16: bool) -> float:
    """Rows per second over the batches (after two untimed ones)."""
    rows, start = 0, None
    for number, (input_ids, mask, labels) in enumerate(batches):
        if number == 2:
            start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=input_ids, attention_mask=mask).logits
        F.cross_entropy(logits.float(), labels).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        rows += len(labels) if number >= 2 else 0
    return rows / (time.perf_counter() - start)


@torch.inference_mode()
def score_rate(model, batches) -> tuple[float, torch.Tensor]:
    model(input_ids=batches[-1][0], attention_mask=batches[-1][1])  # warm-up
    start = time.perf_counter()
    logits = [model(input_ids=input_ids, attention_mask=mask).logits.float() for input_ids, mask in batches]
    rows = sum(len(batch[0]) for batch in batches)
    return rows / (time.perf_counter() - start), torch.cat(logits)


def alternate(name: str, sides: dict, rounds: int) -> dict:
    """Run each side's measurement `rounds` times, flipping the order every round; print and return the rates."""
    rates = {side: [] for side in sides}
    for number in range(rounds):
        for side in list(sides) if number % 2 == 0 else list(sides)[::-1]:
            rates[side].append(sides[side]())
        print(f"{name}, round {number + 1}: " + ", ".join(f"{side} {rates[side][-1]:.1f}" for side in sides))
    first, second = list(sides)
    ratio = statistics.median(rates[second]) / statistics.median(rates[first])
    print(f"{name}: {second} / {first} = {ratio:.2f}x (medians)\n", flush=True)
    return {"rates": rates, "ratio": round(ratio, 3)}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    bf16 = cpu_supports_bf16()
    print(f"precision: {'bf16' if bf16 else 'fp32'}; {torch.get_num_threads()} threads\n")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    torch.manual_seed(0)
    full = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=4)
    restricted = copy.deepcopy(full)
    assert restrict_last_layer_to_cls(restricted), "the model's last layer could not be restricted"
    figures: dict = {"precision": "bf16" if bf16 else "fp32"}

    trainers = {}
    for name, model in (("full last layer", copy.deepcopy(full)), ("cls-only last layer", copy.deepcopy(restricted))):
        use_fast_dropout(model)
        trainers[name] = (model.train(), torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True))
    batches = training_batches(tokenizer, args)
    figures["train_samples_per_second"] = alternate(
        "training samples/s",
        {name: (lambda m=m, o=o: train_rate(m, o, batches, bf16)) for name, (m, o) in trainers.items()},
        args.rounds,
    )

    scorers = {"full last layer": full.eval(), "cls-only last layer": restricted.eval()}
    if bf16:  # the pipeline scores a bf16 copy of the weights on such a CPU
        scorers = {name: copy.deepcopy(model).to(torch.bfloat16) for name, model in scorers.items()}
    by_rows = scoring_batches(tokenizer, args, None)
    by_tokens = scoring_batches(tokenizer, args, MAX_BATCH_TOKENS)
    logits = {name: score_rate(model, by_rows)[1] for name, model in scorers.items()}
    difference = (logits["full last layer"] - logits["cls-only last layer"]).abs().max().item()
    print(f"largest logit difference, full against cls-only last layer: {difference:.2e}\n")
    figures["max_logit_difference"] = difference
    figures["score_rows_per_second"] = alternate(
        f"scoring rows/s ({EVAL_ROWS_PER_BATCH}-row batches)",
        {name: (lambda m=m: score_rate(m, by_rows)[0]) for name, m in scorers.items()},
        args.rounds,
    )
    restricted_scorer = scorers["cls-only last layer"]
    figures["batching_rows_per_second"] = alternate(
        "scoring rows/s, cls-only last layer",
        {
            f"{EVAL_ROWS_PER_BATCH}-row batches": lambda: score_rate(restricted_scorer, by_rows)[0],
            f"{MAX_BATCH_TOKENS}-token batches": lambda: score_rate(restricted_scorer, by_tokens)[0],
        },
        args.rounds,
    )
    with contextlib.suppress(OSError):
        figures["load_average"] = os.getloadavg()
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
