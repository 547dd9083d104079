"""Class weights on an imbalanced AG News: macro-F1 gained against majority-class accuracy lost; and calibration.

    python benchmarks/imbalance.py                       # both imbalance runs (about 15 minutes on 2 cores)
    python benchmarks/imbalance.py --calibration-rows 5000 --skip-imbalance   # the calibration check alone

Imbalance: from the train file keep every World and Sports row and a seeded 5% of Business and Sci/Tech (so the
largest / smallest class ratio is about 20), written to <out>/train_imbalanced.csv with the file's header. Then
`python -m pipeline.finetune --config configs/ag_news_minilm.yaml` trains MiniLM on it for one epoch twice (data.
max_train_samples unset; validation carved from the subset; tested on every row of the test file): once as is and
once with `train.class_weights=balanced`. Printed for both: test macro-F1, balanced accuracy, accuracy, and the
accuracy on the majority classes' test rows (World and Sports); then the gain in macro-F1 and the loss in majority
accuracy, in points, against the acceptance bar (gain >= 3 points, loss <= 1 point).

Calibration (--calibration-rows N): one more run on N rows of the unmodified train file (1 epoch); printed: the
fitted temperature, expected calibration error (15 bins) before and after on validation and test, and the test
accuracy of the calibrated model against the argmax of the uncalibrated one (they must be equal), and, for
reference, the lowest test ECE that any single temperature reaches when fitted on the test rows themselves, and the
ECE that a perfectly calibrated model with the same confidences would measure on as many rows (sampling noise).

Each run is a fresh subprocess writing <out>/<name>/ (kept, with its report); the last stdout line is one JSON
object with every figure.
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

from pipeline.run.directory import PROBABILITY_PREFIX, RunDir
from pipeline.run.record import RunRecord
from pipeline.scoring.calibration import expected_calibration_error

SHARED = REPO_ROOT.parent / "shared"
MAJORITY = ("World", "Sports")  # kept whole
MINORITY_IDS = ("3", "4")  # Business, Sci/Tech: class_index values subsampled
GAIN_POINTS, LOSS_POINTS = 3.0, 1.0  # the acceptance bar


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/ag_news_minilm.yaml", help="relative to the repo root")
    parser.add_argument("--train-file", default=str(SHARED / "data" / "ag_news" / "train_20k.csv"))
    parser.add_argument("--share", type=float, default=0.05, help="share of Business and Sci/Tech rows kept")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", default=None, help="folder for the subset and the runs (default: a new temp dir)")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra config override for every run; repeatable",
    )
    parser.add_argument("--skip-imbalance", action="store_true", help="do not run the two imbalance runs")
    parser.add_argument(
        "--calibration-rows",
        type=int,
        default=0,
        help="also run the calibration check on this many train rows (0: skip)",
    )
    return parser.parse_args(argv)


def imbalanced_subset(train_file: Path, out: Path, share: float, seed: int) -> tuple[Path, dict[str, int]]:
    """Every row of the majority classes, a seeded `share` of each minority class, in file order."""
    with open(train_file, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    rng = np.random.default_rng(seed)
    keep = np.ones(len(body), dtype=bool)
    for class_id in MINORITY_IDS:
        members = np.flatnonzero([row[0] == class_id for row in body])
        kept = rng.choice(members, size=round(share * len(members)), replace=False)
        keep[members] = False
        keep[kept] = True
    subset = out / "train_imbalanced.csv"
    with open(subset, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(row for row, kept in zip(body, keep) if kept)
    counts: dict[str, int] = {}
    for row, kept in zip(body, keep):
        if kept:
            counts[row[0]] = counts.get(row[0], 0) + 1
    return subset, counts


def finetune(config: str, out: Path, name: str, overrides: list[str]) -> RunRecord:
    """One one-epoch run as a fresh subprocess; its metrics.json."""
    return finetune_run(config, out, name, ["train.epochs=1", *overrides]).read_record()


def majority_accuracy(run_dir: Path) -> float:
    """Accuracy on the test rows whose gold class is a majority class."""
    with open(RunDir(run_dir).predictions_path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["label"] in MAJORITY]
    return sum(row["predicted"] == row["label"] for row in rows) / len(rows)


def imbalance_figures(args: argparse.Namespace, out: Path) -> dict:
    subset, counts = imbalanced_subset(Path(args.train_file), out, args.share, args.seed)
    print(f"subset {subset}: rows per class_index {counts}", file=sys.stderr)
    figures = {"subset_rows": counts}
    for name, extra in (("plain", []), ("balanced", ["train.class_weights=balanced"])):
        metrics = finetune(
            args.config,
            out,
            f"imbalance_{name}",
            [f"data.train_file={subset}", "data.max_train_samples=null", *extra, *args.override],
        )
        test = metrics.test
        figures[name] = {
            "macro_f1": test.macro_f1,
            "balanced_accuracy": test.balanced_accuracy,
            "accuracy": test.accuracy,
            "majority_accuracy": majority_accuracy(out / f"imbalance_{name}"),
            "test_rows": test.num_samples,
            "class_weights": metrics.training.class_weights,
            "train_seconds": metrics.timings.train_seconds,
        }
    plain, balanced = figures["plain"], figures["balanced"]
    gain = 100 * (balanced["macro_f1"] - plain["macro_f1"])
    loss = 100 * (plain["majority_accuracy"] - balanced["majority_accuracy"])
    figures.update(
        macro_f1_gain_points=gain,
        majority_accuracy_loss_points=loss,
        passes=gain >= GAIN_POINTS and loss <= LOSS_POINTS,
    )
    print(f"\n{'run':<10} {'macro-F1':>9} {'bal. acc':>9} {'accuracy':>9} {'majority acc':>13}")
    for name in ("plain", "balanced"):
        row = figures[name]
        print(
            f"{name:<10} {row['macro_f1']:>9.4f} {row['balanced_accuracy']:>9.4f} {row['accuracy']:>9.4f} "
            f"{row['majority_accuracy']:>13.4f}"
        )
    print(
        f"macro-F1 gain {gain:+.2f} points (bar >= {GAIN_POINTS:g}); majority accuracy lost {loss:+.2f} points "
        f"(bar <= {LOSS_POINTS:g}): {'PASS' if figures['passes'] else 'FAIL'}"
    )
    return figures


def best_single_temperature(run_dir: Path, temperature: float) -> tuple[float, float]:
    """A reference, not a method: (test ECE, temperature) of the one temperature that does best on the test rows
    themselves, searched over a grid. The calibrated probabilities in test_predictions.csv are softmax(z / T), so
    their logs divided by s are the logits under temperature T * s, up to a constant per row."""
    probabilities, labels = test_probabilities(run_dir)
    log_probabilities = np.log(np.clip(probabilities, 1e-9, None))  # (N, C)
    best = (float("inf"), temperature)
    for scale in np.geomspace(0.5, 2.0, 281):
        scaled = np.exp(log_probabilities / scale - (log_probabilities / scale).max(axis=1, keepdims=True))
        ece = expected_calibration_error(scaled / scaled.sum(axis=1, keepdims=True), labels)
        best = min(best, (ece, float(temperature * scale)))
    return best


def test_probabilities(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """(N, C) calibrated test probabilities and (N,) gold class ids from the run's test_predictions.csv."""
    with open(RunDir(run_dir).predictions_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    classes = [name[len(PROBABILITY_PREFIX) :] for name in rows[0] if name.startswith(PROBABILITY_PREFIX)]
    probabilities = np.array([[float(row[PROBABILITY_PREFIX + name]) for name in classes] for row in rows])
    return probabilities, np.array([classes.index(row["label"]) for row in rows])


def ece_noise_floor(probabilities: np.ndarray, draws: int = 300, seed: int = 0) -> tuple[float, float]:
    """(mean, 90th percentile) of the ECE that a *perfectly* calibrated model with these confidences would measure on
    this many rows: each row's outcome drawn as right with probability its top probability. ECE is a sum of
    absolute bin gaps, so sampling noise alone makes it positive; a bar below this floor cannot be seen."""
    rng = np.random.default_rng(seed)
    confidence = probabilities.max(axis=1)
    top = probabilities.argmax(axis=1)
    eces = []
    for _ in range(draws):
        right = rng.random(len(confidence)) < confidence
        # a gold label that is the top class exactly when the draw says right
        labels = np.where(right, top, (top + 1) % probabilities.shape[1])
        eces.append(expected_calibration_error(probabilities, labels))
    return float(np.mean(eces)), float(np.quantile(eces, 0.9))


def calibration_figures(args: argparse.Namespace, out: Path) -> dict:
    metrics = finetune(
        args.config,
        out,
        "calibration",
        [f"data.train_file={args.train_file}", f"data.max_train_samples={args.calibration_rows}", *args.override],
    )
    calibration = metrics.calibration
    figures = {
        "temperature": calibration.temperature,
        "ece": calibration.ece,
        "test_accuracy": metrics.test.accuracy,
        "rows": args.calibration_rows,
    }
    for split in ("validation", "test"):
        before, after = calibration.before_after("ece", split)
        print(f"calibration {split}: ECE {before:.4f} -> {after:.4f} ({after / before:.2f}x)")
    print(
        f"temperature {calibration.temperature:.3f}; test accuracy {metrics.test.accuracy:.4f} "
        "(temperature scaling keeps every argmax)"
    )
    figures["best_test_ece"], figures["best_test_temperature"] = best_single_temperature(
        out / "calibration", calibration.temperature
    )
    print(
        f"for reference, the best any one temperature does when fitted on test itself: ECE "
        f"{figures['best_test_ece']:.4f} at {figures['best_test_temperature']:.3f}"
    )
    figures["noise_floor_mean"], figures["noise_floor_90"] = ece_noise_floor(test_probabilities(out / "calibration")[0])
    print(
        f"sampling noise: a perfectly calibrated model with these confidences would measure a test ECE of "
        f"{figures['noise_floor_mean']:.4f} on average (90% of draws under {figures['noise_floor_90']:.4f}); "
        f"the bar is {calibration['ece']['test']['before'] / 2:.4f}"
    )
    figures["passes"] = calibration["ece"]["test"]["after"] <= calibration["ece"]["test"]["before"] / 2
    return figures


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="imbalance_"))
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    if not args.skip_imbalance:
        figures["imbalance"] = imbalance_figures(args, out)
    if args.calibration_rows:
        figures["calibration"] = calibration_figures(args, out)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
