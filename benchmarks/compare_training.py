"""Train with the stock Hugging Face recipe and with our pipeline, side by side, and print both throughputs.

    python benchmarks/compare_training.py
    python benchmarks/compare_training.py --repeats 2 --peer-eval --json-out /tmp/compare.json
    python benchmarks/compare_training.py --override train.learning_rate=3e-5 --override tokenizer.max_length=128

Each run is a fresh subprocess training on --max-train-samples rows of the train file: the peer is
benchmarks/trainer_peer.py, ours is `python -m pipeline.finetune --config CONFIG run.output_dir=<tmp> run.name=bench
data.max_train_samples=N [--override ...]`, whose <tmp>/bench/metrics.json is read back. With --repeats above 1 the
order flips every repeat (peer, ours, ours, peer, ...) so that a slow spell of the machine hits both recipes; the
summary takes the median per recipe. Both subprocesses' output is echoed to stderr; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline.rundir import RunDir

REPO_ROOT = Path(__file__).resolve().parents[1]
PEER_SCRIPT = Path(__file__).resolve().with_name("trainer_peer.py")
RUN_NAME = "bench"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--config", default="configs/ag_news_minilm.yaml", help="our pipeline's config, relative to the repo root"
    )
    parser.add_argument(
        "--max-train-samples", type=int, default=5000, help="train rows for both recipes (default 5000)"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="dotted config override passed through to our pipeline; repeatable",
    )
    parser.add_argument(
        "--order",
        choices=["peer-first", "ours-first"],
        default="peer-first",
        help="which recipe runs first in the first repeat (default peer-first)",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="run each recipe this many times, alternating the order (default 1)"
    )
    parser.add_argument("--peer-eval", action="store_true", help="let the peer also score test accuracy")
    parser.add_argument(
        "--peer-args",
        default="",
        help="extra arguments for trainer_peer.py, as one string, e.g. --peer-args='--max-steps 5'",
    )
    parser.add_argument(
        "--ours-cmd",
        default=None,
        help=(
            "command that starts our pipeline, before its --config and overrides "
            "(default: this interpreter with -m pipeline.finetune)"
        ),
    )
    parser.add_argument("--json-out", default=None, help="also write all runs and the summary to this JSON file")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def run_order(first: str, repeats: int) -> list[tuple[int, str]]:
    """(repeat, recipe) in run order; every other repeat is reversed so neither recipe always goes first."""
    pair = ["peer", "ours"] if first == "peer-first" else ["ours", "peer"]
    order = []
    for repeat in range(repeats):
        for recipe in pair if repeat % 2 == 0 else reversed(pair):
            order.append((repeat, recipe))
    return order


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    # Our package is imported from the working tree, whether or not it is pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def run_streaming(cmd: list[str]) -> tuple[list[str], float]:
    """Run cmd from the repo root, echoing its stdout to our stderr (keeps our stdout for the table).

    Returns its stdout lines and its wall seconds; a failed run ends the benchmark, since half a comparison is
    worse than none.
    """
    print(f"$ {shlex.join(cmd)}", file=sys.stderr, flush=True)
    lines = []
    start = time.perf_counter()
    with subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=subprocess_env(), stdout=subprocess.PIPE, text=True, bufsize=1
    ) as process:
        for line in process.stdout:
            sys.stderr.write(line)
            lines.append(line)
    wall_seconds = time.perf_counter() - start
    if process.returncode != 0:
        sys.exit(f"compare_training: command failed with exit status {process.returncode}: {shlex.join(cmd)}")
    return lines, wall_seconds


def last_json_line(lines: list[str], key: str) -> dict:
    """The last stdout line that is a JSON object holding key (Trainer's own log lines are Python reprs)."""
    for line in reversed(lines):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and key in record:
            return record
    sys.exit(f"compare_training: no JSON result line with {key!r} in the peer's output")


def run_peer(args: argparse.Namespace) -> dict:
    cmd = [sys.executable, str(PEER_SCRIPT), "--max-train-samples", str(args.max_train_samples)]
    if args.peer_eval:
        cmd.append("--eval")
    cmd += shlex.split(args.peer_args)
    lines, wall_seconds = run_streaming(cmd)
    result = last_json_line(lines, "recipe")
    return {
        "recipe": "hf_trainer",
        "train_samples_per_second": result["train_samples_per_second"],
        "train_seconds": result["train_seconds"],
        "test_accuracy": result.get("test_accuracy"),
        "max_length": result.get("max_length"),
        "process_seconds": round(wall_seconds, 3),
        "raw": result,
    }


def ours_command(args: argparse.Namespace, output_dir: str) -> list[str]:
    prefix = shlex.split(args.ours_cmd) if args.ours_cmd else [sys.executable, "-m", "pipeline.finetune"]
    return prefix + [
        "--config",
        args.config,
        f"run.output_dir={output_dir}",
        f"run.name={RUN_NAME}",
        f"data.max_train_samples={args.max_train_samples}",
        *args.override,
    ]


def run_ours(args: argparse.Namespace) -> dict:
    # A fresh output dir per run: a leftover metrics.json from an earlier run must never be read as this one's.
    with tempfile.TemporaryDirectory(prefix="compare_training_") as output_dir:
        _, wall_seconds = run_streaming(ours_command(args, output_dir))
        run = RunDir(Path(output_dir) / RUN_NAME)
        if not run.metrics_path.is_file():
            sys.exit(f"compare_training: our run finished but wrote no {run.metrics_path}")
        metrics = run.read_metrics()
    return {
        "recipe": "ours",
        "train_samples_per_second": metrics["throughput"]["train_samples_per_second"],
        "train_seconds": metrics["timings"]["train_seconds"],
        "total_seconds": metrics["timings"]["total_seconds"],
        "test_accuracy": metrics.get("test", {}).get("accuracy"),
        "max_length": metrics.get("tokenization", {}).get("max_length"),
        "process_seconds": round(wall_seconds, 3),
        "raw": metrics,
    }


def median_of(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def summarize(runs: list[dict]) -> dict:
    summary = {}
    for recipe in ("hf_trainer", "ours"):
        mine = [run for run in runs if run["recipe"] == recipe]
        keys = ("train_samples_per_second", "train_seconds", "total_seconds", "process_seconds", "test_accuracy")
        summary[recipe] = {key: median_of(mine, key) for key in keys}
        summary[recipe]["max_length"] = mine[0]["max_length"]
    peer_speed = summary["hf_trainer"]["train_samples_per_second"]
    ours_speed = summary["ours"]["train_samples_per_second"]
    summary["ratio_train_samples_per_second"] = round(ours_speed / peer_speed, 3) if peer_speed else None
    return summary


def fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(runs: list[dict], summary: dict, repeats: int) -> None:
    header = (
        f"{'recipe':<11} {'repeat':>6} {'train samples/s':>15} {'train s':>9} {'process s':>9} "
        f"{'max_len':>7} {'test acc':>8}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        print(
            f"{run['recipe']:<11} {run['repeat']:>6} {fmt(run['train_samples_per_second'], 2):>15} "
            f"{fmt(run['train_seconds'], 1):>9} {fmt(run['process_seconds'], 1):>9} "
            f"{run['max_length'] if run['max_length'] is not None else '-':>7} {fmt(run['test_accuracy'], 4):>8}"
        )
    label = "median of" if repeats > 1 else "over"
    ratio = summary["ratio_train_samples_per_second"]
    ours = summary["ours"]
    print()
    print(f"ours / peer train samples/s ({label} {repeats} repeat(s)): {fmt(ratio, 2)}x")
    print(
        f"ours whole run: {fmt(ours['total_seconds'], 1)} s by its metrics.json, "
        f"{fmt(ours['process_seconds'], 1)} s as a process"
    )


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    runs = []
    for repeat, recipe in run_order(args.order, args.repeats):
        run = run_peer(args) if recipe == "peer" else run_ours(args)
        runs.append({"repeat": repeat, **run})
    summary = summarize(runs)
    print_table(runs, summary, args.repeats)
    if args.json_out:
        report = {
            "max_train_samples": args.max_train_samples,
            "config": args.config,
            "overrides": args.override,
            "order": args.order,
            "runs": runs,
            "summary": summary,
        }
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    return summary


if __name__ == "__main__":
    main()
