"""The run directory's life under pipeline.finetune: nothing lost, nothing clobbered, resume only when exact.

Each test reproduces a way an earlier version lost or misread data (see the issue "Nothing lost, nothing misread").
"""

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import BertTokenizerFast

from pipeline import finetune
from pipeline.common.io import atomic_write_json
from pipeline.config.load import load_config, save_config
from pipeline.config.schema import ConfigError
from pipeline.data.load import load_data
from pipeline.run import directory as rundir
from pipeline.run import ownership
from pipeline.run.directory import RunDir, RunDirError
from pipeline.text.tokenization import tokenizer_fingerprint
from tests.helpers import MINILM_CONFIG, REPO_ROOT, UNWRITABLE_KINDS, reset_accelerate, unwritable_folder


@pytest.mark.parametrize("name", ["", " ", ".", "..", "a/b", "../elsewhere", "/tmp/abs", "a\\b"])
def test_run_name_must_be_one_plain_folder(name):
    with pytest.raises(ConfigError, match="run.name"):
        load_config(None, [f"run.name={name!r}" if name.strip() else "run.name=''"])


def test_overwrite_refuses_a_folder_holding_files_the_pipeline_did_not_write(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "config.yaml").write_text("run: {}\n")
    (project / "train.py").write_text("print('my code')\n")
    with pytest.raises(RunDirError, match="train.py"):
        ownership.clear_for_overwrite(project)
    assert (project / "train.py").read_text() == "print('my code')\n" and (project / "config.yaml").exists()

    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    for name in ("config.yaml", "metrics.json", "history.jsonl", ".metrics.json.abc.tmp"):
        (run / name).write_text("x")
    ownership.clear_for_overwrite(run)
    assert list(run.iterdir()) == []


def test_a_failing_overwrite_keeps_the_earlier_run(tiny_run_config, tmp_path, capsys):
    """A typo in the data path must not cost the earlier run: it is replaced only once the new one has loaded."""
    config = tiny_run_config("run.name=kept", "train.max_steps=2")
    run = RunDir(config.run_dir)
    run.path.mkdir(parents=True)
    save_config(config, run.config_path)
    atomic_write_json(run.metrics_path, {"labels": ["a"], "test": {"accuracy": 0.9}})
    argv = ["--config", str(tmp_path / "c.yaml"), "run.overwrite=true", f"data.train_file={tmp_path / 'typo.csv'}"]
    save_config(config, tmp_path / "c.yaml")
    assert finetune.main(argv) == 2
    assert "typo.csv" in capsys.readouterr().err
    assert json.loads(run.metrics_path.read_text())["test"]["accuracy"] == 0.9
    assert not (run.path / rundir.LOCK_FILE).exists()


def test_a_run_that_fails_before_writing_leaves_no_folder_behind(tiny_run_config, tmp_path, capsys):
    """A typo in the data path costs nothing, and leaves no empty run folder (nor runs/) to puzzle over."""
    config = tiny_run_config("run.name=never", f"run.output_dir={tmp_path / 'fresh' / 'runs'}")
    save_config(config, tmp_path / "c.yaml")
    assert finetune.main(["--config", str(tmp_path / "c.yaml"), f"data.train_file={tmp_path / 'typo.csv'}"]) == 2
    assert "typo.csv" in capsys.readouterr().err
    assert not (tmp_path / "fresh").exists()

    kept = tmp_path / "kept"
    kept.mkdir()
    with ownership.claimed(kept / "run"):
        (kept / "run" / "history.jsonl").write_text("{}\n")  # a run that wrote something keeps its folder
    assert (kept / "run" / "history.jsonl").is_file() and not (kept / "run" / rundir.LOCK_FILE).exists()


def test_a_second_run_of_the_same_name_is_refused_while_the_first_holds_it(tmp_path):
    with ownership.claimed(tmp_path / "run"):
        holder = subprocess.run(
            [sys.executable, "-c", "import os,sys; print(os.getpid())"], capture_output=True, text=True, check=True
        )
        del holder  # a process that has exited: its pid in a lock file is stale
        lock = tmp_path / "run" / rundir.LOCK_FILE
        assert lock.read_text() == str(os.getpid())
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            lock.write_text(str(other.pid))  # as if another live process held it
            with (
                pytest.raises(RunDirError, match=f"in use by another run \\(process {other.pid}\\)"),
                ownership.claimed(tmp_path / "run"),
            ):
                pass
        finally:
            other.kill()
            other.wait()
        # No process's: one that does not exist, 0 (os.kill's own group), none, one past any id, a digit not ASCII.
        for stale in ("999999999", "0", "", "99999999999", "\u00b2"):
            lock.write_text(stale)
            with ownership.claimed(tmp_path / "run"):  # taken over
                assert lock.read_text() == str(os.getpid())
    assert not lock.exists()


def test_resuming_a_run_still_in_progress_says_it_is_in_use_not_that_it_has_no_checkpoint(
    tiny_run_config, tmp_path, capsys
):
    config = tiny_run_config("run.name=busy")
    config.run_dir.mkdir(parents=True)
    (config.run_dir / "history.jsonl").write_text("{}\n")  # it has started, and saved no checkpoint yet
    save_config(config, tmp_path / "c.yaml")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (config.run_dir / rundir.LOCK_FILE).write_text(str(other.pid))
        assert finetune.main(["--config", str(tmp_path / "c.yaml"), "train.resume=true"]) != 0
    finally:
        other.kill()
        other.wait()
    error = capsys.readouterr().err
    assert f"is in use by another run (process {other.pid})" in error and "holds no checkpoint" not in error


def test_resume_refuses_a_changed_config_naming_the_keys(tiny_run_config):
    config = tiny_run_config("run.name=resumable", "train.per_device_batch_size=8")
    run = RunDir(config.run_dir)
    run.checkpoint_path(4).mkdir(parents=True)
    save_config(config, run.config_path)
    changed = tiny_run_config(
        "run.name=resumable", "train.per_device_batch_size=16", "train.resume=true", "eval.batch_size=7"
    )
    with pytest.raises(finetune.RunError, match=r"train.per_device_batch_size: 8 -> 16") as caught:
        finetune.check_run_dir(changed)
    assert "eval.batch_size" not in str(caught.value)  # evaluation settings may change
    resumed = tiny_run_config(
        "run.name=resumable", "train.per_device_batch_size=8", "train.resume=true", "eval.batch_size=7"
    )
    finetune.check_run_dir(resumed)


def test_resuming_a_finished_run_says_that_it_evaluates_again(tiny_run_config, caplog):
    config = tiny_run_config("run.name=finished", "train.resume=true")
    run = RunDir(config.run_dir)
    run.checkpoint_path(4).mkdir(parents=True)
    save_config(config, run.config_path)
    finetune.check_run_dir(config)
    assert "has finished training" not in caplog.text
    run.metrics_path.write_text("{}")
    finetune.check_run_dir(config)
    assert f"{run.path} has finished training: resuming evaluates its last checkpoint again" in caplog.text


def test_resume_through_a_linked_folder_is_the_same_file(tiny_run_config, monkeypatch, tmp_path):
    """The run saved the path through a link; read from inside the linked folder, the working directory is the real
    one, so the same file has another absolute path."""
    real_file = Path(tiny_run_config().data.train_file)
    linked_folder = tmp_path / "linked"
    linked_folder.symlink_to(real_file.parent, target_is_directory=True)
    config = tiny_run_config("run.name=resumable", f"data.train_file={linked_folder / real_file.name}")
    run = RunDir(config.run_dir)
    run.checkpoint_path(4).mkdir(parents=True)
    save_config(config, run.config_path)
    monkeypatch.chdir(linked_folder)
    assert Path.cwd() == real_file.parent.resolve()
    finetune.check_run_dir(
        tiny_run_config("run.name=resumable", "train.resume=true", f"data.train_file={real_file.name}")
    )


def test_resume_reads_a_relative_path_as_the_absolute_one_the_run_saved(tiny_run_config, monkeypatch):
    config = tiny_run_config("run.name=resumable")
    run = RunDir(config.run_dir)
    run.checkpoint_path(4).mkdir(parents=True)
    save_config(config, run.config_path)
    assert run.read_config()["data"]["train_file"] == str(Path(config.data.train_file).absolute())
    train_file = Path(config.data.train_file)
    monkeypatch.chdir(train_file.parent)
    finetune.check_run_dir(
        tiny_run_config("run.name=resumable", "train.resume=true", f"data.train_file={train_file.name}")
    )
    monkeypatch.chdir(run.path)  # the same name read from another directory is another file
    with pytest.raises(finetune.RunError, match=r"data.train_file: "):
        finetune.check_run_dir(
            tiny_run_config("run.name=resumable", "train.resume=true", f"data.train_file={train_file.name}")
        )


def test_resume_without_a_checkpoint_says_what_the_folder_holds(tiny_run_config):
    config = tiny_run_config("run.name=killed")
    RunDir(config.run_dir).path.mkdir(parents=True)
    save_config(config, RunDir(config.run_dir).config_path)
    with pytest.raises(finetune.RunError, match="holds no checkpoint .*config.yaml"):
        finetune.check_run_dir(tiny_run_config("run.name=killed", "train.resume=true"))
    with pytest.raises(finetune.RunError) as caught:
        finetune.check_run_dir(config)
    assert "train.resume" not in str(caught.value)  # nothing to resume: not offered


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_divergence_stops_with_a_message_and_metrics_stay_json(tiny_run_config, capsys, tmp_path):
    config = tiny_run_config(
        "run.name=diverged",
        "train.max_steps=30",
        "train.log_every_steps=3",
        "train.learning_rate=1e6",
        "train.max_grad_norm=0",
        "train.mixed_precision=no",
        "train.warmup_ratio=0",
    )
    save_config(config, tmp_path / "c.yaml")
    assert finetune.main(["--config", str(tmp_path / "c.yaml")]) == 2
    message = capsys.readouterr().err
    assert "diverged by step" in message and "train.learning_rate" in message
    atomic_write_json(tmp_path / "m.json", {"loss": math.nan, "nested": [math.inf]})
    assert json.loads((tmp_path / "m.json").read_text()) == {"loss": None, "nested": [None]}


def test_tokenizers_that_normalise_differently_do_not_share_a_cache_entry(vocab_file, tmp_path):
    plain = BertTokenizerFast.from_pretrained(str(vocab_file.parent))
    plain.save_pretrained(tmp_path / "plain")
    accents = BertTokenizerFast.from_pretrained(str(tmp_path / "plain"), strip_accents=False)
    assert plain("café")["input_ids"] != accents("café")["input_ids"]
    assert tokenizer_fingerprint(plain) != tokenizer_fingerprint(accents)
    assert tokenizer_fingerprint(plain) == tokenizer_fingerprint(
        BertTokenizerFast.from_pretrained(str(tmp_path / "plain"))
    )


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_checkpoints_hold_no_pickled_state(tiny_run_config):
    """Resume must not unpickle code from a received run directory: the loop's state is JSON, the rest tensors."""
    config = tiny_run_config(
        "run.name=checkpointed", "train.max_steps=2", "train.save_every_steps=1", "eval.baseline=none"
    )
    finetune.run(config)
    checkpoints = RunDir(config.run_dir).checkpoints()
    assert checkpoints
    for checkpoint in checkpoints:
        assert not list(checkpoint.glob("custom_checkpoint_*")), checkpoint
        state = json.loads((checkpoint / rundir.TRAINER_STATE_FILE).read_text())
        assert state["state"]["global_step"] == int(checkpoint.name.removeprefix(rundir.CHECKPOINT_PREFIX))


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("train.learning_rate=-1e-3", "train.learning_rate"),
        ("train.epochs=.nan", "train.epochs"),
        ("train.epochs=.inf", "train.epochs"),
        ("run.seed=-1", "run.seed"),
        ("tokenizer.max_truncated_fraction=-0.1", "tokenizer.max_truncated_fraction"),
        ("eval.max_batch_tokens=0", "eval.max_batch_tokens"),
    ],
)
def test_values_that_used_to_crash_later_are_one_line_errors(override, key, tmp_path, capsys):
    assert finetune.main(["--config", "configs/ag_news_minilm.yaml", override, f"run.output_dir={tmp_path}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and key in lines[0]
    assert not (tmp_path / "ag_news_minilm").exists()


@pytest.mark.parametrize("kind", UNWRITABLE_KINDS)
def test_a_run_directory_that_cannot_be_written_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, kind):
    """The user sweep: run.output_dir on a read-only file system ended in a traceback from rundir.claimed."""
    folder = unwritable_folder(tmp_path, kind)
    monkeypatch.setattr(finetune.runner, "prepare", lambda *args: pytest.fail("the run started"))
    assert finetune.main(["--config", "configs/ag_news_minilm.yaml", f"run.output_dir={folder}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith(f"error: cannot write run directory {folder}/ag_news_minilm: ")


def test_a_test_files_class_that_train_lacks_is_refused_with_the_settings_that_leave_its_rows_out(tmp_path, capsys):
    train = "".join(
        f"a {word} story {i},{label}\n" for i in range(20) for word, label in (("good", "pos"), ("bad", "neg"))
    )
    (tmp_path / "train.csv").write_text("text,label\n" + train)
    (tmp_path / "test.csv").write_text("text,label\ngood,pos\nso-so,meh\nbad,neg\nfine I guess,meh\n")
    settings = ["data.source=files", f"data.train_file={tmp_path / 'train.csv'}", "data.column_names=null"]
    settings += [f"data.test_file={tmp_path / 'test.csv'}", "data.text_columns=[text]", "data.label_column=label"]
    settings += ["data.label_names=null", "data.label_index_base=null", f"data.cache_dir={tmp_path / 'cache'}"]
    settings += [f"run.output_dir={tmp_path / 'runs'}"]
    assert finetune.main(["--config", "configs/ag_news_minilm.yaml", *settings]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "test.csv, line 3, column 'label': label 'meh' is not a known class (and 1 more: line 5)" in error
    hint = error.split("; to leave those rows out (listed in removed_rows.csv), add ")[1]
    assert hint == """'data.missing_label_values=[NaN, N/A, "#N/A", "null", <NA>, meh]' data.incomplete_rows=drop"""
    data = load_data(load_config(MINILM_CONFIG, [*settings, *shlex.split(hint)]).data, 42)
    assert sorted(row.text for row in data.removed if row.split == "test") == ["fine I guess", "so-so"]


def test_broken_config_files_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "extends.yaml").write_text("extends: 5\n")
    (tmp_path / "latin.yaml").write_bytes("run:\n  name: caf\xe9\n".encode("latin-1"))
    for name, fragment in (("extends.yaml", "'extends'"), ("latin.yaml", "not UTF-8")):
        assert finetune.main(["--config", str(tmp_path / name)]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and name in lines[0] and fragment in lines[0]


# A process of its own: SIGTERM sent to the test process itself crashed it (native threads of earlier tests).
SIGTERM_DURING_A_RUN = """
import os, signal, sys
from pathlib import Path
from pipeline import finetune
from pipeline.run import directory as rundir
from pipeline.run import ownership

def run_until_killed(config, *args, **kwargs):
    with ownership.claimed(Path(sys.argv[1])):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt the run")

finetune.cli.run = run_until_killed  # what the command calls
sys.exit(finetune.main(["data.max_train_samples=10"]))
"""


@pytest.mark.slow  # a Python process that imports torch and transformers
def test_sigterm_unwinds_a_run_as_ctrl_c_does(tmp_path):
    """`kill` (a scheduler's stop) ended the process where it stood: the run directory kept its lock and the shell
    saw no reason. Now it unwinds: the lock is released, one line says how to continue, the status is 143."""
    run_dir = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", SIGTERM_DURING_A_RUN, str(run_dir)], cwd=REPO_ROOT, env=env, capture_output=True
    )
    assert result.returncode == 128 + 15, result.stderr.decode()
    assert result.stderr.decode().strip().endswith("continues from the run's last checkpoint")
    assert not (run_dir / rundir.LOCK_FILE).exists()


def test_leftovers_of_an_interrupted_run_are_cleaned_on_the_next_start(tmp_path):
    run = tmp_path / "run"
    (run / ".model.abc123.partial").mkdir(parents=True)
    (run / ".metrics.json.x1.tmp").write_text("half")
    (run / "checkpoints" / ".step_4.partial").mkdir(parents=True)
    (run / "checkpoints" / "step_2").mkdir()
    removed = ownership.clean_staging_leftovers(run)
    assert len(removed) == 3
    assert sorted(p.name for p in run.rglob("*")) == ["checkpoints", "step_2"]


@pytest.mark.slow  # two tiny training runs, ~10 s
def test_resuming_after_stage_4_calibrated_the_model_calibrates_the_trained_weights_once(tiny_run_config):
    """Killed after stage 4 folded the temperature into model/ but before metrics.json: the resumed run starts
    stage 4 from the trained weights again, so it finds the same temperature and the same calibrated model (it
    fitted T ~ 1 on the calibrated weights and recorded that calibration did nothing)."""
    settings = ["run.name=calibrated", "train.max_steps=24", "train.save_every_steps=24", "train.learning_rate=1e-3"]
    settings += ["train.per_device_batch_size=16"]
    settings += ["eval.baseline=none", "eval.predict_speed_rows=0"]
    first = finetune.run(tiny_run_config(*settings))["calibration"]["temperature"]
    assert not math.isclose(first, 1.0, rel_tol=0.05)  # a temperature worth folding
    run = RunDir(tiny_run_config(*settings).run_dir)
    weights = load_file(run.model_dir / "model.safetensors")
    run.metrics_path.unlink()  # as if killed between stage 4's model/ and metrics.json
    reset_accelerate()
    resumed = finetune.run(tiny_run_config(*settings, "train.resume=true"))
    assert resumed["calibration"]["temperature"] == pytest.approx(first, rel=1e-4)
    assert rundir.folded_temperature(run.model_dir) == pytest.approx(first, rel=1e-4)
    again = load_file(run.model_dir / "model.safetensors")
    assert all(torch.allclose(again[name], weights[name], rtol=1e-4, atol=1e-6) for name in weights)
