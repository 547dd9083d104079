"""The walkthrough notebook runs top to bottom from a fresh kernel, offline on CPU, with only its parameters changed.

As papermill does, the test keeps the notebook's `parameters` cell and appends assignments to it: a tiny random
BERT instead of MiniLM, a few hundred rows, a few optimizer steps, and every output under tmp_path. Nothing else
in the notebook is touched, so any cell that fails for a user fails here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

NOTEBOOK = REPO_ROOT / "notebooks" / "ag_news_walkthrough.ipynb"
# What reads well on a code host: figures at modest dpi, no huge tables.
MAX_NOTEBOOK_BYTES = 2 * 1024 * 1024
CELL_TIMEOUT_SECONDS = 600


def read_notebook():
    nbformat = pytest.importorskip("nbformat")
    return nbformat.read(NOTEBOOK, as_version=4)


def parameters_cell(notebook):
    tagged = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, f"expected exactly one cell tagged 'parameters', found {len(tagged)}"
    return tagged[0]


def inject_parameters(notebook, values: dict) -> None:
    cell = parameters_cell(notebook)
    assignments = "\n".join(f"{name} = {value!r}" for name, value in values.items())
    cell.source = f"{cell.source}\n\n# Injected parameters (tests/test_notebook.py)\n{assignments}\n"


def kernel_for_this_interpreter(root: Path, monkeypatch) -> str:
    """A kernel spec that starts this very Python, found first on JUPYTER_PATH, whatever else is installed."""
    name = "pipeline-notebook-test"
    spec_dir = root / "kernels" / name
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "pipeline test kernel",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(root))
    return name


def test_parameters_cell_is_near_the_top_and_names_the_data_source():
    notebook = read_notebook()
    cell = parameters_cell(notebook)
    assert cell.cell_type == "code"
    assert notebook.cells.index(cell) <= 3
    assert 'DATA = "local"' in cell.source


def test_committed_notebook_holds_one_clean_top_to_bottom_run():
    notebook = read_notebook()
    assert NOTEBOOK.stat().st_size < MAX_NOTEBOOK_BYTES, f"{NOTEBOOK.name} is {NOTEBOOK.stat().st_size:,} bytes"
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code_cells]
    assert counts == list(range(1, len(code_cells) + 1)), f"not one run from a fresh kernel: execution counts {counts}"
    errors = [output for cell in code_cells for output in cell.outputs if output.output_type == "error"]
    assert not errors, f"the committed run has errors: {[error.ename for error in errors]}"
    images = [output for cell in code_cells for output in cell.outputs if "image/png" in output.get("data", {})]
    assert len(images) >= 5, "the committed run should show its figures"


@pytest.mark.slow  # a kernel, two fine-tuning runs and a prediction subprocess
def test_notebook_runs_top_to_bottom_offline_on_cpu(
    tmp_path, monkeypatch, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv
):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = read_notebook()
    output_dir = tmp_path / "runs"
    inject_parameters(
        notebook,
        {
            "DATA": "local",
            "LOCAL_TRAIN_FILE": str(ag_news_train_csv),
            "LOCAL_TEST_FILE": str(ag_news_test_csv),
            "LOCAL_MODEL": str(tiny_bert_dir),
            "OUTPUT_DIR": str(output_dir),
            "CACHE_DIR": str(tmp_path / "cache"),
            "MAX_TRAIN_SAMPLES": 200,
            "MAX_EVAL_SAMPLES": 100,
            "BERT_EPOCHS": 1,
            "ENCODER_EPOCHS": 1,
            "MAX_STEPS": 3,
        },
    )
    kernel_name = kernel_for_this_interpreter(tmp_path / "jupyter", monkeypatch)
    # The kernel (and the `python -m pipeline.predict` it starts) imports this checkout, installed or not.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")

    client = nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_SECONDS,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, on the first error

    for run_name in ("notebook_bert", "notebook_encoder"):
        metrics = json.loads((output_dir / run_name / "metrics.json").read_text())
        assert metrics["training"]["global_steps"] == 3
        assert metrics["device"]["type"] == "cpu"
    assert (output_dir / "report" / "report.html").is_file()
    assert (output_dir / "new_headlines_labelled.csv").is_file()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    assert sum("image/png" in output.get("data", {}) for output in outputs) >= 5
