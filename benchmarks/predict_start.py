"""The whole `python -m pipeline.predict` process against its own labelling time: how much of it is start-up.

    python benchmarks/predict_start.py --model runs/ag_news_distill --input ../shared/data/ag_news/test.csv

Runs the command `--repeats` times on the input (in a fresh process each time, as a user does) and times each
whole process from outside. The command's last line gives its labelling rate (rows read, labelled and written,
over those seconds): rows / rate is the model work. Printed per run: whole seconds, model-work seconds and their
ratio (target: at most 2x). One more run under `python -X importtime` gives the import of `pipeline.predict.cli`
and the heavy libraries the process loaded (torch, transformers, ONNX Runtime, OpenVINO, scikit-learn). The last
stdout line is one JSON object with the figures. Run it on a quiet machine: two busy processes on two cores
contend.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "onnxruntime", "openvino", "sklearn", "pandas", "datasets", "matplotlib")
RATE = re.compile(r"labelled (\d+) rows? -> .* \((\d+) rows/s\)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="run directory")
    parser.add_argument("--input", default=str(REPO_ROOT.parent / "shared/data/ag_news/test.csv"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", default="auto", help="the command's --backend")
    return parser.parse_args(argv)


def command(args: argparse.Namespace, output: Path, *python_options: str) -> list[str]:
    return [
        sys.executable,
        *python_options,
        "-m",
        "pipeline.predict",
        "--model",
        args.model,
        "--input",
        args.input,
        "--output",
        str(output),
        "--overwrite",
        "--no-progress",
        "--backend",
        args.backend,
    ]


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}


def timed_run(args: argparse.Namespace, output: Path) -> dict:
    start = time.perf_counter()
    done = subprocess.run(command(args, output), env=environment(), capture_output=True, text=True, check=True)
    whole = time.perf_counter() - start
    match = RATE.search(done.stderr)
    if match is None:
        raise SystemExit(f"no 'labelled N rows (R rows/s)' line in:\n{done.stderr}")
    rows, rate = int(match.group(1)), int(match.group(2))
    backend = next((line for line in done.stderr.splitlines() if line.startswith("backend ")), "")
    return {
        "whole_s": whole,
        "model_work_s": rows / rate,
        "ratio": whole * rate / rows,
        "rows": rows,
        "backend": backend,
    }


def import_profile(args: argparse.Namespace, output: Path) -> dict:
    """Import seconds: of the command's package (`pipeline.predict`, what `-m` loads first) and of every top-level
    import the process made, lazy ones included; and which heavy libraries it imported."""
    done = subprocess.run(
        command(args, output, "-X", "importtime"), env=environment(), capture_output=True, text=True, check=True
    )
    cumulative, top_level = {}, 0.0
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            seconds, name = int(parts[1]) / 1e6, parts[2]
            cumulative.setdefault(name.strip(), seconds)
            if not name.startswith("   "):  # one space after the bar: imported by no other module
                top_level += seconds
    return {
        "package_import_s": cumulative.get("pipeline.predict"),
        "all_imports_s": top_level,
        "heavy_imported": {name: round(cumulative[name], 2) for name in HEAVY if name in cumulative},
    }


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "predictions.csv"
        runs = [timed_run(args, output) for _ in range(args.repeats)]
        profile = import_profile(args, output)
    print(runs[0]["backend"])
    for number, run in enumerate(runs, 1):
        print(
            f"run {number}: whole {run['whole_s']:.2f} s, model work {run['model_work_s']:.2f} s "
            f"({run['rows']} rows), {run['ratio']:.2f}x"
        )
    ratio = statistics.median(run["ratio"] for run in runs)
    print(f"median: {ratio:.2f}x the model work (target <= 2x)")
    print(
        f"imports: pipeline.predict {profile['package_import_s']:.2f} s, all {profile['all_imports_s']:.2f} s; "
        f"heavy modules (cumulative s): {profile['heavy_imported']}"
    )
    print(json.dumps({"runs": runs, "median_ratio": ratio, **profile}))


if __name__ == "__main__":
    main()
