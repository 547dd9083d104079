"""Distillation's trade at one glance: teacher and student (and any other run) labelling the same test texts through
the prediction path (pipeline.predict.Predictor), rows/s and accuracy side by side.

    python benchmarks/distill.py /tmp/distill_runs/minilm_20k /tmp/distill_runs/ag_news_distill \\
        [runs/ag_news_encoder_local] [--rows 7600] [--segments 8] [--backend torch]

The first run is the reference (the teacher): the speed ratio of every other run is against it. The texts and gold
labels are the first run's test split as its test_predictions.csv records it (AG News: 7,600 rows); every run must
have the same class names. Each model labels a warm-up batch first (one-off start-up costs are not timed). The rows
are cut into segments and the models take turns over them, a different one going first each time, so that all see
the same machine load; a model's rows/s is its rows over its summed seconds, tokenization included (what
`python -m pipeline.predict` does per chunk). On a shared machine the absolute figures move with the load; the
ratio between models of one invocation is the figure to quote.

Printed: one row per run (rows/s, ratio to the first, test accuracy, parameters, backend), then one JSON line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from pipeline.predict import Predictor  # noqa: E402
from pipeline.predict.speed import warm_up  # noqa: E402
from pipeline.run.directory import PREDICTION_GOLD, PREDICTION_TEXT, RunDir  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories; the first is the reference (teacher)")
    parser.add_argument("--rows", type=int, default=None, help="label only the first N test rows (default: all)")
    parser.add_argument("--segments", type=int, default=8, help="turns the models take over the rows")
    parser.add_argument(
        "--backend",
        default="torch",
        choices=["auto", "torch", "onnx"],
        help="prediction backend for every run (default torch: the same engine on both sides)",
    )
    parser.add_argument("--batch-size", type=int, default=128)
    return parser.parse_args(argv)


def test_rows(run: Path, limit: int | None) -> tuple[list[str], list[str]]:
    """The run's test texts and gold class names, from its test_predictions.csv."""
    predictions = RunDir(run).read_predictions()
    if predictions is None:
        raise SystemExit(f"{run}: no test_predictions.csv to take the test texts from")
    predictions = predictions.head(limit) if limit else predictions
    return predictions[PREDICTION_TEXT].tolist(), predictions[PREDICTION_GOLD].tolist()


def timed_turns(predictors: list[Predictor], texts: list[str], segments: int) -> tuple[list[np.ndarray], list[float]]:
    """Each predictor's label ids for all texts, and its summed seconds, the models taking turns per segment."""
    for predictor in predictors:  # kernel selection and first allocations are not timed
        warm_up(predictor, texts)
    bounds = np.linspace(0, len(texts), max(1, segments) + 1).astype(int)
    labels = [[] for _ in predictors]
    seconds = [0.0 for _ in predictors]
    for turn, (start, stop) in enumerate(itertools.pairwise(bounds)):
        order = [(turn + offset) % len(predictors) for offset in range(len(predictors))]
        for index in order:
            tick = time.perf_counter()
            ids, _ = predictors[index].infer(texts[start:stop])
            seconds[index] += time.perf_counter() - tick
            labels[index].append(ids)
    return [np.concatenate(parts) for parts in labels], seconds


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    texts, gold = test_rows(args.runs[0], args.rows)
    predictors = [Predictor.from_path(run, backend=args.backend, batch_size=args.batch_size) for run in args.runs]
    for run, predictor in zip(args.runs, predictors):
        if predictor.labels != predictors[0].labels:
            raise SystemExit(f"{run}: classes {predictor.labels} differ from {args.runs[0]}'s {predictors[0].labels}")
    label_of = {name: index for index, name in enumerate(predictors[0].labels)}
    gold_ids = np.array([label_of[name] for name in gold])
    labels, seconds = timed_turns(predictors, texts, args.segments)
    results = []
    for run, predictor, ids, spent in zip(args.runs, predictors, labels, seconds):
        results.append(
            {
                "run": str(run),
                "rows_per_second": len(texts) / spent,
                "accuracy": float(np.mean(ids == gold_ids)),
                "parameters": RunDir(run).read_record().run.num_parameters,
                "backend": predictor.describe_backend().split(":")[0].removeprefix("backend "),
            }
        )
    reference = results[0]["rows_per_second"]
    print(f"{len(texts)} test rows, {args.segments} alternating segments, backend {args.backend}")
    print(f"{'run':<48} {'rows/s':>9} {'x first':>8} {'accuracy':>9} {'params':>12}  backend")
    for result in results:
        result["speedup_vs_first"] = result["rows_per_second"] / reference
        print(
            f"{result['run'][-48:]:<48} {result['rows_per_second']:>9.1f} {result['speedup_vs_first']:>7.1f}x "
            f"{result['accuracy']:>9.4f} {result['parameters'] or 0:>12,}  {result['backend']}"
        )
    print(json.dumps({"rows": len(texts), "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
