"""Long documents: head truncation against head+tail and chunking at the same fixed length, on one corpus.

    python benchmarks/long_documents.py                       # builds the corpus, runs the three recipes
    python benchmarks/long_documents.py --recipes head chunk --train-docs 2000

The corpus is built from ../shared AG News: each document is two or three news rows of random classes (the
noise a long e-mail thread or a page's boilerplate adds) followed by two rows of the document's own class, so
the decisive part usually lies past the first 128 tokens. Documents never share a source row across train and
test. Every recipe is `python -m pipeline.finetune --config configs/ag_news_minilm.yaml` with the corpus's data
settings and `tokenizer.max_length=128`, one process after another; the table prints test accuracy, macro-F1,
windows per document and the whole run's seconds.
"""

from __future__ import annotations

import argparse
import csv
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline.run.directory import RunDir

REPO_ROOT = Path(__file__).resolve().parents[1]
AG_NEWS = REPO_ROOT.parent / "shared" / "data" / "ag_news"
LABELS = ["World", "Sports", "Business", "Sci/Tech"]
RECIPES = {
    "head": ["tokenizer.truncation=head"],
    "head_tail": ["tokenizer.truncation=head_tail"],
    "chunk": ["tokenizer.long_text=chunk", "tokenizer.chunk_stride=32", "tokenizer.max_chunks=8"],
}


def read_rows(path: Path, has_header: bool) -> list[tuple[int, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    rows = rows[1:] if has_header else rows
    return [(int(label) - 1, f"{title}. {description}") for label, title, description in rows]


def build_documents(rows: list[tuple[int, str]], count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(label, text) documents: 2-3 noise rows of random classes, then two rows of the document's class."""
    by_class = {label: [text for row_label, text in rows if row_label == label] for label in range(len(LABELS))}
    documents = []
    for index in range(count):
        label = index % len(LABELS)
        noise = [rng.choice(rows)[1] for _ in range(rng.choice((2, 3)))]
        own = rng.sample(by_class[label], 2)
        documents.append((LABELS[label], " ".join(noise + own)))
    rng.shuffle(documents)
    return documents


def write_corpus(folder: Path, train_docs: int, test_docs: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    train_rows = read_rows(AG_NEWS / "train_20k.csv", has_header=True)
    test_rows = read_rows(AG_NEWS / "test.csv", has_header=False)
    paths = []
    for name, rows, count in (("train", train_rows, train_docs), ("test", test_rows, test_docs)):
        path = folder / f"long_{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["doc_id", "topic", "body"])
            writer.writerows(
                [f"{name}{i}", label, text] for i, (label, text) in enumerate(build_documents(rows, count, rng))
            )
        paths.append(path)
    return paths[0], paths[1]


def run_recipe(name: str, train: Path, test: Path, output_dir: Path, extra: list[str]) -> dict:
    command = [
        sys.executable,
        "-m",
        "pipeline.finetune",
        "--config",
        "configs/ag_news_minilm.yaml",
        f"run.output_dir={output_dir}",
        f"run.name={name}",
        f"data.train_file={train}",
        f"data.test_file={test}",
        "data.column_names=null",
        "data.text_columns=[body]",
        "data.label_column=topic",
        "data.id_column=doc_id",
        "data.label_names=null",
        "tokenizer.max_length=128",
        "train.eval_every_steps=100",
        *RECIPES[name],
        *extra,
    ]
    tick = time.perf_counter()
    subprocess.run(command, cwd=REPO_ROOT, check=True)
    record = RunDir(output_dir / name).read_record()
    windows = (record.tokenization.windows_per_document or {}).get("train") or {"mean": 1.0}
    return {
        "recipe": name,
        "accuracy": record.test.accuracy,
        "macro_f1": record.test.macro_f1,
        "windows": windows["mean"],
        "seconds": time.perf_counter() - tick,
        "truncated": record.tokenization.truncated_fraction["train"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--train-docs", type=int, default=3000)
    parser.add_argument("--test-docs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--override", action="append", default=[], help="extra section.key=value for every recipe")
    parser.add_argument("--write-only", type=Path, help="only write long_train.csv and long_test.csv into this folder")
    args = parser.parse_args()
    if args.write_only:
        args.write_only.mkdir(parents=True, exist_ok=True)
        print(*write_corpus(args.write_only, args.train_docs, args.test_docs, args.seed), sep="\n")
        return
    with tempfile.TemporaryDirectory(prefix="long_documents_") as folder:
        train, test = write_corpus(Path(folder), args.train_docs, args.test_docs, args.seed)
        results = [run_recipe(name, train, test, Path(folder) / "runs", args.override) for name in args.recipes]
    print(f"{'recipe':<10} {'test acc':>8} {'macro-F1':>8} {'windows/doc':>11} {'>128 tok':>8} {'run s':>7}")
    for row in results:
        print(
            f"{row['recipe']:<10} {row['accuracy']:>8.4f} {row['macro_f1']:>8.4f} {row['windows']:>11.2f} "
            f"{row['truncated']:>8.1%} {row['seconds']:>7.0f}"
        )


if __name__ == "__main__":
    main()
