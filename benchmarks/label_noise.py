"""The label audit on injected noise (issue 44): which flipped labels does each signal find?

    nice -n 5 python benchmarks/label_noise.py --out /tmp/noise            # MiniLM and the encoder, ~15 min on 2 cores
    python benchmarks/label_noise.py --rows 400 --models encoder --out /tmp/smoke   # a smoke run

From a seeded shuffle of the train file take --rows rows (default 5,000) and flip --share of them (default 5%,
seeded, each to another class drawn uniformly), written to <out>/train_noisy.csv with the file's header. Then
`python -m pipeline.finetune` trains on it with `eval.label_audit=on` (validation carved from those rows; tested on
the test file): MiniLM for one epoch (configs/ag_news_minilm.yaml) and the from-scratch encoder
(configs/ag_news_encoder_local.yaml). A clean copy (nothing flipped) runs too unless --skip-clean.

Scored over the train and validation rows (every row the run audited that carried a label we wrote): precision and
recall of label_issues.csv's flagged rows against the flipped ones (the tool's own cut-off), and, for every signal
in label_issues.npz, precision at k = the number flipped (rows ranked by one minus the given label's probability,
the tool's own ranking) and precision and recall at that signal's confident-learning cut-off; `validation/model` is
the trained model's probabilities on the carved validation rows (the model-probabilities signal).
The last stdout line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from runs import REPO_ROOT, finetune_run

from pipeline.run.directory import RunDir
from pipeline.scoring.label_signals import combine, default_method, flag

SHARED = REPO_ROOT.parent / "shared"
CONFIGS = {"minilm": "configs/ag_news_minilm.yaml", "encoder": "configs/ag_news_encoder_local.yaml"}
CLASSES = 4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-file", default=str(SHARED / "data" / "ag_news" / "train_20k.csv"))
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--share", type=float, default=0.05, help="share of rows whose label is flipped")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--skip-clean", action="store_true", help="no run on the unflipped rows")
    parser.add_argument("--out", default=None, help="folder for the files and runs (default: a new temp dir)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--evaluate-only", action="store_true", help="score the runs already in --out, train nothing")
    return parser.parse_args(argv)


def noisy_file(args: argparse.Namespace, out: Path, share: float, name: str) -> tuple[Path, dict[str, int]]:
    """The sample with `share` of its labels flipped; returns the file and {row_id: original class index 0-3} of
    the flipped rows (a row's id is its line: the header is line 1)."""
    with open(args.train_file, newline="", encoding="utf-8") as handle:
        header, *body = list(csv.reader(handle))
    rng = np.random.default_rng(args.seed)
    rows = [body[index] for index in rng.permutation(len(body))[: args.rows]]
    flipped = {}
    for index in rng.choice(len(rows), size=round(share * len(rows)), replace=False):
        original = int(rows[index][0]) - 1
        rows[index][0] = str(1 + (original + rng.integers(1, CLASSES)) % CLASSES)  # uniform over the others
        flipped[str(index + 2)] = original
    path = out / f"{name}.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *rows])
    return path, flipped


def precision_recall(chosen: set[str], flipped: set[str]) -> dict[str, float | int]:
    hits = len(chosen & flipped)
    return {
        "flagged": len(chosen),
        "precision": round(hits / len(chosen), 4) if chosen else None,
        "recall": round(hits / len(flipped), 4) if flipped else None,
    }


def signal_figures(ids: np.ndarray, labels: np.ndarray, probabilities: np.ndarray, flipped: set[str]) -> dict:
    """Precision at k (k = flipped rows among these), and precision and recall at the tool's cut-off."""
    scored = ~np.isnan(probabilities).any(axis=1)
    lead = 1.0 - np.nan_to_num(probabilities)[np.arange(len(labels)), labels]  # self-confidence, as the tool ranks
    lead[~scored] = -np.inf
    flipped = flipped & set(ids.tolist())  # the flipped rows among these
    k = len(flipped)
    top = set(ids[np.argsort(-lead, kind="stable")[:k]].tolist())
    at_cut = set(ids[flag(labels, probabilities, default_method()).rows].tolist())
    return {
        "precision_at_k": round(len(top & flipped) / k, 4) if k else None,
        "k": k,
        **precision_recall(at_cut, flipped),
    }


def evaluate_run(run_path: Path, flipped: dict[str, int]) -> dict:
    """Every signal's figures on train (and validation's model signal), and the tool's own flags."""
    arrays = np.load(run_path / "label_issues.npz")
    wrong = set(flipped)
    figures: dict = {}
    ids, labels = arrays["train/row_id"], arrays["train/label"]
    signals = {name.split("/", 1)[1]: arrays[name] for name in arrays.files if name.startswith("train/")}
    signals = {name: value for name, value in signals.items() if name not in ("row_id", "label")}
    if len(signals) > 1:
        signals["combined"] = combine(list(signals.values()))
    for name, probabilities in signals.items():
        figures[f"train/{name}"] = signal_figures(ids, labels, probabilities, wrong)
    if "validation/model" in arrays.files:
        figures["validation/model"] = signal_figures(
            arrays["validation/row_id"], arrays["validation/label"], arrays["validation/model"], wrong
        )
    with open(run_path / "label_issues.csv", newline="", encoding="utf-8") as handle:
        issues = [row for row in csv.DictReader(handle) if row["split"] in ("train", "validation")]
    audited = wrong & set(ids.tolist()) | _validation_ids(arrays, wrong)
    figures["tool"] = precision_recall({row["id"] for row in issues}, audited)
    return figures


def _validation_ids(arrays, wrong: set[str]) -> set[str]:
    return wrong & set(arrays["validation/row_id"].tolist()) if "validation/row_id" in arrays.files else set()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="label_noise_"))
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {"rows": args.rows, "share": args.share, "seed": args.seed}
    files = {"noisy": noisy_file(args, out, args.share, "train_noisy")}
    if not args.skip_clean:
        files["clean"] = noisy_file(args, out, 0.0, "train_clean")
    for kind, (path, flipped) in files.items():  # every noisy run first: the figures the issue asks for
        for model in args.models:
            name = f"{model}_{kind}"
            overrides = [
                f"data.train_file={path}",
                "data.max_train_samples=null",
                "eval.label_audit=on",
                *args.override,
            ]
            run = RunDir(out / name) if args.evaluate_only else finetune_run(CONFIGS[model], out, name, overrides)
            record = run.read_record()
            figures = evaluate_run(run.path, flipped) if flipped else {}
            audit = record.label_audit
            results[name] = {
                "flipped": len(flipped),
                "test_accuracy": record.test.accuracy,
                "total_seconds": record.timings.total_seconds,
                "audit_seconds": audit.seconds if audit else None,
                "flagged": {split: part["flagged"] for split, part in (audit.splits or {}).items()} if audit else None,
                "near_duplicates": {split: part["near_duplicates"] for split, part in (audit.splits or {}).items()}
                if audit
                else None,
                **figures,
            }
            print(json.dumps({name: results[name]}), file=sys.stderr, flush=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
