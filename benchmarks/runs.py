"""One fine-tuning run as a fresh, offline subprocess, for the benchmarks that train (imbalance.py, multilabel.py).

metrics = finetune_run("configs/ag_news_minilm.yaml", out, "plain", ["train.epochs=1"]).read_record()
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pipeline.run.directory import RunDir

REPO_ROOT = Path(__file__).resolve().parents[1]


def offline_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def finetune_run(config: str, out: Path, name: str, overrides: list[str]) -> RunDir:
    """`python -m pipeline.finetune --config <config>` into <out>/<name> (replaced if there), without the
    prediction-speed figure; its log goes to stderr."""
    command = [sys.executable, "-m", "pipeline.finetune", "--config", config, f"run.output_dir={out}"]
    command += [f"run.name={name}", "run.overwrite=true", "eval.predict_speed_rows=0", *overrides]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, cwd=REPO_ROOT, env=offline_env(), check=True, stdout=sys.stderr)
    return RunDir(out / name)
