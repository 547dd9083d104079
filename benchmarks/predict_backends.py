"""Prediction backends side by side: transformers.pipeline, PyTorch fp32, PyTorch bf16 (autocast, and a bf16 copy of
the weights), ONNX Runtime fp32 and int8, OpenVINO (bf16 where the CPU has it) and OpenVINO int8, and `--backend
auto`, on the same texts, in one process.

    python -m pipeline.export --model runs/minilm_5k --quantize int8        # first: the run's onnx/ folder
    python benchmarks/predict_backends.py --model runs/minilm_5k --input ../shared/data/ag_news/test.csv \\
        --column-names class_index,title,description --gold-column class_index

The input is read with the command's own reader and each row's text built the way the run was trained. Every
backend but the stock pipeline goes through `Predictor.infer` (length-sorted batches padded to their own longest
row, as `pipeline.predict` runs): PyTorch fp32; PyTorch bf16 autocast (the command's bf16 path until it ran a bf16
copy of the weights, the reference of the `auto` ratio) and bf16 weights (what `--backend torch` runs now where the
CPU has native bf16), both with near-ties rechecked in fp32 as the command does; the run's exported models, whatever
their verification said (refused ones are read from onnx/refused/ and marked so), each as prediction runs it; and
`--backend auto` (what the command would run). OpenVINO int8 computes the rest in f32 as prediction runs it, which
is also what a CPU without bf16 does: the int8 ratio compares it with PyTorch fp32. The stock pipeline is `pipeline("text-classification", model=<model dir>,
batch_size=64, truncation=True, max_length=<the run's length>)`. Each backend labels a few rows first so that
one-off start-up costs are not timed; with `--rounds N` every backend runs N times, the order alternating, and the
best rate counts.

Printed: rows/s of each, label agreement with PyTorch fp32, accuracy against `--gold-column` when given, the ratios
`auto / bf16 autocast` and `int8 / torch fp32`, and a last stdout line with everything as JSON. Figures on a shared
machine move with whatever else runs: compare the rows of one invocation, and check `uptime` first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# Set before transformers is imported: it reads them once, at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from pipeline.common.hardware import cpu_name, cpu_supports_bf16  # noqa: E402
from pipeline.data.tables import open_table  # noqa: E402
from pipeline.data.text import resolve_columns  # noqa: E402
from pipeline.export import verify  # noqa: E402
from pipeline.predict import Predictor, resolve_model_source  # noqa: E402
from pipeline.predict.runtime import onnx_threads  # noqa: E402
from pipeline.predict.torch_backend import TorchBackend  # noqa: E402
from pipeline.run.directory import RunDir  # noqa: E402
from pipeline.run.exports import VARIANTS, backend_name, read_export_record  # noqa: E402

WARMUP_ROWS = 64


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="run directory (with onnx/ from python -m pipeline.export)")
    parser.add_argument("--input", default=str(REPO_ROOT.parent / "shared/data/ag_news/test.csv"), help="CSV/TSV/...")
    parser.add_argument("--column-names", help="names for a header-less input, e.g. class_index,title,description")
    parser.add_argument("--text-columns", help="override the run's text columns, e.g. title,description")
    parser.add_argument(
        "--gold-column",
        help="column with the gold label (class name, or integer id counted from "
        "the run's data.label_index_base), for accuracy",
    )
    parser.add_argument("--max-rows", type=int, default=None, help="only the first N rows (smoke runs)")
    parser.add_argument("--batch-size", type=int, default=128, help="ours (default 128, the command's)")
    parser.add_argument("--stock-batch-size", type=int, default=64, help="transformers.pipeline's (default 64)")
    parser.add_argument("--rounds", type=int, default=1, help="timed passes per backend, best counts (default 1)")
    parser.add_argument("--skip", default="", help="comma-separated backends to leave out, e.g. pipeline")
    return parser.parse_args(argv)


def read_rows(args: argparse.Namespace, predictor: Predictor) -> tuple[list[str], list[str] | None]:
    """The rows' texts exactly as the command builds them, and the gold column's values."""
    spec = predictor.text_spec
    column_names = args.column_names.split(",") if args.column_names else None
    texts, gold = [], []
    with open_table(args.input, None, column_names, "utf-8", None, "--format", "--encoding") as table:
        positions = resolve_columns(table.header, spec.columns, table.name, "--text-columns")
        gold_position = (
            resolve_columns(table.header, [args.gold_column], table.name, "--gold-column")[0]
            if args.gold_column
            else None
        )
        for chunk in table.chunks:
            for record in chunk.records:
                texts.append(spec.text_of([record[p] for p in positions]))
                if gold_position is not None:
                    gold.append(str(record[gold_position]))
    keep = [i for i, text in enumerate(texts) if text.strip()][: args.max_rows]
    return [texts[i] for i in keep], ([gold[i] for i in keep] if args.gold_column else None)


def gold_ids(gold: list[str] | None, labels: list[str], run_dir: Path | None) -> np.ndarray | None:
    if gold is None:
        return None
    base = 0
    if run_dir is not None:
        base = int((RunDir(run_dir).read_config().get("data") or {}).get("label_index_base") or 0)
    ids = []
    for value in gold:
        if value in labels:
            ids.append(labels.index(value))
        elif value.strip().lstrip("-").isdigit():
            ids.append(int(value) - base)
        else:
            ids.append(-1)
    return np.array(ids)


def export_predictor(reference: Predictor, run_dir: Path, variant: str) -> tuple[Predictor | None, str]:
    """A predictor on the run's exported model `variant`, verified or not (the status is reported alongside)."""
    record = read_export_record(run_dir)
    if record is None or variant not in record["variants"]:
        return None, "not exported"
    entry = record["variants"][variant]
    predictor = verify.export_predictor(reference, variant, RunDir(run_dir).export_dir / entry["file"], "benchmark")
    precision = predictor.backend.precision
    return predictor, entry.get("status", "?") + (f", {precision}" if precision else "")


class StockPipeline:
    """transformers.pipeline("text-classification") as its documentation uses it, truncating at the run's length."""

    def __init__(self, model_dir: Path, labels: list[str], max_length: int, batch_size: int):
        import transformers

        import pipeline.models.encoder  # noqa: F401 -- registers the from-scratch encoder

        self.pipe = transformers.pipeline("text-classification", model=str(model_dir), device="cpu")
        self.labels, self.max_length, self.batch_size = labels, max_length, batch_size

    def infer(self, texts: list[str]) -> tuple[np.ndarray, None]:
        outputs = self.pipe(texts, batch_size=self.batch_size, truncation=True, max_length=self.max_length)
        return np.array([self.labels.index(output["label"]) for output in outputs]), None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    source = resolve_model_source(args.model).with_text_columns(
        args.text_columns.split(",") if args.text_columns else None
    )
    if source.run_dir is None:
        raise SystemExit("error: --model must be a run directory (its onnx/ folder holds the exports)")
    fp32 = Predictor.from_source(source, device="cpu", precision="fp32", backend="torch", batch_size=args.batch_size)
    texts, gold = read_rows(args, fp32)
    gold = gold_ids(gold, fp32.labels, source.run_dir)
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}

    runners: dict[str, Any] = {}
    notes: dict[str, str] = {}
    if "pipeline" not in skip:
        runners["transformers.pipeline"] = StockPipeline(
            source.model_dir, fp32.labels, fp32.max_length, args.stock_batch_size
        )
        notes["transformers.pipeline"] = "fp32, stock"
    runners["torch fp32"] = fp32
    # The project's PyTorch bf16 path before it ran a bf16 copy of the weights: the reference of the 1.5x target.
    autocast = TorchBackend(fp32.model, fp32.device, bf16_weights=False)
    runners["torch bf16 autocast"] = dataclasses.replace(fp32, compute_dtype=torch.bfloat16, backend=autocast)
    runners["torch bf16 weights"] = dataclasses.replace(fp32, compute_dtype=torch.bfloat16)
    bf16_note = "native bf16" if cpu_supports_bf16() else "emulated bf16 (no native support)"
    notes["torch bf16 autocast"] = notes["torch bf16 weights"] = bf16_note
    for variant in VARIANTS:
        name = backend_name(variant).replace("-", " ")
        predictor, status = export_predictor(fp32, source.run_dir, variant)
        if predictor is not None:
            runners[name] = predictor
            notes[name] = status
    auto = Predictor.from_source(source, device="cpu", backend="auto", batch_size=args.batch_size)
    runners["--backend auto"] = auto
    notes["--backend auto"] = f"{auto.backend_name}" + (f" ({auto.precision})" if auto.backend_name == "torch" else "")

    print(
        f"{len(texts)} rows from {args.input}; max length {fp32.max_length}; batch {args.batch_size}; "
        f"torch threads {torch.get_num_threads()}, onnxruntime/openvino threads {onnx_threads()}; {cpu_name()}",
        file=sys.stderr,
    )
    for runner in runners.values():
        runner.infer(texts[:WARMUP_ROWS])
    rates: dict[str, float] = {}
    labels: dict[str, np.ndarray] = {}
    names = list(runners)
    for round_index in range(max(1, args.rounds)):
        for name in names if round_index % 2 == 0 else list(reversed(names)):
            start = time.perf_counter()
            ids, _ = runners[name].infer(texts)
            rate = len(texts) / (time.perf_counter() - start)
            rates[name] = max(rates.get(name, 0.0), rate)
            labels.setdefault(name, ids)
            print(f"  {name}: {rate:.1f} rows/s", file=sys.stderr)

    reference = labels["torch fp32"]
    results = {}
    print(f"\n{'backend':<24}{'rows/s':>9}{'agreement':>11}{'accuracy':>10}  note")
    for name in names:
        agreement = float((labels[name] == reference).mean())
        accuracy = float((labels[name] == gold)[gold >= 0].mean()) if gold is not None else None
        results[name] = {
            "rows_per_second": rates[name],
            "agreement_with_torch_fp32": agreement,
            "accuracy": accuracy,
            "note": notes.get(name, ""),
        }
        accuracy_text = f"{100 * accuracy:.2f}%" if accuracy is not None else "-"
        print(f"{name:<24}{rates[name]:>9.1f}{100 * agreement:>10.2f}%{accuracy_text:>10}  {notes.get(name, '')}")
    ratios = {"auto / torch bf16 autocast": rates["--backend auto"] / rates["torch bf16 autocast"]}
    for name in ("onnx int8", "openvino int8"):
        if name in rates:
            ratios[f"{name} / torch fp32"] = rates[name] / rates["torch fp32"]
    if "transformers.pipeline" in rates:
        ratios["auto / transformers.pipeline"] = rates["--backend auto"] / rates["transformers.pipeline"]
    print()
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x")
    print(
        json.dumps(
            {
                "rows": len(texts),
                "machine": cpu_name(),
                "threads": {"torch": torch.get_num_threads(), "onnxruntime and openvino": onnx_threads()},
                "backends": results,
                "ratios": ratios,
                "load_average": os.getloadavg(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
