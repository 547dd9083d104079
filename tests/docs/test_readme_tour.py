"""Every command shown in the README's tour runs, for real, in a fresh folder, offline.

The tour's commands are the lines of the fenced ```bash blocks under its heading. Each must be a
`python -m pipeline.<command>` line; each runs as written, with only what stands in for the network and the hours:

- the Hub model (a 4-layer BERT) becomes ../shared's MiniLM, and AG News from the Hub becomes local rows of the same
  columns (`text`, `label` ids 0-3 of the same four classes);
- a fine-tuning run reads 160 rows and takes 3 optimizer steps;
- the export skips OpenVINO, which the tour does not install (its `onnx` extra is ONNX Runtime alone);
- the user's own files (`tickets.csv`, `new_tickets.csv`, `inbox/`) are written from AG News rows.

The slow test takes about three minutes on a 2-core CPU; it skips, saying why, where ../shared or ONNX Runtime is
missing.
"""

from __future__ import annotations

import csv
import os
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import (
    AG_NEWS_TEST_CSV,
    AG_NEWS_TRAIN_CSV,
    MINILM_DIR,
    OFFLINE_ENVIRONMENT,
    REPO_ROOT,
    SHARED,
    require,
)

README = REPO_ROOT / "README.md"
TOUR_HEADING = "## A ten-minute tour"
COMMANDS = {"finetune", "predict", "report", "evaluate", "export"}
CLASSES = ["World", "Sports", "Business", "Sci/Tech"]  # AG News, in the Hub's label order

# What stands in for hours of training: a few rows, a few steps.
SMALL_RUN = ["data.max_train_samples=160", "data.max_eval_samples=60", "train.max_steps=3"]


def tour_commands(readme: str) -> list[str]:
    """The shell commands of the fenced bash blocks between the tour's heading and the next `## ` heading, each one
    line (backslash continuations joined, comments and blank lines dropped)."""
    lines = readme.splitlines()
    start = lines.index(TOUR_HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    commands, in_block, pending = [], False, ""
    for line in lines[start + 1 : end]:
        if not in_block:
            in_block = re.match(r"^```(bash|sh|shell)\s*$", line.strip()) is not None
            continue
        if line.strip().startswith("```"):
            in_block = False
            continue
        pending += line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip() + " "
            continue
        if pending and not pending.startswith("#"):
            commands.append(pending)
        pending = ""
    return commands


def pipeline_command(command: str) -> tuple[str, list[str]]:
    """(`finetune`, its arguments) for `python -m pipeline.finetune ...`; anything else is an error that says why."""
    words = shlex.split(command, comments=True)
    assert words[:2] == ["python", "-m"] and words[2].startswith("pipeline."), (
        f"the README's tour may show only `python -m pipeline.<command>` lines, which this test runs: {command!r}"
    )
    name = words[2].removeprefix("pipeline.")
    assert name in COMMANDS, f"unknown command in the tour: {command!r}"
    return name, words[3:]


def config_data_source(config: Path) -> str:
    """`data.source` of a config file, following its `extends` (later files win, the file itself last)."""
    settings = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    parents = settings.get("extends") or []
    source = "hub"
    for parent in [parents] if isinstance(parents, str) else parents:
        source = config_data_source(config.parent / parent)
    return (settings.get("data") or {}).get("source", source)


def argument(arguments: list[str], flag: str) -> str | None:
    return arguments[arguments.index(flag) + 1] if flag in arguments else None


def ag_news_rows(path: Path, count: int, seed: int) -> list[tuple[str, int]]:
    """`count` AG News rows of a ../shared file as (title and description, class id from 0), shuffled."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [(f"{title} {text}", int(index) - 1) for index, title, text in csv.reader(handle) if index.isdigit()]
    random.Random(seed).shuffle(rows)
    return rows[:count]


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_inputs(folder: Path) -> dict[str, Path]:
    """The user's files the tour names, and the Hub's AG News as local files of the Hub's columns."""
    train = ag_news_rows(AG_NEWS_TRAIN_CSV, 800, seed=1)
    test = ag_news_rows(AG_NEWS_TEST_CSV, 200, seed=2)
    write_csv(folder / "tickets.csv", ["body", "topic"], [[text, CLASSES[label]] for text, label in train[:300]])
    write_csv(folder / "new_tickets.csv", ["body"], [[text] for text, _ in train[300:340]])
    (folder / "inbox").mkdir()
    for number, (text, _) in enumerate(train[340:348], start=1):
        (folder / "inbox" / f"{number:04d}.txt").write_text(text + "\n", encoding="utf-8")
    hub = folder.parent / "hub_stand_in"
    hub.mkdir()
    return {
        "train": write_csv(hub / "ag_news_train.csv", ["text", "label"], [list(row) for row in train[400:]]),
        "test": write_csv(hub / "ag_news_test.csv", ["text", "label"], [list(row) for row in test]),
    }


def offline_arguments(name: str, arguments: list[str], workdir: Path, hub_data: dict[str, Path]) -> list[str]:
    """What the test adds to a tour command so that it runs offline and in seconds."""
    if name == "export":
        return ["--no-openvino"]
    if name != "finetune":
        return []
    config = workdir / (argument(arguments, "--config") or "configs/ag_news_bert.yaml")
    source = config_data_source(config)
    for word in arguments:
        if word.startswith("data.source="):
            source = word.partition("=")[2]
    added = [f"tokenizer.name_or_path={MINILM_DIR}", f"model.name_or_path={MINILM_DIR}"]
    if source == "hub":
        added += [
            "data.source=files",
            f"data.train_file={hub_data['train']}",
            f"data.test_file={hub_data['test']}",
            f"data.label_names=[{', '.join(CLASSES)}]",
        ]
    return added + SMALL_RUN + [f"data.cache_dir={workdir.parent / 'cache'}"]


def check_outputs(name: str, arguments: list[str], workdir: Path, runs_before: set[Path]) -> None:
    """What each command must leave behind, beyond exiting 0."""
    output = argument(arguments, "--output")
    if name == "finetune":
        assert set(workdir.glob("runs/*/metrics.json")) - runs_before, "the run wrote no metrics.json"
    elif name == "predict":
        with open(workdir / output, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert rows, f"{output} holds no rows"
        assert all(row["label"] in CLASSES and row["score"] for row in rows), rows[0]
    elif name == "report":
        assert (workdir / output / "report.html").is_file()
    elif name == "export":
        assert (workdir / argument(arguments, "--model") / "onnx" / "export.json").is_file()


def test_the_tour_shows_only_commands_this_test_can_run():
    commands = tour_commands(README.read_text(encoding="utf-8"))
    names = [pipeline_command(command)[0] for command in commands]
    assert names[0] == "finetune" and "configs/ag_news_quick.yaml" in commands[0], commands[0]
    assert {"finetune", "predict", "report", "export"} <= set(names), names


def test_tour_commands_are_read_from_bash_blocks_only():
    readme = "\n".join(
        [
            "# Title",
            "```bash",
            "python -m pipeline.finetune --config before.yaml",
            "```",
            TOUR_HEADING,
            "Text with `python -m pipeline.report inline`.",
            "```bash",
            "# a comment",
            "python -m pipeline.finetune --config a.yaml \\",
            "  train.epochs=1   # trailing comment",
            "",
            "python -m pipeline.predict --model runs/a --input x.csv --output y.csv",
            "```",
            "```python",
            "predict_texts('runs/a', ['text'])",
            "```",
            "## Next section",
            "```bash",
            "python -m pipeline.export --model runs/a",
            "```",
        ]
    )
    commands = tour_commands(readme)
    assert commands == [
        "python -m pipeline.finetune --config a.yaml train.epochs=1   # trailing comment",
        "python -m pipeline.predict --model runs/a --input x.csv --output y.csv",
    ]
    assert pipeline_command(commands[0]) == ("finetune", ["--config", "a.yaml", "train.epochs=1"])
    with pytest.raises(AssertionError, match="only `python -m pipeline"):
        pipeline_command("pip install -e .")


@pytest.mark.slow  # five fine-tuning, prediction, report and export processes: about three minutes on 2 cores
def test_readme_tour_runs_offline(tmp_path):
    require(AG_NEWS_TRAIN_CSV)
    require(AG_NEWS_TEST_CSV)
    require(MINILM_DIR)
    pytest.importorskip("onnxruntime", reason="the tour's export needs the onnx extra (pip install -e '.[onnx]')")

    # A fresh folder laid out as the repository root: configs/ in it, ../shared beside it.
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "configs").symlink_to(REPO_ROOT / "configs", target_is_directory=True)
    (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
    hub_data = write_inputs(workdir)

    environment = {
        **os.environ,
        **OFFLINE_ENVIRONMENT,
        "CUDA_VISIBLE_DEVICES": "",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_DATASETS_CACHE": str(tmp_path / "hf_datasets"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    commands = tour_commands(README.read_text(encoding="utf-8"))
    for command in commands:
        name, arguments = pipeline_command(command)
        added = offline_arguments(name, arguments, workdir, hub_data)
        runs_before = set(workdir.glob("runs/*/metrics.json"))
        result = subprocess.run(
            [sys.executable, "-m", f"pipeline.{name}", *arguments, *added],
            cwd=workdir,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, (
            f"the README's tour command failed (exit {result.returncode}): {command}\n"
            f"run as: {shlex.join([name, *arguments, *added])}\n"
            f"(this test writes stand-ins for tickets.csv, new_tickets.csv and inbox/ only)\n"
            f"{result.stderr[-3000:]}"
        )
        check_outputs(name, arguments, workdir, runs_before)
