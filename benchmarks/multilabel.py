"""Multi-label AG News: MiniLM and the from-scratch encoder against one-vs-rest TF-IDF + logistic regression, and
`transformers.pipeline` against `pipeline.predict` on each saved model.

    python benchmarks/multilabel.py --out /tmp/multilabel          # the task, both runs, the checks (~10 min, 2 cores)
    python benchmarks/multilabel.py --write-only /tmp/multilabel   # only the JSON Lines files

The task: documents made of AG News rows. With probability --pair-share a document is two rows of different classes
joined (each row's title and description) and carries both classes; otherwise it is one row with its one class.
Train and validation documents come from disjoint rows of train_20k.csv, test documents from test.csv. Each file is
JSON Lines, {"text": ..., "labels": [...]}.

Each model trains as a fresh subprocess, `python -m pipeline.finetune --config <config> data.task=multi_label ...`
(configs/ag_news_minilm.yaml, configs/ag_news_encoder_local.yaml); its metrics.json gives test micro-F1 and the
run's TF-IDF baseline, fitted on the same train split (one logistic regression per class). Then the run's test texts
are labelled twice: by `python -m pipeline.predict --precision fp32 --backend torch` (its `labels` column) and by
`transformers.pipeline("text-classification", top_k=None)` with the run's thresholds (model/decision.json); the
label sets must be the same. The last stdout line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from runs import REPO_ROOT, finetune_run, offline_env

from pipeline.run.directory import RunDir, read_decision
from pipeline.run.record import Baseline

SHARED = REPO_ROOT.parent / "shared" / "data" / "ag_news"
CLASSES = ("World", "Sports", "Business", "Sci/Tech")  # class_index 1-4
MODELS = {"minilm": "configs/ag_news_minilm.yaml", "encoder": "configs/ag_news_encoder_local.yaml"}
SEPARATOR = "|"  # pipeline.predict joins a label set with data.label_separator's default


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-file", default=str(SHARED / "train_20k.csv"))
    parser.add_argument("--test-file", default=str(SHARED / "test.csv"))
    parser.add_argument("--train-docs", type=int, default=12000)
    parser.add_argument("--validation-docs", type=int, default=800)
    parser.add_argument("--test-docs", type=int, default=3000)
    parser.add_argument("--pair-share", type=float, default=0.5, help="share of documents made of two rows")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    parser.add_argument("--out", default=None, help="folder for the files and runs (default: a new temp dir)")
    parser.add_argument("--write-only", metavar="DIR", default=None, help="write the JSON Lines files and stop")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="extra config override for every run"
    )
    return parser.parse_args(argv)


def read_rows(path: Path) -> list[tuple[str, str]]:
    """(text, class name) per row of an AG News CSV (class_index, title, description; a header row skipped)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            (f"{title} {description}", CLASSES[int(index) - 1])
            for index, title, description in csv.reader(handle)
            if index != "class_index"
        ]


def documents(rows: list[tuple[str, str]], count: int, pair_share: float, rng: np.random.Generator) -> list[dict]:
    """`count` documents from `rows` (each row used once): one row, or two rows of different classes."""
    pool = [rows[i] for i in rng.permutation(len(rows))]
    docs = []
    while len(docs) < count:
        if not pool:
            raise SystemExit(f"not enough rows for {count} documents; lower the document counts")
        text, label = pool.pop()
        if rng.random() < pair_share:
            partner = next((i for i in range(len(pool) - 1, -1, -1) if pool[i][1] != label), None)
            if partner is not None:
                other_text, other_label = pool.pop(partner)
                docs.append({"text": f"{text} {other_text}", "labels": sorted({label, other_label})})
                continue
        docs.append({"text": text, "labels": [label]})
    return docs


def write_task(args: argparse.Namespace, folder: Path) -> dict[str, Path]:
    """train/validation/test JSON Lines files in `folder`."""
    rng = np.random.default_rng(args.seed)
    train_rows = read_rows(Path(args.train_file))
    train_and_validation = documents(train_rows, args.train_docs + args.validation_docs, args.pair_share, rng)
    splits = {
        "train": train_and_validation[: args.train_docs],
        "validation": train_and_validation[args.train_docs :],
        "test": documents(read_rows(Path(args.test_file)), args.test_docs, args.pair_share, rng),
    }
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, docs in splits.items():
        paths[name] = folder / f"{name}.jsonl"
        with open(paths[name], "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(doc) + "\n" for doc in docs)
        pairs = sum(len(doc["labels"]) == 2 for doc in docs)
        print(f"{paths[name]}: {len(docs)} documents, {pairs} of two rows", file=sys.stderr)
    return paths


def finetune(config: str, out: Path, name: str, files: dict[str, Path], overrides: list[str]) -> RunDir:
    task = ["data.task=multi_label", "data.file_format=jsonl", "data.column_names=null", "data.text_columns=[text]"]
    task += ["data.label_column=labels", "data.label_index_base=0", "data.max_train_samples=null"]
    task += [f"data.{split}_file={path}" for split, path in files.items()]
    return finetune_run(config, out, name, [*task, *overrides])


def predict_label_sets(run: RunDir, texts: list[str], out: Path) -> list[frozenset[str]]:
    """pipeline.predict's `labels` column, fp32 PyTorch (the engine transformers.pipeline runs)."""
    texts_file, output = out / "test_texts.jsonl", out / f"{run.path.name}_predictions.csv"
    texts_file.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts), encoding="utf-8")
    command = [sys.executable, "-m", "pipeline.predict", "--model", str(run.path), "--input", str(texts_file)]
    command += ["--output", str(output), "--precision", "fp32", "--backend", "torch"]
    subprocess.run(command, cwd=REPO_ROOT, env=offline_env(), check=True, stdout=sys.stderr)
    with open(output, newline="", encoding="utf-8") as handle:
        return [frozenset(filter(None, row["labels"].split(SEPARATOR))) for row in csv.DictReader(handle)]


def transformers_label_sets(run: RunDir, texts: list[str], max_length: int) -> list[frozenset[str]]:
    """transformers.pipeline's sigmoid scores per class, cut at the run's thresholds (0.5 each without any)."""
    import transformers

    import pipeline.models.encoder  # noqa: F401  (registers the from-scratch encoder with transformers' Auto classes)

    thresholds = (read_decision(run.model_dir) or {}).get("thresholds", {})
    classify = transformers.pipeline("text-classification", model=str(run.model_dir), device="cpu")
    outputs = classify(texts, top_k=None, truncation=True, max_length=max_length, batch_size=64)
    return [
        frozenset(entry["label"] for entry in scores if entry["score"] >= thresholds.get(entry["label"], 0.5))
        for scores in outputs
    ]


def check_model(name: str, args: argparse.Namespace, out: Path, files: dict[str, Path]) -> dict:
    run = finetune(MODELS[name], out, f"multilabel_{name}", files, args.override)
    record = run.read_record()
    test = [json.loads(line) for line in files["test"].read_text(encoding="utf-8").splitlines()]
    texts, gold = [doc["text"] for doc in test], [frozenset(doc["labels"]) for doc in test]
    ours = predict_label_sets(run, texts, out)
    theirs = transformers_label_sets(run, texts, record.tokenization.max_length)
    baseline = record.baseline or Baseline()
    return {
        "micro_f1": record.test.micro_f1,
        "macro_f1": record.test.macro_f1,
        "subset_accuracy": record.test.subset_accuracy,
        "baseline_micro_f1": baseline.micro_f1,
        "baseline_subset_accuracy": baseline.subset_accuracy,
        "beats_baseline": record.test.micro_f1
        >= (baseline.micro_f1 if baseline.micro_f1 is not None else float("inf")),
        "predict_subset_accuracy": float(np.mean([a == b for a, b in zip(ours, gold)])),
        "same_label_sets_as_transformers_pipeline": sum(a == b for a, b in zip(ours, theirs)),
        "test_rows": len(texts),
        "different": [
            {"row": row, "predict": sorted(a), "transformers": sorted(b)}
            for row, (a, b) in enumerate(zip(ours, theirs))
            if a != b
        ][:5],
        "train_seconds": record.timings.train_seconds,
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.write_only:
        write_task(args, Path(args.write_only))
        return
    out = Path(args.out or tempfile.mkdtemp(prefix="multilabel_"))
    files = write_task(args, out)
    figures = {name: check_model(name, args, out, files) for name in args.models}
    print(f"\n{'model':<8} {'micro-F1':>9} {'TF-IDF OvR':>11} {'subset acc':>11} {'same sets as transformers':>26}")
    for name, row in figures.items():
        same = f"{row['same_label_sets_as_transformers_pipeline']}/{row['test_rows']}"
        print(
            f"{name:<8} {row['micro_f1']:>9.4f} {row['baseline_micro_f1']:>11.4f} {row['subset_accuracy']:>11.4f} "
            f"{same:>26}"
        )
    passes = all(
        row["beats_baseline"] and row["same_label_sets_as_transformers_pipeline"] == row["test_rows"]
        for row in figures.values()
    )
    print(f"micro-F1 >= the TF-IDF one-vs-rest baseline's and identical label sets: {'PASS' if passes else 'FAIL'}")
    print(json.dumps({"out": str(out), "figures": figures, "passes": passes, "args": vars(args)}, default=str))


if __name__ == "__main__":
    main()
