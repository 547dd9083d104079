"""The model card: `model/README.md` in the Hugging Face Hub's format, written from the run directory alone.

    write_model_card("runs/ag_news_bert")                  # -> runs/ag_news_bert/model/README.md
    python -m pipeline.report --model-card runs/ag_news_bert   # the same, for a run made before cards existed

The card is YAML metadata (built with huggingface_hub's ModelCardData and EvalResult: pipeline tag, library, base
model and dataset when they come from the Hub, licence from `run.license`, and a `model-index` holding the test
metrics, which the Hub renders as an evaluation widget; local data is named by its files) followed by Markdown a
person reads: what the model does, its licence (or how to set one), its labels, the data and splits, the training
settings, how a distilled model was distilled, the test metrics per class, a baseline and calibration where
metrics.json records them, limitations, how to use it (by a placeholder Hub id: a published card names no path of
this machine) and the environment it was trained in.

Everything comes from config.yaml, metrics.json and (for one example) test_predictions.csv, read through
`pipeline.run.directory`; keys that older runs, or newer stages, may lack are read defensively and their lines left out.
This module writes the card and its metadata; the facts it is written from are read in
pipeline/card/facts.py, the readable sections are written in pipeline/card/sections.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.card.facts import CardFacts, hub_id
from pipeline.card.sections import CardSections
from pipeline.common.io import atomic_write_text
from pipeline.run.directory import (
    MODEL_CONFIG_FILE,
    RunDir,
    RunDirError,
    is_model_dir,
    is_number,
    note,
    saved_model_config,
)

TASK_TYPE = "text-classification"
TASK_NAME = "Text Classification"


def write_model_card(run_dir: str | Path) -> Path:
    """Write `model/README.md` for a finished run; RunDirError (one line, naming the file) when it cannot."""
    run = RunDir(Path(run_dir))
    card = build_model_card(run)
    atomic_write_text(run.model_card_path, str(card))
    return run.model_card_path


def build_model_card(run: RunDir) -> Any:
    """The card as a huggingface_hub.ModelCard (metadata parsed back from the text, so what is written parses)."""
    from huggingface_hub import ModelCard

    run.check_finished()  # "metrics.json is missing — the run did not finish evaluation", and the like
    if not is_model_dir(run.model_dir):
        raise RunDirError(f"{run.model_dir}: missing (no {MODEL_CONFIG_FILE}) — the run saved no model to describe")
    metrics = run.read_metrics()
    card = CardSections(run, run.read_config(), metrics)
    metadata = card_data(card).to_yaml()
    return ModelCard(f"---\n{metadata}\n---\n\n{card.body()}")


def card_data(facts: CardFacts) -> Any:
    """The card's YAML metadata: pipeline tag, library, base model and dataset when they come from the Hub, licence,
    and the model-index of test metrics."""
    from huggingface_hub import EvalResult, ModelCardData

    dataset_type, dataset_name, dataset_config, dataset_split = facts.dataset_reference()
    common = dict(
        task_type=TASK_TYPE,
        task_name=TASK_NAME,
        dataset_type=dataset_type,
        dataset_name=dataset_name,
        dataset_config=dataset_config,
        dataset_split=dataset_split,
    )
    results = [
        EvalResult(
            **common,
            metric_type="accuracy",
            metric_name=facts.accuracy_name.capitalize(),
            metric_value=facts.get("test", "accuracy"),
        )
    ]
    for average in ("macro", "micro"):
        if is_number(facts.get("test", f"{average}_f1")):
            results.append(
                EvalResult(
                    **common,
                    metric_type="f1",
                    metric_name=f"{average.capitalize()}-F1",
                    metric_args={"average": average},
                    metric_value=facts.get("test", f"{average}_f1"),
                )
            )
    license_id = facts.setting("run", "license")
    tags = [TASK_TYPE] + (["custom_code"] if facts.is_encoder else [])
    return ModelCardData(
        base_model=hub_id(facts.base),
        datasets=[facts.data["hub_name"]] if facts.from_hub and hub_id(facts.data.get("hub_name")) else None,
        library_name="transformers",
        license=str(license_id) if license_id else None,
        metrics=["accuracy", "f1"],
        model_name=facts.name,
        pipeline_tag=TASK_TYPE,
        tags=tags,
        eval_results=results,
    )


def warn_if_not_portable(run_dir: str | Path, notes: list[str] | None = None) -> None:
    """A from-scratch encoder saved before its code was stored with it: say how to fix that (RunDirWarning)."""
    run = RunDir(Path(run_dir))
    saved = saved_model_config(run.model_dir) or {}
    from pipeline.models.modeling_encoder import MODEL_TYPE

    if saved.get("model_type") == MODEL_TYPE and not saved.get("auto_map"):
        note(
            [] if notes is None else notes,
            f"{run.model_dir}: saved before the encoder's code was stored with it, so it loads only where the "
            f"pipeline is installed; run: python -m pipeline.report --upgrade-model {run.path}",
        )
