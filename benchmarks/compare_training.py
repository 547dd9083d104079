"""Train with the stock Trainer, the tuned Trainer and our pipeline, back to back on the same work, and compare.

    python benchmarks/compare_training.py                                   # the three recipes, once each
    python benchmarks/compare_training.py --repeats 2 --json-out /tmp/compare.json
    python benchmarks/compare_training.py --recipes tuned ours --background-load 0 1
    python benchmarks/compare_training.py --max-train-samples 64 --max-test-samples 64    # smoke run, about a minute

The work, by default, is the issue's: MiniLM (../shared/models/minilm-l6-h384-uncased) fine-tuned on 5,000 AG News
rows of ../shared/data/ag_news/train_20k.csv for one epoch, learning rate 1e-4, bf16, batch 32, then scored on the
7,600 rows of test.csv. bf16 where the CPU runs it natively: on a CPU without it (AVX2 only, say) emulated bf16 runs
many times slower than full precision, so there every recipe trains in full precision, ours by its own
`train.mixed_precision: auto` and the Trainer's by `--peer-precision auto` (the default; pipeline.common.hardware's rule). Each run is a fresh subprocess, timed from start to exit (the "whole run": start-up,
loading, tokenization, training, evaluation, reports):

  stock   benchmarks/trainer_peer.py --eval: transformers.Trainer, every row padded to 128 tokens.
  tuned   benchmarks/trainer_peer.py --eval --tuned: the same script with dynamic padding (DataCollatorWithPadding)
          and train_sampling_strategy="group_by_length"; nothing else differs.
  ours    python -m pipeline.finetune --config CONFIG run.output_dir=<tmp> run.name=bench data.max_train_samples=N
          train.learning_rate=LR [--override ...]; its <tmp>/bench/metrics.json is read back.

`--recipes` picks which run and in what order; with --repeats above 1 the order rotates by one recipe every repeat
(stock tuned ours, tuned ours stock, ...) so that a slow spell of the machine hits every recipe, and the summary
takes the median per recipe. `--background-load K` starts K single-threaded CPU-bound Python processes (normal
priority) just before each run and kills them right after it, whatever happens; several values (`0 1`) run every
recipe under each and print how much of its quiet train samples/s each recipe keeps. The 1-minute load average
before each run goes into the table; before and after it, with K, into the JSON.

stdout gets a table of the runs, the medians per recipe, and the ratios against the issue's targets:
`ours / tuned train samples/s` (target 1.2x), `tuned / ours whole-run seconds` (target 1.3x) and the test accuracy
of ours minus the tuned Trainer's, in points (target: -0.2 or better). All subprocesses' output goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.run.directory import RunDir

REPO_ROOT = Path(__file__).resolve().parents[1]
PEER_SCRIPT = Path(__file__).resolve().with_name("trainer_peer.py")
RUN_NAME = "bench"
RECIPES = ("stock", "tuned", "ours")
LABELS = {"stock": "stock Trainer", "tuned": "tuned Trainer", "ours": "ours"}
# The acceptance bars, printed next to the measured ratios.
TARGET_TRAIN_SPEEDUP = 1.2  # ours / tuned, train samples/s
TARGET_WHOLE_RUN_SPEEDUP = 1.3  # tuned whole-run seconds / ours
TARGET_ACCURACY_POINTS = -0.2  # ours - tuned test accuracy, in points: this or better

# One single-threaded CPU-bound process. It ignores Ctrl-C (the benchmark kills it) and ends by itself once its
# parent is gone, so that a benchmark killed outright leaves no busy loop behind.
BUSY_LOOP = """\
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(1_000_000):
        pass
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--recipes",
        nargs="+",
        choices=RECIPES,
        default=list(RECIPES),
        help="which recipes to run, in this order in the first repeat (default: stock tuned ours)",
    )
    parser.add_argument(
        "--config", default="configs/ag_news_minilm.yaml", help="our pipeline's config, relative to the repo root"
    )
    parser.add_argument(
        "--max-train-samples", type=int, default=5000, help="train rows for every recipe (default 5000)"
    )
    parser.add_argument(
        "--max-test-samples",
        type=int,
        default=None,
        help=(
            "score only N test rows, for smoke runs (default: all 7,600): the Trainer recipes take the first N, ours "
            "gets data.max_eval_samples=N, a seeded sample of N validation and N test rows"
        ),
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=1e-4,
        help="peak learning rate for every recipe (ours: train.learning_rate; default 1e-4)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="dotted config override passed through to our pipeline; repeatable",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="run each recipe this many times, rotating the order (default 1)"
    )
    parser.add_argument(
        "--background-load",
        nargs="+",
        type=int,
        default=[0],
        metavar="K",
        help=(
            "K single-threaded CPU-bound processes beside each run (default 0); several values run every recipe "
            "under each, e.g. '0 1' to see how much of its quiet speed each recipe keeps"
        ),
    )
    parser.add_argument(
        "--peer-precision",
        choices=["auto", "bf16", "fp16", "no"],
        default="auto",
        help=(
            "the Trainer recipes' precision (trainer_peer.py --mixed-precision): 'auto' (default) is bf16 where the "
            "CPU or GPU runs it natively, fp16 on an older GPU, else full precision, the rule our "
            "train.mixed_precision: auto follows"
        ),
    )
    parser.add_argument(
        "--peer-args",
        default="",
        help="extra arguments for trainer_peer.py (both Trainer recipes), as one string, e.g. --peer-args='--max-steps 5'",
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
    if any(count < 0 for count in args.background_load):
        parser.error("--background-load takes counts of 0 or more")
    if args.max_test_samples is not None and args.max_test_samples < 1:
        parser.error("--max-test-samples must be at least 1")
    args.recipes = list(dict.fromkeys(args.recipes))
    args.background_load = list(dict.fromkeys(args.background_load))
    return args


def rotated(items: list, by: int) -> list:
    by %= len(items)
    return items[by:] + items[:by]


def run_order(recipes: list[str], loads: list[int], repeats: int) -> list[tuple[int, int, str]]:
    """(repeat, background load, recipe) in run order; each repeat rotates the recipes (and the loads) by one."""
    return [
        (repeat, load, recipe)
        for repeat in range(repeats)
        for load in rotated(loads, repeat)
        for recipe in rotated(recipes, repeat)
    ]


def load_average() -> list[float] | None:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


@contextlib.contextmanager
def background_load(count: int) -> Iterator[None]:
    """count busy single-threaded processes at normal priority for the duration; always killed on the way out."""
    processes: list[subprocess.Popen] = []
    try:
        for _ in range(count):
            processes.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdin=subprocess.DEVNULL))
        if count:
            print(f"# background load: {count} busy process(es), pids {[p.pid for p in processes]}", file=sys.stderr)
        yield
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    # Our package is imported from the working tree, whether or not it is pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def run_streaming(cmd: list[str]) -> tuple[list[str], float]:
    """Run cmd from the repo root, echoing its stdout to our stderr (keeps our stdout for the table).

    Returns its stdout lines and its wall seconds from start to exit; a failed run ends the benchmark, since half a
    comparison is worse than none.
    """
    print(f"$ {shlex.join(cmd)}", file=sys.stderr, flush=True)
    lines = []
    start = time.perf_counter()
    process = subprocess.Popen(cmd, cwd=REPO_ROOT, env=subprocess_env(), stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        for line in process.stdout:
            sys.stderr.write(line)
            lines.append(line)
        process.wait()
    except BaseException:  # Ctrl-C or a signal: the run must not outlive the benchmark
        process.kill()
        process.wait()
        raise
    finally:
        process.stdout.close()
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


def peer_command(args: argparse.Namespace, tuned: bool) -> list[str]:
    cmd = [
        sys.executable,
        str(PEER_SCRIPT),
        "--max-train-samples",
        str(args.max_train_samples),
        "--learning-rate",
        repr(args.learning_rate),
        "--mixed-precision",
        args.peer_precision,
        "--eval",
    ]
    if args.max_test_samples is not None:
        cmd += ["--max-test-samples", str(args.max_test_samples)]
    if tuned:
        cmd.append("--tuned")
    return cmd + shlex.split(args.peer_args)


def run_peer(args: argparse.Namespace, tuned: bool) -> dict:
    lines, wall_seconds = run_streaming(peer_command(args, tuned))
    result = last_json_line(lines, "recipe")
    return {
        "recipe": "tuned" if tuned else "stock",
        "train_samples_per_second": result["train_samples_per_second"],
        "train_seconds": result["train_seconds"],
        "process_seconds": round(wall_seconds, 3),
        "total_seconds": None,
        "test_accuracy": result.get("test_accuracy"),
        "test_rows": result.get("test_rows"),
        "max_length": "dyn" if result.get("padding") == "dynamic" else result.get("max_length"),
        "precision": result.get("mixed_precision"),
        "raw": result,
    }


def ours_command(args: argparse.Namespace, output_dir: str) -> list[str]:
    prefix = shlex.split(args.ours_cmd) if args.ours_cmd else [sys.executable, "-m", "pipeline.finetune"]
    caps = [] if args.max_test_samples is None else [f"data.max_eval_samples={args.max_test_samples}"]
    return prefix + [
        "--config",
        args.config,
        f"run.output_dir={output_dir}",
        f"run.name={RUN_NAME}",
        f"data.max_train_samples={args.max_train_samples}",
        f"train.learning_rate={args.learning_rate!r}",
        *caps,
        *args.override,
    ]


def run_ours(args: argparse.Namespace) -> dict:
    # A fresh output dir per run: a leftover metrics.json from an earlier run must never be read as this one's.
    with tempfile.TemporaryDirectory(prefix="compare_training_") as output_dir:
        _, wall_seconds = run_streaming(ours_command(args, output_dir))
        run = RunDir(Path(output_dir) / RUN_NAME)
        if not run.metrics_path.is_file():
            sys.exit(f"compare_training: our run finished but wrote no {run.metrics_path}")
        record = run.read_record()
    return {
        "recipe": "ours",
        "train_samples_per_second": record.throughput.train_samples_per_second,
        "train_seconds": record.timings.train_seconds,
        "process_seconds": round(wall_seconds, 3),
        "total_seconds": record.timings.total_seconds,
        "phases": record.timings.split,  # where the whole run went (issue 41: every phase timed)
        "test_accuracy": record.test.accuracy,
        "test_rows": (record.data.sizes or {}).get("test"),
        "max_length": record.tokenization.max_length,
        "precision": record.training.mixed_precision,
        "raw": record.to_dict(),
    }


def run_one(args: argparse.Namespace, recipe: str, load: int) -> dict:
    before = load_average()
    with background_load(load):
        run = run_ours(args) if recipe == "ours" else run_peer(args, tuned=recipe == "tuned")
        after = load_average()
    return {"background_load": load, "loadavg_before": before, "loadavg_after": after, **run}


def median_of(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 3) if numerator and denominator else None


def summarize(runs: list[dict], recipes: list[str], loads: list[int]) -> dict:
    """Medians per background load and recipe, the ratios against the targets, and what each recipe keeps of its
    quiet train samples/s under load (when 0 is among the loads)."""
    keys = ("train_samples_per_second", "train_seconds", "process_seconds", "total_seconds", "test_accuracy")
    by_load = []
    for load in loads:
        medians = {}
        for recipe in recipes:
            mine = [run for run in runs if run["recipe"] == recipe and run["background_load"] == load]
            medians[recipe] = {key: median_of(mine, key) for key in keys}
            medians[recipe]["max_length"] = mine[0]["max_length"]
            medians[recipe]["runs"] = len(mine)
        ours, tuned, stock = (medians.get(name, {}) for name in ("ours", "tuned", "stock"))
        accuracy_points = None
        if ours.get("test_accuracy") is not None and tuned.get("test_accuracy") is not None:
            accuracy_points = round(100 * (ours["test_accuracy"] - tuned["test_accuracy"]), 2)
        by_load.append(
            {
                "background_load": load,
                "recipes": medians,
                "ours_over_tuned_train_samples_per_second": ratio(
                    ours.get("train_samples_per_second"), tuned.get("train_samples_per_second")
                ),
                "tuned_over_ours_process_seconds": ratio(tuned.get("process_seconds"), ours.get("process_seconds")),
                "ours_minus_tuned_test_accuracy_points": accuracy_points,
                "ours_over_stock_train_samples_per_second": ratio(
                    ours.get("train_samples_per_second"), stock.get("train_samples_per_second")
                ),
            }
        )
    kept = {}
    quiet = next((entry["recipes"] for entry in by_load if entry["background_load"] == 0), None)
    if quiet is not None:
        for entry in by_load:
            if entry["background_load"] == 0:
                continue
            kept[str(entry["background_load"])] = {
                recipe: ratio(medians["train_samples_per_second"], quiet[recipe]["train_samples_per_second"])
                for recipe, medians in entry["recipes"].items()
            }
    return {
        "by_background_load": by_load,
        "kept_of_quiet_train_samples_per_second": kept,
        "targets": {
            "ours_over_tuned_train_samples_per_second": TARGET_TRAIN_SPEEDUP,
            "tuned_over_ours_process_seconds": TARGET_WHOLE_RUN_SPEEDUP,
            "ours_minus_tuned_test_accuracy_points": TARGET_ACCURACY_POINTS,
        },
    }


def fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def verdict(value: float | None, target: float) -> str:
    return "" if value is None else ("  met" if value >= target else "  not met")


def print_report(runs: list[dict], summary: dict, repeats: int) -> None:
    header = (
        f"{'recipe':<13} {'repeat':>6} {'bg load':>7} {'load avg':>8} {'train samples/s':>15} {'train s':>8} "
        f"{'whole run s':>11} {'max_len':>7} {'precision':>9} {'test rows':>9} {'test acc':>8}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        loadavg = run["loadavg_before"][0] if run["loadavg_before"] else None
        print(
            f"{LABELS[run['recipe']]:<13} {run['repeat']:>6} {run['background_load']:>7} {fmt(loadavg, 2):>8} "
            f"{fmt(run['train_samples_per_second'], 2):>15} {fmt(run['train_seconds'], 1):>8} "
            f"{fmt(run['process_seconds'], 1):>11} {run['max_length'] or '-'!s:>7} {run['precision'] or '-'!s:>9} "
            f"{run['test_rows'] or '-'!s:>9} {fmt(run['test_accuracy'], 4):>8}"
        )
        if run.get("phases"):
            print(f"{'':<13} phases: {run['phases']}")
    label = f"median of {repeats} repeats" if repeats > 1 else "one run each"
    for entry in summary["by_background_load"]:
        load = entry["background_load"]
        print()
        beside = f"with {load} busy background process(es)" if load else "no background load"
        print(f"{beside.capitalize()}, {label}:")
        for recipe, medians in entry["recipes"].items():
            extra = ""
            if medians.get("total_seconds") is not None:
                extra = f" ({fmt(medians['total_seconds'], 1)} s by its metrics.json)"
            print(
                f"  {LABELS[recipe]:<13} {fmt(medians['train_samples_per_second'], 2):>7} train samples/s, "
                f"whole run {fmt(medians['process_seconds'], 1)} s{extra}, "
                f"test accuracy {fmt(medians['test_accuracy'], 4)}"
            )
        train = entry["ours_over_tuned_train_samples_per_second"]
        whole = entry["tuned_over_ours_process_seconds"]
        points = entry["ours_minus_tuned_test_accuracy_points"]
        if train is not None:
            print(
                f"  ours / tuned train samples/s:        {fmt(train, 2)}x   "
                f"(target >= {TARGET_TRAIN_SPEEDUP}x){verdict(train, TARGET_TRAIN_SPEEDUP)}"
            )
        if whole is not None:
            print(
                f"  tuned / ours whole-run seconds:      {fmt(whole, 2)}x   "
                f"(target >= {TARGET_WHOLE_RUN_SPEEDUP}x){verdict(whole, TARGET_WHOLE_RUN_SPEEDUP)}"
            )
        if points is not None:
            print(
                f"  ours - tuned test accuracy:          {points:+.2f} points "
                f"(target >= {TARGET_ACCURACY_POINTS}){verdict(points, TARGET_ACCURACY_POINTS)}"
            )
        if entry["ours_over_stock_train_samples_per_second"] is not None:
            print(
                f"  ours / stock train samples/s:        {fmt(entry['ours_over_stock_train_samples_per_second'], 2)}x"
            )
    for load, kept in summary["kept_of_quiet_train_samples_per_second"].items():
        print()
        for recipe, share in kept.items():
            if share is not None:
                print(
                    f"With {load} busy process(es) beside it, {LABELS[recipe]} keeps {100 * share:.0f}% "
                    "of its quiet train samples/s"
                )


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    # A plain `kill` unwinds like Ctrl-C does, so the run in progress and the background load are ended too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    loadavg_at_start = load_average()
    runs = []
    for repeat, load, recipe in run_order(args.recipes, args.background_load, args.repeats):
        runs.append({"repeat": repeat, **run_one(args, recipe, load)})
    summary = summarize(runs, args.recipes, args.background_load)
    print_report(runs, summary, args.repeats)
    if args.json_out:
        report = {
            "recipes": args.recipes,
            "background_load": args.background_load,
            "loadavg_at_start": loadavg_at_start,
            "loadavg_at_end": load_average(),
            "cpu_count": os.cpu_count(),
            "max_train_samples": args.max_train_samples,
            "max_test_samples": args.max_test_samples,
            "learning_rate": args.learning_rate,
            "config": args.config,
            "overrides": args.override,
            "peer_args": args.peer_args,
            "repeats": args.repeats,
            "runs": runs,
            "summary": summary,
        }
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    return summary


if __name__ == "__main__":
    main()
