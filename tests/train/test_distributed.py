"""Two processes on CPU (gloo), launched the way users launch several GPUs: same results as one process.

`accelerate launch --cpu --num_processes 2` starts a single process (accelerate routes --cpu to its simple
launcher), so the tests use the README's multi-process command, `accelerate launch --multi_gpu --num_processes 2`,
and `torchrun`; with no GPU present the pipeline asks accelerate for the CPU backend itself.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from pipeline import finetune
from pipeline.config.load import load_config
from pipeline.data.load import load_splits
from pipeline.scoring.evaluation import evaluate_split
from pipeline.text.batching import TokenizedRows
from pipeline.text.tokenization import load_tokenizer, tokenize_splits
from tests.helpers import MINILM_CONFIG, REPO_ROOT, multi_label_overrides, reset_accelerate, tiny_run_overrides

# Each test starts processes that train or predict: seconds to minutes on a 2-core CPU.
pytestmark = pytest.mark.slow

ROOT = REPO_ROOT

# 96 training rows: 6 global batches of 16 (length-grouped, the default), each split into two slices of 8 for two
# processes, or taken whole by one process with batch 16; no uneven tail.
# 101 evaluation rows in batches of 16: the last batch is short and one process gets a padded duplicate batch.
COMMON = [
    "data.max_train_samples=96",
    "data.max_eval_samples=101",
    "eval.batch_size=16",
    "train.epochs=1",
    "train.mixed_precision=no",
    "train.learning_rate=1e-3",
    "train.warmup_ratio=0",
    "train.log_every_steps=1",
    "train.save_every_steps=3",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch(launcher: list[str], overrides: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    command = [*launcher, "-m", "pipeline.finetune", "--config", str(MINILM_CONFIG), *overrides]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result


def accelerate_launch(num_processes: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        str(num_processes),
        "--num_machines",
        "1",
        "--main_process_port",
        str(_free_port()),
        "--dynamo_backend",
        "no",
    ]


def torchrun(num_processes: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(num_processes),
        "--master_port",
        str(_free_port()),
    ]


@pytest.fixture(scope="module")
def paths(tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv):
    root = tmp_path_factory.mktemp("distributed")
    return {
        "root": root,
        "base": [*tiny_run_overrides(root, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv), *COMMON],
    }


@pytest.fixture(scope="module")
def two_process_run(paths):
    result = _launch(
        accelerate_launch(2), [*paths["base"], "run.name=two", "train.per_device_batch_size=8"], paths["root"]
    )
    run_dir = paths["root"] / "runs" / "two"
    return run_dir, json.loads((run_dir / "metrics.json").read_text()), result


def _single_process_config(paths, *overrides):
    reset_accelerate()
    return load_config(MINILM_CONFIG, [*paths["base"], *overrides])


def test_two_processes_really_ran_and_tokenized_once(two_process_run):
    _, metrics, result = two_process_run
    assert metrics["training"]["num_processes"] == 2
    assert metrics["device"]["num_processes"] == 2
    assert metrics["training"]["effective_batch_size"] == 16
    assert metrics["tokenization"]["from_cache_by_process"] == [False, True]
    assert "x 2 processes" in result.stdout  # the effective batch is stated at start


def test_two_processes_with_batch_b_train_like_one_process_with_batch_2b(paths, two_process_run, tiny_bert_dir):
    run_dir, metrics, _ = two_process_run
    single = finetune.run(_single_process_config(paths, "run.name=one", "train.per_device_batch_size=16"))
    assert single["training"]["global_steps"] == metrics["training"]["global_steps"] == 6
    two = load_file(str(run_dir / "model" / "model.safetensors"))
    one = load_file(str(paths["root"] / "runs" / "one" / "model" / "model.safetensors"))
    difference = max((two[k] - one[k]).abs().max().item() for k in two)
    assert difference < 1e-5
    initial = load_file(str(tiny_bert_dir / "model.safetensors"))
    moved = max(
        (two[k] - initial[k]).abs().max().item() for k in two if k in initial and two[k].shape == initial[k].shape
    )
    assert moved > 1000 * difference  # training really changed the weights


def test_distributed_evaluation_counts_every_row_once_and_matches_one_process(paths, two_process_run):
    run_dir, metrics, _ = two_process_run
    assert metrics["test"]["num_samples"] == 101
    assert sum(map(sum, metrics["test"]["confusion_matrix"])) == 101

    from accelerate import Accelerator
    from transformers import AutoModelForSequenceClassification

    config = _single_process_config(paths, "run.name=two")
    splits = load_splits(config.data, config.run.seed)
    tokenizer = load_tokenizer(config.tokenizer)
    tokenized, _ = tokenize_splits(splits, tokenizer, config.tokenizer, Path(config.data.cache_dir))
    accelerator = Accelerator(cpu=True, mixed_precision="no")
    model = AutoModelForSequenceClassification.from_pretrained(run_dir / "model")
    single = evaluate_split(model, TokenizedRows(tokenized["test"]), accelerator, 16, metrics["labels"])
    assert single.metrics["accuracy"] == metrics["test"]["accuracy"]
    assert single.metrics["confusion_matrix"] == metrics["test"]["confusion_matrix"]
    assert single.metrics["loss"] == pytest.approx(metrics["test"]["loss"], abs=1e-6)


def test_checkpoints_resume_under_the_same_number_of_processes(paths, two_process_run):
    run_dir, metrics, _ = two_process_run
    straight_final = load_file(str(run_dir / "checkpoints" / "step_6" / "model.safetensors"))
    resumed_dir = run_dir.parent / "two_resumed"
    shutil.copytree(run_dir, resumed_dir)
    shutil.rmtree(resumed_dir / "checkpoints" / "step_6")
    (resumed_dir / "metrics.json").unlink()
    _launch(
        torchrun(2),
        [*paths["base"], "run.name=two_resumed", "train.per_device_batch_size=8", "train.resume=true"],
        paths["root"],
    )
    resumed_final = load_file(str(resumed_dir / "checkpoints" / "step_6" / "model.safetensors"))
    assert max((straight_final[k] - resumed_final[k]).abs().max().item() for k in straight_final) < 1e-6
    resumed = json.loads((resumed_dir / "metrics.json").read_text())
    assert resumed["test"]["accuracy"] == metrics["test"]["accuracy"]


@pytest.fixture(scope="module")
def exported_two_process_run(paths, two_process_run) -> Path:
    """A copy of the two-process run with every export this install can make (ONNX Runtime, OpenVINO), verified."""
    pytest.importorskip("onnxruntime", reason="the optional extra 'onnx' is not installed")
    from pipeline.export import export_run

    run_dir = paths["root"] / "exported"
    shutil.copytree(two_process_run[0], run_dir)
    export_run(run_dir, "int8", rounds=1)
    return run_dir


@pytest.mark.parametrize("backend", ["auto", "onnx", "openvino"])
def test_distributed_prediction_is_byte_identical_to_one_process(
    backend, request, paths, two_process_run, ag_news_test_csv
):
    if backend == "openvino":
        from pipeline.common.extras import installed  # found, not imported: importing it starts its telemetry

        if not installed("openvino"):
            pytest.skip("the optional extra 'openvino' is not installed")
    # auto on the run as trained (PyTorch: no export); the others on an exported copy
    run_dir = two_process_run[0] if backend == "auto" else request.getfixturevalue("exported_two_process_run")
    rows = ag_news_test_csv.read_text(encoding="utf-8").splitlines(keepends=True)[:301]
    source = paths["root"] / "to_label.csv"
    source.write_text("".join(rows), encoding="utf-8")
    options = [
        "--backend",
        backend,
        "--model",
        str(run_dir),
        "--input",
        str(source),
        "--column-names",
        "class_index,title,description",
        "--chunk-size",
        "100",
        "--batch-size",
        "16",
        "--probabilities",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    single, double = paths["root"] / f"single_{backend}.csv", paths["root"] / f"double_{backend}.csv"
    for launcher, output in (([sys.executable], single), (accelerate_launch(2), double)):
        command = [*launcher, "-m", "pipeline.predict", *options, "--output", str(output)]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=paths["root"])
        assert result.returncode == 0, result.stderr[-3000:]
        if backend != "auto":
            assert f"backend {'onnx-' if backend == 'onnx' else 'openvino'}" in result.stderr, result.stderr[-2000:]
    assert double.read_bytes() == single.read_bytes()
    assert len(single.read_text(encoding="utf-8").splitlines()) == 302  # header + every row
    assert not list(paths["root"].glob(f".double_{backend}.csv*"))


# Class weights multiply each row's loss and the loop divides by rows, never by the weights of a process's rows:
# two processes with batch B then train exactly like one with batch 2B, as the unweighted loss does.
WEIGHTED = ["train.class_weights={World: 3.0, Sports: 0.5}", "train.loss=focal"]


def _two_processes_and_one(paths, name: str, overrides: list[str]) -> tuple[dict, dict, float]:
    """The same run over two processes of batch 8 and one of batch 16: both metrics.json and the largest weight
    difference after the last step (its checkpoint: calibration later touches model/)."""
    _launch(
        accelerate_launch(2),
        [*paths["base"], *overrides, f"run.name=two_{name}", "train.per_device_batch_size=8"],
        paths["root"],
    )
    single = finetune.run(
        _single_process_config(paths, *overrides, f"run.name=one_{name}", "train.per_device_batch_size=16")
    )
    runs = paths["root"] / "runs"
    two_metrics = json.loads((runs / f"two_{name}" / "metrics.json").read_text())
    two = load_file(str(runs / f"two_{name}" / "checkpoints" / "step_6" / "model.safetensors"))
    one = load_file(str(runs / f"one_{name}" / "checkpoints" / "step_6" / "model.safetensors"))
    return two_metrics, single, max((two[k] - one[k]).abs().max().item() for k in two)


def test_weighted_loss_over_two_processes_matches_one_process(paths):
    two_metrics, single, difference = _two_processes_and_one(paths, "weighted", WEIGHTED)
    assert two_metrics["training"]["class_weights"] == single["training"]["class_weights"]
    assert single["training"]["class_weights"]["World"] == 3.0
    assert difference < 1e-5


def test_multi_label_over_two_processes_matches_one_process(paths, ag_news_train_csv, ag_news_test_csv):
    """Sigmoid per class, BCE summed over rows and classes, pos_weight from balanced weights: still the same sum
    over two processes as over one."""
    multi_label = multi_label_overrides(paths["root"], ag_news_train_csv, ag_news_test_csv)
    two_metrics, single, difference = _two_processes_and_one(
        paths, "multi_label", [*multi_label, "train.class_weights=balanced"]
    )
    assert two_metrics["best"]["metric"] == single["best"]["metric"] == "micro_f1"
    assert two_metrics["training"]["class_weights"] == single["training"]["class_weights"]
    assert two_metrics["test"]["micro_f1"] == pytest.approx(single["test"]["micro_f1"], abs=1e-6)
    assert difference < 1e-5


# Chunked long texts: at 24 tokens AG News rows become 2-4 windows each, and evaluation batches of 16 windows are
# dealt to the two processes in turn, so many documents have windows on both: they must be gathered, then pooled.
CHUNKED = ["tokenizer.max_length=24", "tokenizer.long_text=chunk", "tokenizer.chunk_stride=4"]


def test_chunked_documents_count_once_over_two_processes(paths, ag_news_test_csv):
    from accelerate import Accelerator
    from transformers import AutoModelForSequenceClassification

    _launch(
        accelerate_launch(2),
        [*paths["base"], *CHUNKED, "run.name=two_chunked", "train.per_device_batch_size=8"],
        paths["root"],
    )
    run_dir = paths["root"] / "runs" / "two_chunked"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["test"]["num_samples"] == 101  # documents, each once, though the two processes split its windows
    assert metrics["tokenization"]["windows_per_document"]["test"]["mean"] > 1.5

    config = _single_process_config(paths, *CHUNKED, "run.name=two_chunked")
    tokenizer = load_tokenizer(config.tokenizer)
    tokenized, _ = tokenize_splits(
        load_splits(config.data, config.run.seed), tokenizer, config.tokenizer, Path(config.data.cache_dir)
    )
    model = AutoModelForSequenceClassification.from_pretrained(run_dir / "model")
    rows = TokenizedRows(tokenized["test"])
    single = evaluate_split(model, rows, Accelerator(cpu=True, mixed_precision="no"), 16, metrics["labels"], "mean")
    assert len(rows) > 1.5 * 101
    assert single.metrics["confusion_matrix"] == metrics["test"]["confusion_matrix"]
    assert single.metrics["loss"] == pytest.approx(metrics["test"]["loss"], abs=1e-5)

    texts = ag_news_test_csv.read_text(encoding="utf-8").splitlines(keepends=True)[:121]
    source = paths["root"] / "to_label_chunked.csv"
    source.write_text("".join(texts), encoding="utf-8")
    options = ["--model", str(run_dir), "--input", str(source), "--column-names", "class_index,title,description"]
    options += ["--chunk-size", "50", "--batch-size", "8", "--probabilities"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    outputs = paths["root"] / "chunked_single.csv", paths["root"] / "chunked_double.csv"
    for launcher, output in zip(([sys.executable], accelerate_launch(2)), outputs, strict=True):
        command = [*launcher, "-m", "pipeline.predict", *options, "--output", str(output)]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=paths["root"])
        assert result.returncode == 0, result.stderr[-3000:]
    assert outputs[1].read_bytes() == outputs[0].read_bytes()
    assert len(outputs[0].read_text(encoding="utf-8").splitlines()) == 122  # header + one row per document
