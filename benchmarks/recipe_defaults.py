"""The defaults a user of their own data meets, measured on three corpora of different shapes.

    python benchmarks/recipe_defaults.py --out /tmp/recipes            # every corpus and variant (about an hour)
    python benchmarks/recipe_defaults.py --out /tmp/recipes --corpora long --variants defaults chunk

Each corpus is written as one's own data would be: a train CSV and a test CSV with columns doc_id, topic, body and
string labels, built from ../shared AG News (train rows from train_20k.csv, test rows from test.csv, never shared):

- short: AG News rows as they are (about 45 tokens), balanced.
- long: the documents of long_documents.py (noise rows of random classes, then two rows of the document's class;
  about 230 tokens), balanced.
- imbalanced: every World and Sports row of a sample and a tenth of its Business and Sci/Tech rows (about 10:1),
  tested on balanced rows, so that macro-F1 shows the minority classes.

Every run is `python -m pipeline.finetune` on a config that names only the files, their columns and MiniLM: every
other setting is the schema's default (the run's `defaults` row). A variant changes one setting. The table prints,
per run: test accuracy and macro-F1 of what the run ships (the ensemble where `eval.ensemble: auto` kept it), the
model's own, the baseline's, validation's share of training time and the whole run's seconds. Results are appended
to <out>/results.jsonl as each run ends, so a stopped benchmark keeps what it measured; --table reprints them.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from pathlib import Path

from long_documents import AG_NEWS, LABELS, build_documents, read_rows
from runs import REPO_ROOT, finetune_run

MINILM = REPO_ROOT.parent / "shared" / "models" / "minilm-l6-h384-uncased"
CORPORA = ("short", "long", "imbalanced")
VARIANTS = {
    "defaults": [],
    "lr 1e-4": ["train.learning_rate=1e-4"],
    "lr 2e-5": ["train.learning_rate=2e-5"],
    "1 epoch": ["train.epochs=1"],
    "warm-up 0": ["train.warmup_ratio=0"],
    "chunk": ["tokenizer.long_text=chunk"],  # the long corpus only: a no-op where texts fit
}
ONLY_ON = {"chunk": ("long",)}


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["doc_id", "topic", "body"])
        writer.writerows([f"{path.stem}{i}", label, text] for i, (label, text) in enumerate(rows))
    return path


def balanced(rows: list[tuple[int, str]], count: int, rng: random.Random) -> list[tuple[str, str]]:
    by_class = [[text for label, text in rows if label == k] for k in range(len(LABELS))]
    picked = [(LABELS[k], text) for k, texts in enumerate(by_class) for text in rng.sample(texts, count // len(LABELS))]
    rng.shuffle(picked)
    return picked


def imbalanced(rows: list[tuple[int, str]], count: int, rng: random.Random) -> list[tuple[str, str]]:
    """`count` rows' worth of World and Sports, and a tenth as many of Business and Sci/Tech each."""
    share = {0: 1.0, 1: 1.0, 2: 0.1, 3: 0.1}
    sample = balanced(rows, count, rng)
    kept, seen = [], {label: 0 for label in LABELS}
    for label, text in sample:
        seen[label] += 1
        if seen[label] <= share[LABELS.index(label)] * count / len(LABELS):
            kept.append((label, text))
    return kept


def write_corpus(name: str, folder: Path, train_rows: int, test_rows: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    train_source = read_rows(AG_NEWS / "train_20k.csv", has_header=True)
    test_source = read_rows(AG_NEWS / "test.csv", has_header=False)
    if name == "long":
        train, test = build_documents(train_source, train_rows, rng), build_documents(test_source, test_rows, rng)
    elif name == "imbalanced":
        train, test = imbalanced(train_source, train_rows, rng), balanced(test_source, test_rows, rng)
    else:
        train, test = balanced(train_source, train_rows, rng), balanced(test_source, test_rows, rng)
    folder.mkdir(parents=True, exist_ok=True)
    return write_csv(folder / f"{name}_train.csv", train), write_csv(folder / f"{name}_test.csv", test)


def write_config(folder: Path, train: Path, test: Path) -> Path:
    """Own data by configuration alone: the files, their columns, the model; nothing else."""
    config = folder / f"{train.stem}.yaml"
    lines = ["data:", "  source: files", f"  train_file: {train}", f"  test_file: {test}", "  text_columns: [body]"]
    lines += ["  label_column: topic", "  id_column: doc_id", "tokenizer:", f"  name_or_path: {MINILM}"]
    lines += ["model:", f"  name_or_path: {MINILM}"]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def one_run(corpus: str, variant: str, config: Path, out: Path) -> dict:
    tick = time.perf_counter()
    name = f"{corpus}_{variant.replace(' ', '_')}"
    record = finetune_run(str(config), out / "runs", name, VARIANTS[variant]).read_record()
    ensemble = record.ensemble
    model = (ensemble.test or {}).get("model", {}) if ensemble else {}
    timings = record.timings
    return {
        "corpus": corpus,
        "variant": variant,
        "accuracy": record.test.accuracy,
        "macro_f1": record.test.macro_f1,
        "model_accuracy": model.get("accuracy", record.test.accuracy),
        "baseline_accuracy": record.baseline.accuracy if record.baseline else None,
        "ensemble_weight": ensemble.weight if ensemble and ensemble.kept else None,
        "validation_share": (timings.validation_seconds or 0.0) / timings.train_seconds,
        "epochs": record.training.epochs_completed,
        "max_length": record.tokenization.max_length,
        "seconds": time.perf_counter() - tick,
    }


def print_table(results: list[dict]) -> None:
    print("| corpus | variant | test acc | macro-F1 | model | baseline | ens. w | val. share | length | run s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        weight = "-" if r["ensemble_weight"] is None else f"{r['ensemble_weight']:.2f}"
        baseline = "-" if r["baseline_accuracy"] is None else f"{r['baseline_accuracy']:.4f}"
        print(
            f"| {r['corpus']} | {r['variant']} | {r['accuracy']:.4f} | {r['macro_f1']:.4f} | "
            f"{r['model_accuracy']:.4f} | {baseline} | {weight} | {r['validation_share']:.1%} | "
            f"{r['max_length']} | {r['seconds']:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="corpora, runs and results.jsonl go here")
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--train-rows", type=int, default=1200, help="train rows (the imbalanced corpus keeps fewer)")
    parser.add_argument("--test-rows", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table", action="store_true", help="only print the table of <out>/results.jsonl")
    args = parser.parse_args()
    results_file = args.out / "results.jsonl"
    if not args.table:
        args.out.mkdir(parents=True, exist_ok=True)
        for corpus in args.corpora:
            train, test = write_corpus(corpus, args.out / "corpora", args.train_rows, args.test_rows, args.seed)
            config = write_config(args.out / "corpora", train, test)
            for variant in args.variants:
                if corpus in ONLY_ON.get(variant, (corpus,)):
                    result = one_run(corpus, variant, config, args.out)
                    with open(results_file, "a", encoding="utf-8") as handle:
                        handle.write(json.dumps(result) + "\n")
                    print(json.dumps(result), file=sys.stderr, flush=True)
    print_table([json.loads(line) for line in results_file.read_text(encoding="utf-8").splitlines()])


if __name__ == "__main__":
    main()
