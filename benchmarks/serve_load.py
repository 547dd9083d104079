"""Load on `python -m pipeline.serve`: concurrent clients, one text per request, dynamic batching on and off.

    python benchmarks/serve_load.py                                  # the issue's figures: 32 clients, 60 s a mode
    python benchmarks/serve_load.py --model runs/ag_news_minilm --seconds 60
    python benchmarks/serve_load.py --seconds 10 --baseline-rows 1000   # a smoke run

Without --model it serves a short MiniLM run on AG News (`configs/ag_news_minilm.yaml`, --train-rows rows of
../shared/), trained on the first call into runs/serve_load_minilm and reused after.

First it times `python -m pipeline.predict` on the same rows (AG News test.csv, read by the command's reader) and
backend: the rows/s the server is held to. Then, for each mode, it starts the server in a subprocess, warms it up,
and runs --clients clients for --seconds. Each client sends one row at a time ({"records": [row]}, the row's text
columns) and sends the next when the answer is back. Every answer other than 200 with one row counts as a failure.

Printed: rows/s, p50/p95/p99 latency and the mean batch size (from the server's /metrics) per mode; the issue's
targets (batching on: at least 60% of pipeline.predict's rows/s and 3x batching off; no failed request). The last
stdout line is one JSON object with the figures. The clients run on the server's machine and take CPU from it:
on a 2-core machine that is part of what is measured. Check `uptime` first: other work moves every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from runs import finetune_run, offline_env  # noqa: E402

from pipeline.common.hardware import cpu_name  # noqa: E402
from pipeline.data.tables import open_table  # noqa: E402
from pipeline.data.text import resolve_columns  # noqa: E402
from pipeline.predict.source import resolve_model_source  # noqa: E402
from pipeline.run.exports import BACKENDS  # noqa: E402

SHARED = REPO_ROOT.parent / "shared"
TEST_CSV = SHARED / "data" / "ag_news" / "test.csv"
COLUMN_NAMES = "class_index,title,description"
DEFAULT_RUN = REPO_ROOT / "runs" / "serve_load_minilm"
SUMMARY = re.compile(r"labelled (\d+) rows? -> .* \((\d+(?:\.\d+)?) rows/s\)")
# The targets.
SHARE_OF_PREDICT, OVER_UNBATCHED = 0.6, 3.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model", help=f"run to serve (default: {DEFAULT_RUN.relative_to(REPO_ROOT)}, trained if absent)"
    )
    parser.add_argument("--train-rows", type=int, default=2000, help="rows of the default run (default 2000)")
    parser.add_argument("--input", default=str(TEST_CSV), help="rows to send (default AG News test.csv)")
    parser.add_argument("--column-names", default=COLUMN_NAMES, help="the input's columns, for a header-less file")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds per mode (default 60)")
    parser.add_argument("--warmup-seconds", type=float, default=3.0, help="load before each measurement (default 3)")
    parser.add_argument("--baseline-rows", type=int, help="rows pipeline.predict labels for its rows/s (default all)")
    parser.add_argument("--backend", default="auto", choices=BACKENDS, help="server's and pipeline.predict's")
    parser.add_argument("--max-wait-ms", type=float, help="the server's (default: its own)")
    parser.add_argument("--max-batch-rows", type=int, help="the server's (default: its own)")
    parser.add_argument("--threads", type=int, help="the server's threads (default: its own, all the cores)")
    parser.add_argument("--modes", nargs="+", default=["on", "off"], choices=["on", "off"], help="batching modes")
    parser.add_argument("--json-out", help="also write the figures to this file")
    return parser.parse_args(argv)


def model_path(args: argparse.Namespace) -> Path:
    """--model, or the short MiniLM run, trained on the first call."""
    if args.model:
        return Path(args.model)
    if not (DEFAULT_RUN / "metrics.json").is_file():
        overrides = [f"data.max_train_samples={args.train_rows}", "data.max_eval_samples=1000", "eval.baseline=none"]
        finetune_run("configs/ag_news_minilm.yaml", DEFAULT_RUN.parent, DEFAULT_RUN.name, overrides)
    return DEFAULT_RUN


def read_records(path: str, column_names: str, model: Path) -> list[dict[str, str]]:
    """Each input row as the model's text columns, read by pipeline.predict's own reader."""
    spec = resolve_model_source(model).text_spec
    names = column_names.split(",") if column_names else None
    with open_table(path, column_names=names, chunk_size=10_000) as table:
        positions = resolve_columns(table.header, spec.input_columns, table.name, "--column-names")
        rows = [record for chunk in table.chunks for record in chunk.records]
    return [{column: row[i] for column, i in zip(spec.input_columns, positions)} for row in rows]


def predict_rate(args: argparse.Namespace, model: Path, folder: Path) -> tuple[float, int]:
    """(rows/s, rows) of `python -m pipeline.predict` on the input's first --baseline-rows rows."""
    source = Path(args.input)
    if args.baseline_rows:
        lines = source.read_text(encoding="utf-8").splitlines(keepends=True)[: args.baseline_rows]
        source = folder / "baseline.csv"
        source.write_text("".join(lines), encoding="utf-8")
    command = [sys.executable, "-m", "pipeline.predict", "--model", str(model), "--input", str(source)]
    command += ["--column-names", args.column_names, "--output", str(folder / "labelled.csv"), "--overwrite"]
    command += ["--backend", args.backend, "--no-progress"]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    result = subprocess.run(command, cwd=REPO_ROOT, env=offline_env(), capture_output=True, text=True, check=True)
    print(result.stderr, file=sys.stderr, end="")
    found = SUMMARY.search(result.stderr.strip().splitlines()[-1])  # "labelled 7600 rows -> ... (123 rows/s)"
    return float(found.group(2)), int(found.group(1))


@dataclass
class Load:
    """What the clients saw in one measured window."""

    mode: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # of the requests answered with their row
    failures: int = 0
    first_failure: str = ""
    mean_batch_rows: float = 0.0

    @property
    def rows_per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def latency_ms(self, percentile: float) -> float:
        return float(np.percentile(self.latencies, percentile) * 1000) if self.latencies else float("nan")

    def figures(self) -> dict[str, float | int | str]:
        return {
            "mode": self.mode,
            "requests": len(self.latencies) + self.failures,
            "failures": self.failures,
            "rows_per_second": round(self.rows_per_second, 1),
            "p50_ms": round(self.latency_ms(50), 1),
            "p95_ms": round(self.latency_ms(95), 1),
            "p99_ms": round(self.latency_ms(99), 1),
            "mean_batch_rows": round(self.mean_batch_rows, 2),
        }


async def run_clients(url: str, records: list[dict[str, str]], clients: int, seconds: float, load: Load) -> None:
    """`clients` clients, each sending one row and waiting for its answer, until `seconds` have passed."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        end = time.perf_counter() + seconds

        async def one_client(position: int) -> None:
            while time.perf_counter() < end:
                started = time.perf_counter()
                problem = ""
                try:
                    response = await client.post("/predict", json={"records": [records[position % len(records)]]})
                    if response.status_code != 200 or len(response.json()["rows"]) != 1:
                        problem = f"{response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as error:
                    problem = f"{type(error).__name__}: {error}"
                if problem:
                    load.failures += 1
                    load.first_failure = load.first_failure or problem
                else:
                    load.latencies.append(time.perf_counter() - started)
                position += clients

        started = time.perf_counter()
        await asyncio.gather(*(one_client(index) for index in range(clients)))
        load.seconds = time.perf_counter() - started


def batch_rows(url: str) -> tuple[float, float]:
    """(rows, batches) the server has labelled so far, from its /metrics."""
    values = {
        sample.name: sample.value
        for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=30).text)
        for sample in family.samples
    }
    return values.get("pipeline_serve_batch_rows_sum", 0.0), values.get("pipeline_serve_batch_rows_count", 0.0)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(args: argparse.Namespace, model: Path, mode: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "pipeline.serve", "--model", str(model), "--port", str(port)]
    command += ["--backend", args.backend, "--max-texts", "1"]
    command += ["--max-wait-ms", str(args.max_wait_ms)] if args.max_wait_ms is not None else []
    command += ["--max-batch-rows", str(args.max_batch_rows)] if args.max_batch_rows is not None else []
    command += ["--threads", str(args.threads)] if args.threads is not None else []
    command += ["--no-batching"] if mode == "off" else []
    print("+", " ".join(command), file=sys.stderr, flush=True)
    with open(log, "wb") as handle:
        server = subprocess.Popen(command, cwd=REPO_ROOT, env=offline_env(), stdout=handle, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return server, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text(errors='replace')}")


def measure(args: argparse.Namespace, model: Path, records: list[dict[str, str]], mode: str, folder: Path) -> Load:
    log = folder / f"server-{mode}.log"
    server, url = start_server(args, model, mode, log)
    try:
        asyncio.run(run_clients(url, records, args.clients, args.warmup_seconds, Load(mode)))
        rows_before, batches_before = batch_rows(url)
        load = Load(mode)
        asyncio.run(run_clients(url, records, args.clients, args.seconds, load))
        rows_after, batches_after = batch_rows(url)
        load.mean_batch_rows = (rows_after - rows_before) / max(1.0, batches_after - batches_before)
    finally:
        server.send_signal(signal.SIGTERM)
        status = server.wait(120)
    if status != 0:
        raise SystemExit(f"the server exited with status {status} after SIGTERM:\n{log.read_text(errors='replace')}")
    return load


def report(loads: list[Load], predict_rows_per_second: float, baseline_rows: int, machine: dict) -> dict:
    print(f"\n{machine['cpu']}; load average before: {machine['load_average']}")
    print(f"pipeline.predict: {predict_rows_per_second:.1f} rows/s ({baseline_rows} rows)")
    print("| batching | requests | failed | rows/s | p50 ms | p95 ms | p99 ms | mean batch rows |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for load in loads:
        f = load.figures()
        print(
            f"| {f['mode']} | {f['requests']} | {f['failures']} | {f['rows_per_second']} | {f['p50_ms']} "
            f"| {f['p95_ms']} | {f['p99_ms']} | {f['mean_batch_rows']} |"
        )
        if load.first_failure:
            print(f"first failure ({load.mode}): {load.first_failure}")
    by_mode = {load.mode: load.rows_per_second for load in loads}
    summary = {"predict_rows_per_second": predict_rows_per_second, "modes": [load.figures() for load in loads]}
    if "on" in by_mode:
        share = by_mode["on"] / predict_rows_per_second
        summary["on_share_of_predict"] = round(share, 3)
        print(f"batching on / pipeline.predict: {share:.2f} (target >= {SHARE_OF_PREDICT})")
    if "on" in by_mode and by_mode.get("off"):
        ratio = by_mode["on"] / by_mode["off"]
        summary["on_over_off"] = round(ratio, 2)
        print(f"batching on / off: {ratio:.2f}x (target >= {OVER_UNBATCHED}x)")
    failures = sum(load.failures for load in loads)
    print(f"failed requests: {failures} (target 0)")
    return {**summary, "failures": failures, **machine}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    machine = {"cpu": cpu_name(), "load_average": [round(value, 2) for value in os.getloadavg()]}
    model = model_path(args)
    records = read_records(args.input, args.column_names, model)
    with tempfile.TemporaryDirectory(prefix="serve_load_") as temporary:
        folder = Path(temporary)
        predict_rows_per_second, baseline_rows = predict_rate(args, model, folder)
        loads = [measure(args, model, records, mode, folder) for mode in args.modes]
    summary = report(loads, predict_rows_per_second, baseline_rows, machine)
    summary.update({"model": str(model), "clients": args.clients, "seconds": args.seconds, "backend": args.backend})
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
