"""Prediction throughput: our Predictor against transformers.pipeline("text-classification") on the same texts.

    python benchmarks/predict_speed.py --model runs/ag_news_minilm --input ../shared/data/ag_news/test.csv \\
        --column-names class_index,title,description

In one process it reads the input with the command's own reader (test.csv has no header, hence
--column-names), builds each row's text the way the run was trained (title + " " + description, unescaped),
then labels all rows twice, timing each: with `Predictor.label_texts` (length-sorted batches padded only to
their longest row, bf16 weights where the CPU has native bf16, near-ties recomputed in fp32, one tokenizer call
per chunk) and with the stock `pipeline("text-classification", model=<model dir>, batch_size=64,
truncation=True, max_length=<the run's length>)`. Each side labels a few rows first so one-off start-up costs
(kernel selection, first allocations) are not timed.

`max_length` is passed to the stock pipeline so both sides read the same tokens: the run (and its evaluation)
truncate at the training length, the stock pipeline otherwise at the tokenizer's 512, and rows longer than the
training length would then disagree for a reason that has nothing to do with inference (`--stock-full-length`
drops it; the rows concerned are counted and agreement is also given without them).

The rows are cut into a few segments and the two sides alternate over them (taking turns at going first),
so both see the same machine load; each segment is one chunk for our side, as in the command.

Printed: rows/s of both, the ratio (target >= 2.5x), and label agreement (target >= 99.5%). The last stdout
line is one JSON object with the figures. Figures on a shared 2-core machine move with whatever else runs:
compare the two sides of one invocation.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

# Set before transformers is imported: it reads them once, at import time.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
import torch
import transformers

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from pipeline.data.tables import open_table  # noqa: E402
from pipeline.data.text import resolve_columns  # noqa: E402
from pipeline.predict import Predictor, resolve_model_source  # noqa: E402
from pipeline.predict.predictor import DEFAULT_BATCH_SIZE  # noqa: E402

WARMUP_ROWS = 64


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="run directory or saved model directory")
    parser.add_argument("--input", default=str(REPO_ROOT.parent / "shared/data/ag_news/test.csv"), help="CSV/TSV")
    parser.add_argument("--column-names", help="names for a header-less input, e.g. class_index,title,description")
    parser.add_argument("--text-columns", help="override the run's text columns, e.g. title,description")
    parser.add_argument("--max-rows", type=int, default=None, help="label only the first N rows (smoke runs)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="ours (default: the command's)")
    parser.add_argument("--stock-batch-size", type=int, default=64, help="the stock pipeline's (default 64)")
    parser.add_argument("--stock-full-length", action="store_true", help="let the stock pipeline read 512 tokens")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"], help="ours (default auto)")
    parser.add_argument("--device", default="cpu", help="device of both sides (default cpu)")
    parser.add_argument(
        "--backend", default="auto", choices=["auto", "torch", "onnx"], help="ours, as the command's (default auto)"
    )
    parser.add_argument("--segments", type=int, default=4, help="alternate the two sides over this many segments")
    return parser.parse_args(argv)


def read_texts(path: str, column_names: list[str] | None, predictor: Predictor, max_rows: int | None) -> list[str]:
    """The rows' texts exactly as the command builds them."""
    spec = predictor.text_spec
    with open_table(path, column_names=column_names, chunk_size=10_000) as table:
        columns = resolve_columns(table.header, spec.columns, table.name, "--text-columns")
        texts = [spec.text_of([row[i] for i in columns]) for chunk in table.chunks for row in chunk.records]
    return texts[:max_rows] if max_rows else texts


def load_stock_pipeline(model_dir: Path, batch_size: int, device: str, max_length: int | None):
    length_option = {"max_length": max_length} if max_length else {}
    return transformers.pipeline(
        "text-classification",
        model=str(model_dir),
        batch_size=batch_size,
        truncation=True,
        device=torch.device(device),
        **length_option,
    )


def timed(function, *args) -> tuple[object, float, float]:
    """(result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    transformers.utils.logging.set_verbosity_error()
    text_columns = args.text_columns.split(",") if args.text_columns else None
    predictor = Predictor.from_path(
        args.model,
        device=args.device,
        precision=args.precision,
        batch_size=args.batch_size,
        text_columns=text_columns,
        backend=args.backend,
    )
    column_names = args.column_names.split(",") if args.column_names else None
    texts = read_texts(args.input, column_names, predictor, args.max_rows)
    model_dir = resolve_model_source(args.model).model_dir
    classifier = load_stock_pipeline(
        model_dir,
        args.stock_batch_size,
        args.device,
        None if args.stock_full_length else predictor.max_length,
    )
    print(
        f"{len(texts)} rows in {args.segments} alternating segments; model {model_dir}; "
        f"max_length {predictor.max_length}; ours in {predictor.precision}, batch {predictor.batch_size}; "
        f"torch threads {torch.get_num_threads()}",
        file=sys.stderr,
    )

    def ours(segment: list[str]) -> np.ndarray:
        result = predictor.label_texts(segment)
        margins.append(np.diff(np.sort(result.probabilities, axis=1)[:, -2:], axis=1)[:, 0])
        return result.label_ids

    def stock(segment: list[str]) -> np.ndarray:
        return np.array([predictor.labels.index(output["label"]) for output in classifier(segment)])

    margins: list[np.ndarray] = []  # top-two probability gaps of our rows
    # Untimed warm-up: one-off costs (kernel selection, first allocations) are not what is compared.
    ours(texts[:WARMUP_ROWS])
    stock(texts[:WARMUP_ROWS])
    # Alternating segments (and which side goes first) so both sides see the same load on a shared machine.
    totals = {"ours": [0.0, 0.0], "stock": [0.0, 0.0]}
    ids: dict[str, list[np.ndarray]] = {"ours": [], "stock": []}
    bounds = np.linspace(0, len(texts), args.segments + 1).astype(int)
    for index, (begin, finish) in enumerate(itertools.pairwise(bounds)):
        sides = [("ours", ours), ("stock", stock)]
        for name, function in sides if index % 2 == 0 else sides[::-1]:
            labels, wall, cpu = timed(function, texts[begin:finish])
            ids[name].append(labels)
            totals[name][0] += wall
            totals[name][1] += cpu
        so_far = f"ours {totals['ours'][0]:.1f} s, stock {totals['stock'][0]:.1f} s so far"
        print(f"segment {index + 1}/{args.segments}: {so_far}", file=sys.stderr)
    ours_ids, stock_ids = np.concatenate(ids["ours"]), np.concatenate(ids["stock"])
    rechecked = (
        float((np.concatenate(margins[1:]) < predictor.recheck_margin).mean()) if predictor.compute_dtype else 0.0
    )
    ours_seconds, stock_seconds = totals["ours"][0], totals["stock"][0]
    stock_tokenizer = classifier.tokenizer

    lengths = np.array([len(ids) for ids in stock_tokenizer(texts, truncation=False)["input_ids"]])
    longer = lengths > predictor.max_length
    agree = ours_ids == stock_ids
    result = {
        "rows": len(texts),
        "ours_rows_per_second": round(len(texts) / ours_seconds, 2),
        "stock_pipeline_rows_per_second": round(len(texts) / stock_seconds, 2),
        "speedup": round(stock_seconds / ours_seconds, 3),
        "speedup_cpu_time": round(totals["stock"][1] / totals["ours"][1], 3),
        "ours_seconds": round(ours_seconds, 2),
        "stock_seconds": round(stock_seconds, 2),
        "label_agreement": round(float(agree.mean()), 5),
        "label_agreement_within_max_length": round(float(agree[~longer].mean()), 5) if (~longer).any() else None,
        "rows_longer_than_max_length": int(longer.sum()),
        "max_length": predictor.max_length,
        "precision": predictor.precision,
        "backend": predictor.describe_backend(),
        "share_rechecked_in_fp32": round(rechecked, 4),
        "batch_size": args.batch_size,
        "stock_batch_size": args.stock_batch_size,
        "stock_max_length": 512 if args.stock_full_length else predictor.max_length,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    print(
        f"ours {result['ours_rows_per_second']:.1f} rows/s, stock pipeline "
        f"{result['stock_pipeline_rows_per_second']:.1f} rows/s: speedup {result['speedup']:.2f}x (target >= 2.5; "
        f"{result['speedup_cpu_time']:.2f}x in CPU time); label agreement {result['label_agreement']:.2%} "
        f"(target >= 99.5%); {result['rows_longer_than_max_length']} rows are longer than max_length "
        f"{predictor.max_length}"
    )
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
