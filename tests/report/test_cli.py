"""python -m pipeline.report: the report starts without PyTorch; the per-run tools go through pipeline.report.tools."""

import subprocess
import sys

import pytest

from pipeline.report.cli import main, wants_tools

# What a report's process holds after start-up: PyTorch, transformers and datasets are for the per-run tools only.
HEAVY = ("torch", "transformers", "datasets")


def test_a_report_imports_neither_torch_nor_transformers():
    probe = "import sys, pipeline.report.cli, pipeline.report; print(sorted(set(sys.argv[1:]) & set(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe, *HEAVY], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_the_tool_flags_pick_the_tools_module():
    assert wants_tools(["--model-card", "runs/a"]) and wants_tools(["runs/a", "--measure-speed"])
    assert not wants_tools(["runs/a", "--output", "reports/model-card"])
    assert wants_tools(["--model-c", "runs/a"])  # argparse takes an abbreviated flag, and so does the choice


def test_the_report_entry_refuses_tool_flags_rather_than_writing_a_report(tmp_path):
    with pytest.raises(SystemExit, match="pipeline.report.tools.main"):
        main(["--upgrade-model", str(tmp_path)])


@pytest.mark.slow  # a subprocess that loads PyTorch: 9 s
def test_the_module_runs_a_tool_through_the_same_command(tmp_path):
    """`python -m pipeline.report --model-card` still works: __main__ hands it to the tools."""
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.report", "--model-card", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "nowhere" in done.stderr
