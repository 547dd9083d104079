"""On a CUDA GPU: fine-tuning in the GPU's mixed precision (bf16, or fp16 with loss scaling) learns, and the
fine-tuned model predicts there as it does on the CPU.

`pytest -m gpu` runs these with the GPU visible; without one they skip (CI has none). The other tiers hide any GPU.
MiniLM on 2,000 real AG News rows, one epoch: seconds on a GPU.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline import finetune
from pipeline.config.load import load_config
from pipeline.predict import Predictor
from tests.helpers import (
    AG_NEWS_CLASSES,
    MINILM_CONFIG,
    MINILM_DIR,
    multi_label_overrides,
    require,
    reset_accelerate,
    tiny_run_overrides,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU, and none is visible"),
]

TEST_ROWS = 1000


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory, ag_news_train_csv, ag_news_test_csv):
    """Runs by train.mixed_precision, each trained once per module when a test first asks for it."""
    model_dir = require(MINILM_DIR)
    done = {}

    def get(mixed_precision: str):
        if mixed_precision not in done:
            reset_accelerate()
            root = tmp_path_factory.mktemp(f"gpu_{mixed_precision}")
            overrides = tiny_run_overrides(root, model_dir, ag_news_train_csv, ag_news_test_csv) + [
                f"run.name={mixed_precision}",
                "data.max_train_samples=2000",
                f"data.max_eval_samples={TEST_ROWS}",
                "tokenizer.max_length=64",
                f"train.mixed_precision={mixed_precision}",
            ]
            config = load_config(MINILM_CONFIG, overrides)
            done[mixed_precision] = config, finetune.run(config)
            reset_accelerate()
        return done[mixed_precision]

    return get


@pytest.mark.parametrize("mixed_precision", ["auto", "fp16"])
def test_fine_tuning_on_the_gpu_learns_in_its_mixed_precision(gpu_run, mixed_precision):
    _, metrics = gpu_run(mixed_precision)
    assert metrics["device"]["type"] == "cuda"
    native = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    assert metrics["training"]["mixed_precision"] == (native if mixed_precision == "auto" else mixed_precision)
    # Four classes (chance 0.25); one epoch over 2,000 rows takes MiniLM well past 0.8.
    assert metrics["test"]["accuracy"] > 0.8 and metrics["test"]["num_samples"] == TEST_ROWS


def test_the_gpu_predicts_what_the_cpu_predicts(gpu_run, ag_news_test_csv):
    config, _ = gpu_run("auto")
    frame = pd.read_csv(ag_news_test_csv, header=None, names=["label", "title", "description"]).head(300)
    texts = (frame["title"] + " " + frame["description"]).tolist()
    cpu_labels, cpu_probabilities = Predictor.from_path(config.run_dir, device="cpu", precision="fp32").infer(texts)
    gpu = Predictor.from_path(config.run_dir, device="cuda", precision="fp32")
    assert gpu.device.type == "cuda"
    gpu_labels, gpu_probabilities = gpu.infer(texts)
    np.testing.assert_array_equal(gpu_labels, cpu_labels)
    np.testing.assert_allclose(gpu_probabilities, cpu_probabilities, atol=1e-4)
    # Reduced precision on the GPU: near-ties are run again in fp32, so the labels stay the CPU's.
    fast = Predictor.from_path(config.run_dir, device="cuda")
    fast_labels, fast_probabilities = fast.infer(texts)
    assert fast.precision == ("bf16" if torch.cuda.is_bf16_supported() else "fp32")
    assert np.mean(fast_labels == cpu_labels) >= 0.99
    np.testing.assert_allclose(fast_probabilities, cpu_probabilities, atol=0.05)


@pytest.mark.parametrize("mixed_precision", ["auto", "fp16"])
def test_weighted_focal_multi_label_training_on_the_gpu_learns_and_calibrates(
    tmp_path_factory, ag_news_train_csv, ag_news_test_csv, mixed_precision
):
    # Issue 13's losses in the GPU's reduced precision: BCE-focal with pos_weight from balanced class weights, under
    # fp16's loss scaling too, then the temperature and thresholds fitted after training, read back by prediction.
    model_dir = require(MINILM_DIR)
    reset_accelerate()
    root = tmp_path_factory.mktemp(f"gpu_multi_{mixed_precision}")
    overrides = tiny_run_overrides(root, model_dir, ag_news_train_csv, ag_news_test_csv)
    overrides += multi_label_overrides(root, ag_news_train_csv, ag_news_test_csv)
    overrides += [
        f"run.name=multi_{mixed_precision}",
        "data.max_train_samples=3000",
        f"data.max_eval_samples={TEST_ROWS}",
        "tokenizer.max_length=64",
        f"train.mixed_precision={mixed_precision}",
        "train.class_weights=balanced",
        "train.loss=focal",
        "eval.threshold=best_f1",
    ]
    config = load_config(MINILM_CONFIG, overrides)
    metrics = finetune.run(config)
    reset_accelerate()
    assert metrics["device"]["type"] == "cuda"
    assert all(weight > 0 for weight in metrics["training"]["class_weights"].values())
    # Documents of one or two AG News classes: one epoch over 3,000 takes MiniLM well past chance on every label.
    assert metrics["test"]["micro_f1"] > 0.75 and metrics["test"]["macro_f1"] > 0.7
    assert metrics["calibration"]["temperature"] > 0
    thresholds = metrics["thresholds"]["thresholds"]
    assert set(thresholds) == set(AG_NEWS_CLASSES) and all(0 < value < 1 for value in thresholds.values())

    # The GPU's label sets are the CPU's: every class cut at its stored threshold on both devices.
    frame = pd.read_csv(ag_news_test_csv, header=None, names=["label", "title", "description"]).head(300)
    texts = (frame["title"] + " " + frame["description"]).tolist()
    _, cpu_probabilities = Predictor.from_path(config.run_dir, device="cpu", precision="fp32").infer(texts)
    _, gpu_probabilities = Predictor.from_path(config.run_dir, device="cuda", precision="fp32").infer(texts)
    np.testing.assert_allclose(gpu_probabilities, cpu_probabilities, atol=1e-4)
    cut = np.array([thresholds[name] for name in AG_NEWS_CLASSES])
    assert np.mean((gpu_probabilities >= cut) == (cpu_probabilities >= cut)) >= 0.999
