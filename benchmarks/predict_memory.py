"""Peak memory of `python -m pipeline.predict` must not grow with the number of rows.

    python benchmarks/predict_memory.py                          # 100,000 and 1,000,000 rows (several minutes)
    python benchmarks/predict_memory.py --rows 2000,20000        # smoke run
    python benchmarks/predict_memory.py --backend onnx           # through ONNX Runtime (needs the [onnx] extra)

It writes a tiny random BERT run directory (2 layers, hidden 32, the shared MiniLM vocabulary) and CSVs of
N rows made by repeating the AG News test rows (streamed out, in --workdir), then runs the command on each
in its own subprocess and reads that process's peak resident memory (ru_maxrss from wait4). Targets: the
largest input under 2 GiB, and within 20% of the smallest one's peak. A tiny model keeps the run short and
makes any growth with the row count stand out instead of hiding under the weights. With `--backend onnx` the
tiny run is first exported by `python -m pipeline.export` (verified on 2,000 AG News rows, which its config.yaml
names as its data) and every command runs `--backend onnx`. The last stdout line is one JSON object with the
figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pipeline.run.directory import RunDir
from pipeline.run.record import RunRecord, Tokenization

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
LABELS = ["World", "Sports", "Business", "Sci/Tech"]
COLUMNS = ["class_index", "title", "description"]
PEAK_LIMIT_BYTES = 2 * 1024**3
GROWTH_LIMIT = 1.20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="100000,1000000", help="comma-separated row counts (default 100000,1000000)")
    parser.add_argument("--workdir", default="/tmp/predict_memory", help="where the model, inputs and outputs go")
    parser.add_argument("--test-file", default=str(SHARED / "data/ag_news/test.csv"), help="rows to repeat (no header)")
    parser.add_argument(
        "--vocab", default=str(SHARED / "models/minilm-l6-h384-uncased/vocab.txt"), help="WordPiece vocab"
    )
    parser.add_argument("--chunk-size", type=int, default=10_000, help="the command's --chunk-size")
    parser.add_argument("--keep", action="store_true", help="keep the generated CSVs and outputs")
    parser.add_argument("--backend", choices=("torch", "onnx"), default="torch", help="the command's --backend")
    return parser.parse_args(argv)


def make_tiny_run(run_dir: Path, vocab: str, test_file: str) -> Path:
    """A run directory as finetune writes it, around a random 2-layer, 32-wide BERT."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    tokenizer = BertTokenizerFast(vocab_file=vocab, do_lower_case=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={name: index for index, name in enumerate(LABELS)},
    )
    torch.manual_seed(0)
    run = RunDir(run_dir)
    BertForSequenceClassification(config).save_pretrained(run.model_dir)
    tokenizer.save_pretrained(run.model_dir)
    # Its data: the AG News test rows (the shared layout), so that an export can re-create a validation split.
    run.config_path.write_text(
        f"data:\n  source: files\n  train_file: {test_file}\n  column_names: [{', '.join(COLUMNS)}]\n"
        f"  label_column: class_index\n  label_names: [{', '.join(LABELS)}]\n  label_index_base: 1\n"
        "  text_columns: [title, description]\n  text_separator: ' '\n  unescape_newlines: true\n"
    )
    run.write_record(RunRecord(labels=LABELS, tokenization=Tokenization(max_length=128)))
    return run_dir


def make_input(path: Path, rows: int, test_file: str) -> Path:
    """`rows` rows (with a header) cycling through the test rows, written as they are generated."""
    with open(test_file, newline="", encoding="utf-8") as handle:
        source = list(csv.reader(handle))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for index in range(rows):
            writer.writerow(source[index % len(source)])
    return path


def run_command(run_dir: Path, source: Path, output: Path, chunk_size: int, backend: str) -> dict:
    """Run the command in a subprocess; its own peak RSS comes from wait4 (ru_maxrss is in KiB on Linux)."""
    command = [
        sys.executable, "-m", "pipeline.predict", "--model", str(run_dir), "--input", str(source),
        "--output", str(output), "--overwrite", "--no-progress", "--chunk-size", str(chunk_size), "--backend", backend,
    ]  # fmt: skip
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the command failed on {source}: {stderr.strip()}")
    return {"peak_rss_bytes": usage.ru_maxrss * 1024, "seconds": round(seconds, 2), "stderr": stderr.strip()}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    run_dir = make_tiny_run(workdir / "tiny_run", args.vocab, args.test_file)
    if args.backend == "onnx":
        export = [sys.executable, "-m", "pipeline.export", "--model", str(run_dir), "--rounds", "1"]
        subprocess.run(export, cwd=REPO_ROOT, check=True, stdout=subprocess.DEVNULL)
    results = []
    for rows in [int(part) for part in args.rows.split(",")]:
        source = make_input(workdir / f"rows_{rows}.csv", rows, args.test_file)
        output = workdir / f"rows_{rows}_labelled.csv"
        measured = run_command(run_dir, source, output, args.chunk_size, args.backend)
        results.append({"rows": rows, "input_bytes": source.stat().st_size, **measured})
        print(
            f"{rows:>9,} rows: peak RSS {measured['peak_rss_bytes'] / 2**20:7.1f} MiB, {measured['seconds']:7.1f} s "
            f"({rows / measured['seconds']:,.0f} rows/s end to end)",
            file=sys.stderr,
        )
        if not args.keep:
            source.unlink()
            output.unlink()
    smallest, largest = results[0], results[-1]
    ratio = largest["peak_rss_bytes"] / smallest["peak_rss_bytes"]
    summary = {
        "backend": args.backend,
        "runs": [{key: value for key, value in run.items() if key != "stderr"} for run in results],
        "peak_ratio_largest_to_smallest": round(ratio, 4),
        "largest_under_2_gib": largest["peak_rss_bytes"] < PEAK_LIMIT_BYTES,
        "within_20_percent": ratio <= GROWTH_LIMIT,
    }
    print(
        f"peak ratio {largest['rows']:,} / {smallest['rows']:,} rows: {ratio:.3f} (target <= {GROWTH_LIMIT}); "
        f"largest peak {largest['peak_rss_bytes'] / 2**30:.2f} GiB (target < 2 GiB)"
    )
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
