"""Stages 1 and 2 on a large file: how long reading, deduplicating, splitting and tokenizing take as rows grow.

    python benchmarks/large_files.py                          # 20,000 and 100,000 rows
    python benchmarks/large_files.py --rows 100000 300000 --out /tmp/large
    python benchmarks/large_files.py --max-length auto        # stage 2 as configs leave it by default

Each file is one CSV (id, text, label) built from ../shared AG News: a text joins one to three random rows (title and
description), its label the first row's class, with 2% of the rows repeating an earlier text, as real exports do.
Validation and test are carved out of it (stratified, seeded) and duplicates counted and removed, as
configs/own_data_example.yaml reads a user's one file. For each size the script times, in this process, `load_data`
(stage 1) and `tokenize_splits` (stage 2, MiniLM's WordPiece at a fixed 128 tokens or `--max-length`, no cache), then prints one row:
rows, seconds and rows/s of each stage, and the process's peak memory so far. Nothing is trained.
"""

from __future__ import annotations

import argparse
import csv
import random
import resource
import sys
import time
from pathlib import Path

from pipeline.config.schema import DataConfig, TokenizerConfig
from pipeline.data.load import load_data
from pipeline.text.tokenization import load_tokenizer, tokenize_splits

REPO_ROOT = Path(__file__).resolve().parents[1]
AG_NEWS_TRAIN = REPO_ROOT.parent / "shared" / "data" / "ag_news" / "train_20k.csv"
MINILM = REPO_ROOT.parent / "shared" / "models" / "minilm-l6-h384-uncased"
LABELS = ["World", "Sports", "Business", "Sci/Tech"]
DUPLICATE_SHARE = 0.02


def write_file(path: Path, rows: int, seed: int) -> None:
    """`rows` rows of id, text, label; DUPLICATE_SHARE of them repeat an earlier row's text and label."""
    with AG_NEWS_TRAIN.open(newline="", encoding="utf-8") as handle:
        news = [(int(row["class_index"]) - 1, f"{row['title']} {row['description']}") for row in csv.DictReader(handle)]
    rng = random.Random(seed)
    written: list[tuple[str, str]] = []
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "text", "label"])
        for index in range(rows):
            if written and rng.random() < DUPLICATE_SHARE:
                text, label = rng.choice(written)
            else:
                parts = rng.sample(news, rng.randint(1, 3))
                text, label = " ".join(part for _, part in parts), LABELS[parts[0][0]]
                written.append((text, label))
            writer.writerow([f"doc{index}", text, label])


def peak_memory_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux reports KiB


def measure(path: Path, rows: int, seed: int, max_length: int | str) -> str:
    config = DataConfig(source="files", train_file=str(path), text_columns=["text"], id_column="id", test_file=None)
    start = time.perf_counter()
    data = load_data(config, seed)
    loaded = time.perf_counter() - start
    tokenizer = load_tokenizer(TokenizerConfig(name_or_path=str(MINILM)))
    start = time.perf_counter()
    tokenize_splits(data.splits, tokenizer, TokenizerConfig(name_or_path=str(MINILM), max_length=max_length), None)
    tokenized = time.perf_counter() - start
    return (
        f"| {rows:,} | {loaded:.1f} | {rows / loaded:,.0f} | {tokenized:.1f} | {rows / tokenized:,.0f} | "
        f"{peak_memory_gib():.2f} |"
    )


def _length(value: str) -> int | str:
    return value if value == "auto" else int(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/large_files"), help="where the CSV files are written")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-length", type=_length, default=128, help="tokenizer.max_length: a number or auto")
    args = parser.parse_args(argv)
    if not AG_NEWS_TRAIN.is_file() or not MINILM.is_dir():
        print(f"needs {AG_NEWS_TRAIN} and {MINILM}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print("| rows | stage 1 s | stage 1 rows/s | stage 2 s | stage 2 rows/s | peak memory GiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for rows in args.rows:
        path = args.out / f"rows_{rows}.csv"
        write_file(path, rows, args.seed)
        print(measure(path, rows, args.seed, args.max_length), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
