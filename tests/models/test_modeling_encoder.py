"""The from-scratch encoder without this package: a saved folder carries its modelling code and an auto_map, and
loads with trust_remote_code=True in a Python where only torch and transformers can be imported.

One subprocess does all the loading outside the package (starting Python with torch is the slow part); the folders it
loads are made here: one saved as finetune saves `model/`, one saved the old way (no code, no auto_map), and a copy
of the old one upgraded with `python -m pipeline.report --upgrade-model`.
"""

import ast
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipeline.card.phrases import tokenizer_code
from pipeline.config.schema import EncoderSettings
from pipeline.finetune.stages import save_model_dir
from pipeline.models import modeling_encoder
from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification
from pipeline.predict import predict_texts
from pipeline.report.tools import main as report_main
from tests.helpers import one_torch_thread

CODE_FILE = Path(modeling_encoder.__file__)
LABELS = ["World", "Sports", "Business", "Sci/Tech"]
TEXTS = [
    "Stocks rallied on Wall Street after the central bank held interest rates steady.",
    "The home side won the cup final in extra time.",
    "A new chip promises faster phones and longer battery life, the company said on Tuesday.",
    "Rebels and government troops clashed near the capital, officials said.",
    "Oil prices fell",
    "Federer beat Nadal in straight sets to reach the final of the tournament in Basel, his fourth in a row.",
]
TEXT_LABELS = [2, 1, 3, 0, 2, 1]

# Runs with -I -S: no script directory, no PYTHON* variables, no user site, and no .pth files, so the editable
# install of this project is not on the path; the site-packages folders are added by hand for torch/transformers.
CHILD = r"""
import builtins, json, sys
site_dirs, new_dir, old_dir, upgraded_dir, texts, tokenizer_code = json.loads(sys.argv[1])
sys.path.extend(site_dirs)
result = {}
try:
    import pipeline
    result["pipeline"] = pipeline.__file__
except ImportError as error:
    result["pipeline"] = None
import transformers
from transformers import AutoModelForSequenceClassification, AutoTokenizer

# transformers asks "Do you wish to run the custom code? [y/N]" through input(): count the questions, answer no.
asked = []
builtins.input = lambda prompt="": asked.append(prompt) or "n"
AutoTokenizer.from_pretrained(new_dir)  # as a user would first type it
result["bare_tokenizer_prompts"] = len(asked)
asked.clear()
namespace = {}
exec(tokenizer_code, namespace)  # the model card's code, before any model's code is loaded
tokenizer = namespace["tokenizer"]
result["card_tokenizer"] = {
    "prompts": len(asked),
    "class": type(tokenizer).__name__,
    "ids": tokenizer(texts)["input_ids"],
    "custom_code_imported": sorted(name for name in sys.modules if name.startswith("transformers_modules")),
}

for name, path in (("new", new_dir), ("upgraded", upgraded_dir)):
    model = AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)
    classifier = transformers.pipeline("text-classification", model=path, trust_remote_code=True, device="cpu")
    predictions = [[r["label"], r["score"]] for r in classifier(texts)]
    result[name] = {"module": type(model).__module__, "predictions": predictions}
try:
    AutoModelForSequenceClassification.from_pretrained(old_dir, trust_remote_code=True)
    result["old_error"] = None
except Exception as error:
    result["old_error"] = f"{type(error).__name__}: {error}"
print("RESULT " + json.dumps(result))
"""


@pytest.fixture(scope="module")
def saved_encoder(tmp_path_factory, bert_tokenizer) -> Path:
    """A tiny encoder saved exactly as finetune saves a run's model/ (save_model_dir)."""
    settings = EncoderSettings(
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        pooling="mean",
        position_embedding="sinusoidal",
    )
    config = EncoderClassifierConfig.from_settings(settings, len(bert_tokenizer), bert_tokenizer.pad_token_id, LABELS)
    torch.manual_seed(0)
    model = EncoderForSequenceClassification(config)
    # A few steps on the test texts themselves, so that they get different labels and a mix-up would show.
    batch = bert_tokenizer(TEXTS, padding=True, return_tensors="pt", return_token_type_ids=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with one_torch_thread():
        for _ in range(20):
            optimizer.zero_grad()
            model(**batch, labels=torch.tensor(TEXT_LABELS)).loss.backward()
            optimizer.step()
    model.eval()
    path = tmp_path_factory.mktemp("encoder_run") / "model"
    save_model_dir(model, bert_tokenizer, path)
    return path


def old_style_copy(model_dir: Path, destination: Path) -> Path:
    """The folder as the pipeline saved it before the code travelled with the weights."""
    shutil.copytree(model_dir, destination)
    (destination / CODE_FILE.name).unlink()
    config_path = destination / "config.json"
    saved = json.loads(config_path.read_text())
    del saved["auto_map"]
    config_path.write_text(json.dumps(saved, indent=2))
    return destination


def test_modelling_file_imports_only_torch_transformers_and_the_standard_library():
    tree = ast.parse(CODE_FILE.read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
    }
    assert "pipeline" not in imported
    assert imported - set(sys.stdlib_module_names) == {"torch", "transformers"}
    # The package imports this same file: one copy of the code, the one that is saved.
    assert EncoderForSequenceClassification.__module__ == modeling_encoder.__name__


def test_saved_folder_holds_the_code_and_auto_map(saved_encoder):
    assert (saved_encoder / CODE_FILE.name).read_bytes() == CODE_FILE.read_bytes()
    saved = json.loads((saved_encoder / "config.json").read_text())
    assert saved["auto_map"] == {
        "AutoConfig": "modeling_encoder.EncoderClassifierConfig",
        "AutoModelForSequenceClassification": "modeling_encoder.EncoderForSequenceClassification",
    }
    assert saved["model_type"] == "pipeline_encoder"


@pytest.mark.slow  # a fresh process or a real-sized fit: about 7-10 s on 2 cores
def test_loads_with_trust_remote_code_without_the_package_and_predicts_as_pipeline_predict(
    saved_encoder, bert_tokenizer, tmp_path, capsys
):
    old = old_style_copy(saved_encoder, tmp_path / "old_model")
    upgraded = old_style_copy(saved_encoder, tmp_path / "upgraded_model")
    assert report_main(["--upgrade-model", str(upgraded)]) == 0
    assert "re-saved with modeling_encoder.py and an auto_map" in capsys.readouterr().out
    assert json.loads((upgraded / "config.json").read_text())["auto_map"]
    assert (upgraded / "tokenizer.json").is_file()  # the rest of the folder is kept

    expected = predict_texts(saved_encoder, TEXTS, device="cpu", precision="fp32")
    assert len({label for label, _ in expected}) >= 2  # otherwise agreeing on labels would prove little

    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_MODULES_CACHE=str(tmp_path / "modules"),
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    tokenizer_class = json.loads((saved_encoder / "tokenizer_config.json").read_text())["tokenizer_class"]
    card_code = "\n".join(tokenizer_code(str(saved_encoder), tokenizer_class))
    arguments = json.dumps([site.getsitepackages(), str(saved_encoder), str(old), str(upgraded), TEXTS, card_code])
    completed = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CHILD, arguments],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))

    assert result["pipeline"] is None  # the package really was out of reach
    # The tokenizer: without an argument transformers asks whether to run the model's code (config.json's auto_map,
    # read before the tokenizer's files); the card's code loads it with none of that code, asking nothing.
    assert result["bare_tokenizer_prompts"] >= 1
    card_tokenizer = result["card_tokenizer"]
    assert card_tokenizer["prompts"] == 0 and card_tokenizer["custom_code_imported"] == []
    assert card_tokenizer["class"] == tokenizer_class
    assert card_tokenizer["ids"] == bert_tokenizer(TEXTS)["input_ids"]
    for name in ("new", "upgraded"):
        assert result[name]["module"].startswith("transformers_modules.")  # the copied code, not the package's
        labels = [label for label, _ in result[name]["predictions"]]
        assert labels == [label for label, _ in expected]
        scores = [score for _, score in result[name]["predictions"]]
        assert scores == pytest.approx([score for _, score in expected], abs=1e-5)
    # Old folders: transformers' own error, which names the unknown architecture.
    assert result["old_error"] is not None and "pipeline_encoder" in result["old_error"]


def test_upgrade_refuses_what_is_not_the_encoder_and_leaves_current_folders_alone(saved_encoder, tmp_path, capsys):
    bert_dir = tmp_path / "bert_model"
    bert_dir.mkdir()
    (bert_dir / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert report_main(["--upgrade-model", str(bert_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "'bert' is not the from-scratch encoder" in err and err.count("\n") == 1

    assert report_main(["--upgrade-model", str(tmp_path / "nowhere")]) == 1
    assert "neither a run directory nor a saved model folder" in capsys.readouterr().err

    before = (saved_encoder / "model.safetensors").stat().st_mtime_ns
    assert report_main(["--upgrade-model", str(saved_encoder)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert (saved_encoder / "model.safetensors").stat().st_mtime_ns == before
