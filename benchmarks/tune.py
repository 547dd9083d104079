"""What the search buys: MiniLM on 2,000 AG News train rows, the default config (configs/ag_news_minilm.yaml) against
the best of a 12-trial Optuna search with median pruning, both scored on the same validation and test splits.

    nice -n 5 python benchmarks/tune.py [--trials 12] [--train-rows 2000] [--out /tmp/tune_bench]

Printed: the default run's and the best trial's validation and test accuracy, the trials completed, pruned and
failed, the search's wall time, and pruning's saving (each pruned trial's seconds against the mean completed trial's,
an estimate), then one JSON line. The test score of the best trial is read once, after the search.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from pipeline import finetune  # noqa: E402
from pipeline.config.load import load_config  # noqa: E402
from pipeline.run.directory import RunDir  # noqa: E402
from pipeline.tune import cli  # noqa: E402

CONFIG = REPO_ROOT / "configs" / "ag_news_minilm.yaml"
SPACE = (
    "tune.space={train.learning_rate: {low: 2.0e-5, high: 5.0e-4, log: true}, "
    "train.warmup_ratio: {low: 0.0, high: 0.2}, train.weight_decay: {low: 0.0, high: 0.1}, "
    "train.per_device_batch_size: [16, 32], train.epochs: [1, 2]}"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--train-rows", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/tune_bench"))
    args = parser.parse_args()
    os.chdir(REPO_ROOT)  # the config's ../shared paths
    common = [
        f"run.output_dir={args.out / 'runs'}",
        f"data.cache_dir={args.out / 'cache'}",
        f"data.max_train_samples={args.train_rows}",
        "data.max_eval_samples=1000",
        "train.eval_every_steps=20",
        "train.report_to=none",
        "eval.predict_speed_rows=0",
        "eval.baseline=none",
        "run.overwrite=true",
    ]
    tick = time.perf_counter()
    default = finetune.run(load_config(CONFIG, [*common, "run.name=default"]))
    default_seconds = time.perf_counter() - tick
    tick = time.perf_counter()
    tuned = [SPACE, f"tune.output_dir={args.out / 'studies'}", "tune.startup_trials=4"]
    code = cli.main(["--config", str(CONFIG), "--trials", str(args.trials), "--study", "bench", *common, *tuned])
    search_seconds = time.perf_counter() - tick
    assert code == 0, code
    study = args.out / "studies" / "bench"
    with open(study / "trials.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    complete = [r for r in rows if r["state"] == "complete"]
    pruned = [r for r in rows if r["state"] == "pruned"]
    best = max(complete, key=lambda r: float(r["value"]))
    best_record = RunDir(study / f"trial_{int(best['trial']):03d}").read_record()
    mean_complete = sum(float(r["seconds"]) for r in complete) / len(complete)
    saved = sum(max(0.0, mean_complete - float(r["seconds"])) for r in pruned)
    result = {
        "default_validation_accuracy": default["validation"]["accuracy"],
        "default_test_accuracy": default["test"]["accuracy"],
        "best_trial": int(best["trial"]),
        "best_params": {k: best[k] for k in best if k.startswith(("train.", "tokenizer."))},
        "best_validation_accuracy": best_record.validation.accuracy,
        "best_test_accuracy": best_record.test.accuracy,
        "trials": len(rows),
        "complete": len(complete),
        "pruned": len(pruned),
        "failed": sum(r["state"] == "fail" for r in rows),
        "default_seconds": round(default_seconds),
        "search_seconds": round(search_seconds),
        "mean_complete_trial_seconds": round(mean_complete),
        "pruning_saved_minutes_estimate": round(saved / 60, 1),
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
