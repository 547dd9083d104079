"""What batching alone buys on this machine: rows/s of `Predictor.label_texts` on unsorted texts, one call per batch.

    python benchmarks/batch_sizes.py --model runs/ag_news_minilm
    python benchmarks/batch_sizes.py --model runs/ag_news_minilm --backends torch openvino --batch-sizes 1 8 32

Requests to `pipeline.serve` arrive in no order of length, so a batch is padded to its longest text; this script
measures the same work outside the server, per backend: the ceiling that dynamic batching can reach over unbatched
requests (`pipeline.predict` sorts a whole file by length first and pads far less). Texts: the first --rows of
AG News test.csv in ../shared/, title and description joined. Best of --rounds passes; the last stdout line is JSON.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")

from pipeline.common.hardware import cpu_name  # noqa: E402
from pipeline.predict import Predictor, resolve_model_source  # noqa: E402

TEST_CSV = REPO_ROOT.parent / "shared" / "data" / "ag_news" / "test.csv"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="run directory")
    parser.add_argument("--rows", type=int, default=256, help="texts per pass (default 256)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--backends", nargs="+", default=["auto", "torch", "onnx-fp32"])
    parser.add_argument("--rounds", type=int, default=2, help="passes per setting, best counts (default 2)")
    return parser.parse_args()


def read_texts(rows: int) -> list[str]:
    with open(TEST_CSV, newline="", encoding="utf-8") as handle:
        return [f"{title} {description}" for _, title, description in list(csv.reader(handle))[:rows]]


def rows_per_second(predictor: Predictor, texts: list[str], batch_size: int, rounds: int) -> float:
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        for offset in range(0, len(texts), batch_size):
            predictor.label_texts(texts[offset : offset + batch_size])
        best = max(best, len(texts) / (time.perf_counter() - start))
    return best


def main() -> None:
    args = parse_args()
    texts = read_texts(args.rows)
    source = resolve_model_source(args.model)
    results = {}
    print(f"{cpu_name()}; {len(texts)} texts, unsorted")
    for backend in args.backends:
        predictor = Predictor.from_source(source, device="cpu", backend=backend)
        predictor.label_texts(texts[:32])  # warm-up
        rates = {size: rows_per_second(predictor, texts, size, args.rounds) for size in args.batch_sizes}
        name = f"{backend} ({predictor.backend_name})"
        results[name] = rates
        print(f"{name:24s}", "  ".join(f"batch {size}: {rate:6.1f} rows/s" for size, rate in rates.items()))
    print(json.dumps({"cpu": cpu_name(), "rows": len(texts), "rows_per_second": results}))


if __name__ == "__main__":
    main()
