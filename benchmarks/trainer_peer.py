"""The Hugging Face Trainer fine-tuning AG News, stock or tuned, as a yardstick for our pipeline's training speed.

    python benchmarks/trainer_peer.py --max-train-samples 5000          # the benchmark (a few minutes on 2 CPUs)
    python benchmarks/trainer_peer.py --max-steps 5                     # smoke run
    python benchmarks/trainer_peer.py --max-train-samples 5000 --eval   # also test accuracy on test.csv
    python benchmarks/trainer_peer.py --max-train-samples 5000 --eval --tuned   # the tuned recipe

Stock (the default) does what transformers' text-classification example does with `--pad_to_max_length`: tokenize
everything to a fixed 128 tokens, BertForSequenceClassification, `transformers.Trainer` with bf16 autocast on the
CPU, one epoch at batch size 32. Nothing is tuned. `--mixed-precision auto` gives the Trainer what an expert would
set on this machine: bf16 where the CPU runs it natively, full precision where bf16 would only be emulated (many
times slower), by the same rule as our pipeline's `train.mixed_precision: auto` (pipeline.common.hardware). `--tuned` is what an expert Trainer user turns on, and differs
only there: texts are tokenized without padding (still truncated at 128), `DataCollatorWithPadding` pads each batch
to its longest row, and `train_sampling_strategy="group_by_length"` batches rows of similar length together. Same
model, learning rate, batch size, epochs, precision and seed. Where a GPU is visible the Trainer trains there, as our
pipeline does. The last line on stdout is one JSON object with the figures
(see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

# Set before transformers/datasets are imported: they read these once, at import time.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

import numpy as np
import pandas as pd
import torch
import transformers
from datasets import Dataset
from transformers import (
    BertForSequenceClassification,
    BertTokenizerFast,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    default_data_collator,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["class_index", "title", "description"]
NUM_LABELS = 4
MAX_LENGTH = 128
BATCH_SIZE = 32
SEED = 42


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--train-file",
        default="../shared/data/ag_news/train_20k.csv",
        help="AG News train CSV with a header (class_index,title,description); relative to the repo root",
    )
    parser.add_argument(
        "--test-file",
        default="../shared/data/ag_news/test.csv",
        help="AG News test CSV without a header, same columns; relative to the repo root (read only with --eval)",
    )
    parser.add_argument(
        "--model-dir",
        default="../shared/models/minilm-l6-h384-uncased",
        help="local pretrained BERT (tokenizer and weights); relative to the repo root",
    )
    parser.add_argument("--max-train-samples", type=int, default=5000, help="train rows to use (default 5000)")
    parser.add_argument(
        "--selection",
        choices=["shuffled", "first"],
        default="shuffled",
        help=(
            "which train rows: 'shuffled' = the first N after a seeded shuffle of the file, 'first' = the first N "
            "lines as they are; train_20k.csv is sorted by class, so 'first' trains on one class only "
            "(same throughput, useless accuracy)"
        ),
    )
    parser.add_argument("--learning-rate", type=float, default=5e-5, help="AdamW peak learning rate (default 5e-5)")
    parser.add_argument(
        "--tuned",
        action="store_true",
        help=(
            "the tuned recipe: no padding at tokenization, DataCollatorWithPadding (each batch padded to its longest "
            "row) and train_sampling_strategy='group_by_length'; everything else as stock"
        ),
    )
    parser.add_argument(
        "--max-steps", type=int, default=-1, help="stop after this many optimizer steps (smoke runs); -1 = one epoch"
    )
    parser.add_argument(
        "--mixed-precision",
        choices=["bf16", "fp16", "no", "auto"],
        default="bf16",
        help=(
            "Trainer's precision: bf16 autocast (default, the HF example's --bf16), full precision ('no'), or 'auto': "
            "bf16 where this CPU or GPU runs it natively, fp16 on an older GPU, else full precision "
            "(pipeline.common.hardware's rule)"
        ),
    )
    parser.add_argument("--eval", action="store_true", help="after training, report accuracy on the test file")
    parser.add_argument(
        "--max-test-samples", type=int, default=None, help="with --eval, score only the first N test rows"
    )
    return parser.parse_args(argv)


def resolve(path: str) -> Path:
    """Relative paths are taken from the repo root, so the script runs the same from any working directory."""
    p = Path(path)
    return p if p.is_absolute() else (REPO_ROOT / p).resolve()


def to_text_and_label(frame: pd.DataFrame) -> pd.DataFrame:
    # No unescaping of the CSV's backslashes: the Hub's ag_news keeps them too, and stock means stock.
    text = frame["title"].fillna("").astype(str) + " " + frame["description"].fillna("").astype(str)
    return pd.DataFrame({"text": text, "label": frame["class_index"].astype(int) - 1})


def load_train(path: Path, max_rows: int, selection: str) -> pd.DataFrame:
    frame = pd.read_csv(path)
    # train_20k.csv is sorted by class: its first 5000 lines are all "World". A seeded shuffle stands in for the
    # Hub's already-shuffled ag_news, which the HF example simply takes the first N rows of.
    if selection == "shuffled":
        frame = frame.sample(frac=1.0, random_state=SEED)
    return to_text_and_label(frame.head(max_rows).reset_index(drop=True))


def load_test(path: Path, max_rows: int | None) -> pd.DataFrame:
    frame = pd.read_csv(path, header=None, names=COLUMNS, nrows=max_rows)
    return to_text_and_label(frame)


def tokenize(frame: pd.DataFrame, tokenizer: BertTokenizerFast, tuned: bool) -> Dataset:
    """Stock: fixed-length padding, as the HF example does with --pad_to_max_length (its default). Tuned: no padding
    here (DataCollatorWithPadding pads each batch); both truncate at MAX_LENGTH."""
    padding = False if tuned else "max_length"

    def encode(batch: dict) -> dict:
        return tokenizer(batch["text"], padding=padding, max_length=MAX_LENGTH, truncation=True)

    dataset = Dataset.from_pandas(frame, preserve_index=False)
    return dataset.map(encode, batched=True, remove_columns=["text"])


def resolve_precision(setting: str) -> str:
    """'bf16', 'fp16' or 'no' for TrainingArguments; 'auto' asks the rule our pipeline's train.mixed_precision uses,
    on the device the Trainer picks (a GPU when one is visible)."""
    if setting != "auto":
        return setting
    from pipeline.common.hardware import resolve_mixed_precision

    return resolve_mixed_precision("auto", use_cuda=torch.cuda.is_available())


def training_arguments(
    output_dir: str, learning_rate: float, max_steps: int, tuned: bool, precision: str
) -> TrainingArguments:
    # transformers 5 spells length grouping train_sampling_strategy="group_by_length" (4.x: group_by_length=True).
    # It also length-groups the evaluation sampler, so predict() returns rows out of order: see accuracy().
    return TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=BATCH_SIZE,
        per_device_eval_batch_size=BATCH_SIZE,
        num_train_epochs=1,
        max_steps=max_steps,
        learning_rate=learning_rate,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=not torch.cuda.is_available(),  # the GPU when one is visible, as our pipeline trains
        seed=SEED,
        logging_steps=50,
        save_strategy="no",
        eval_strategy="no",
        report_to=[],
        dataloader_num_workers=0,
        train_sampling_strategy="group_by_length" if tuned else "random",
    )


def rows_trained(num_rows: int, max_steps: int) -> int:
    """Rows actually fed to the model: one epoch, or max_steps batches (cycling epochs) when that is set."""
    if max_steps <= 0:
        return num_rows
    batches_per_epoch = math.ceil(num_rows / BATCH_SIZE)
    full_epochs, extra_batches = divmod(max_steps, batches_per_epoch)
    return full_epochs * num_rows + min(extra_batches * BATCH_SIZE, num_rows)


def accuracy(trainer: Trainer, dataset: Dataset) -> tuple[float, float]:
    """Scored against the label_ids predict() returns, never the dataset's order: under group_by_length the
    evaluation sampler shuffles the rows."""
    start = time.perf_counter()
    output = trainer.predict(dataset)
    seconds = time.perf_counter() - start
    predicted = np.argmax(output.predictions, axis=-1)
    return float((predicted == output.label_ids).mean()), seconds


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    precision = resolve_precision(args.mixed_precision)
    model_dir = str(resolve(args.model_dir))
    tokenizer = BertTokenizerFast.from_pretrained(model_dir)
    train_frame = load_train(resolve(args.train_file), args.max_train_samples, args.selection)
    train_dataset = tokenize(train_frame, tokenizer, args.tuned)

    transformers.set_seed(SEED)
    model = BertForSequenceClassification.from_pretrained(model_dir, num_labels=NUM_LABELS)
    # Nothing is saved (save_strategy="no"), but Trainer insists on an output_dir; keep it out of the repo.
    output_dir = str(Path(tempfile.gettempdir()) / "trainer_peer")
    trainer = Trainer(
        model=model,
        args=training_arguments(output_dir, args.learning_rate, args.max_steps, args.tuned, precision),
        train_dataset=train_dataset,
        processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer) if args.tuned else default_data_collator,
    )

    start = time.perf_counter()
    train_output = trainer.train()
    train_seconds = time.perf_counter() - start
    rows = rows_trained(len(train_dataset), args.max_steps)

    result = {
        "recipe": "hf_trainer_tuned" if args.tuned else "hf_trainer",
        "train_rows": rows,
        "train_steps": train_output.global_step,
        "train_seconds": round(train_seconds, 3),
        "train_samples_per_second": round(rows / train_seconds, 3),
        "trainer_train_samples_per_second": train_output.metrics.get("train_samples_per_second"),
        "train_loss": round(train_output.training_loss, 4),
        "max_length": MAX_LENGTH,
        "padding": "dynamic" if args.tuned else "max_length",
        "train_sampling_strategy": trainer.args.train_sampling_strategy,
        "batch_size": BATCH_SIZE,
        "learning_rate": args.learning_rate,
        "mixed_precision": precision,
        "selection": args.selection,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    if args.eval:
        test_dataset = tokenize(load_test(resolve(args.test_file), args.max_test_samples), tokenizer, args.tuned)
        test_accuracy, eval_seconds = accuracy(trainer, test_dataset)
        result.update(
            test_rows=len(test_dataset), test_accuracy=round(test_accuracy, 4), eval_seconds=round(eval_seconds, 3)
        )

    # The one line compare_training.py reads: everything above it is Trainer's own logging.
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
