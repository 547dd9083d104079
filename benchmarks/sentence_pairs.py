"""Sentence pairs read as pairs (data.text_pair_columns) against the same two columns joined into one text.

    python benchmarks/sentence_pairs.py                    # 3,000 training pairs, both runs (about 10 minutes on 2 cores)
    python benchmarks/sentence_pairs.py --train-rows 1000  # quicker

The task needs both texts at once: an AG News headline with its own description ("match") or with another row's
("mismatch"), half and half, seeded, written to <out>/train.csv and <out>/test.csv (headline, body, label; the test
rows are other rows of the file). `python -m pipeline.finetune --config configs/ag_news_minilm.yaml` trains MiniLM
on it for one epoch twice, the same in all but how a row is read: once `data.text_columns=[headline, body]` (one
text, the columns joined by a space: what the tool did before pairs) and once `data.text_columns=[headline]
data.text_pair_columns=[body]` ([CLS] headline [SEP] body [SEP] with segment ids). Printed for both: test accuracy
and macro-F1, and the TF-IDF + logistic regression baseline's (a bag of words cannot tell a match: about chance).

Each run is a fresh subprocess writing <out>/<name>/ (kept, with its report); the last stdout line is one JSON
object with every figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import tempfile
from pathlib import Path

from runs import REPO_ROOT, finetune_run

SHARED = REPO_ROOT.parent / "shared"
HEADER = ("headline", "body", "label")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/ag_news_minilm.yaml", help="relative to the repo root")
    parser.add_argument("--source-file", default=str(SHARED / "data" / "ag_news" / "train_20k.csv"))
    parser.add_argument("--train-rows", type=int, default=3000)
    parser.add_argument("--test-rows", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", default=None, help="folder for the data and the runs (default: a new temp dir)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="for every run")
    return parser.parse_args(argv)


def matching_pairs(rows: list[dict[str, str]], rng: random.Random) -> list[tuple[str, str, str]]:
    """Every other row keeps its own description; the others get a description drawn from another row."""
    pairs = []
    for index, row in enumerate(rows):
        if index % 2 == 0:
            pairs.append((row["title"], row["description"], "match"))
        else:
            other = rows[(index + 1 + rng.randrange(len(rows) - 1)) % len(rows)]
            pairs.append((row["title"], other["description"], "mismatch"))
    return pairs


def write_task(source: Path, out: Path, train_rows: int, test_rows: int, seed: int) -> tuple[Path, Path]:
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rng = random.Random(seed)
    rng.shuffle(rows)
    paths = []
    for name, chunk in (("train", rows[:train_rows]), ("test", rows[train_rows : train_rows + test_rows])):
        path = out / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            writer.writerows(matching_pairs(chunk, rng))
        paths.append(path)
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="sentence_pairs_"))
    out.mkdir(parents=True, exist_ok=True)
    train, test = write_task(Path(args.source_file), out, args.train_rows, args.test_rows, args.seed)
    data = [
        f"data.train_file={train}",
        f"data.test_file={test}",
        "data.column_names=null",
        "data.label_column=label",
        "data.label_names=null",
        "data.label_index_base=null",
        "data.max_train_samples=null",
        f"data.cache_dir={out / 'cache'}",
        f"run.seed={args.seed}",
    ]
    readings = {
        "joined": ["data.text_columns=[headline,body]"],
        "pair": ["data.text_columns=[headline]", "data.text_pair_columns=[body]"],
    }
    figures = {}
    for name, reading in readings.items():
        record = finetune_run(args.config, out, name, [*data, *reading, *args.override]).read_record()
        figures[name] = {
            "test_accuracy": record.test.accuracy,
            "test_macro_f1": record.test.macro_f1,
            "baseline_accuracy": record.baseline.accuracy if record.baseline else None,
            "train_seconds": record.timings.train_seconds,
        }
    for name, row in figures.items():
        print(
            f"{name:>6}: test accuracy {row['test_accuracy']:.4f}, macro-F1 {row['test_macro_f1']:.4f} "
            f"(TF-IDF baseline accuracy {row['baseline_accuracy']})"
        )
    gain = 100 * (figures["pair"]["test_accuracy"] - figures["joined"]["test_accuracy"])
    print(f"pairs over joined: {gain:+.1f} accuracy points ({args.train_rows} training pairs, {args.test_rows} test)")
    print(json.dumps({"out": str(out), "train_rows": args.train_rows, "test_rows": args.test_rows, **figures}))


if __name__ == "__main__":
    main()
