"""The model card: `model/README.md` in the Hugging Face Hub's format, written from the run directory alone.

    write_model_card("runs/ag_news_bert")                  # -> runs/ag_news_bert/model/README.md
    python -m pipeline.report --model-card runs/ag_news_bert   # the same, for a run made before cards existed

YAML metadata (ModelCardData, the test metrics as EvalResults in the `model-index` the Hub renders), then the Jinja
template pipeline/card/template.md, filled by ModelCard.from_template with the run's facts (facts.py) and what
phrases.py and rows.py write from them. Offline: nothing here touches the network.
"""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from pipeline.card.facts import CardFacts, dataset_reference, hub_id, read_facts
from pipeline.card.phrases import data_values, intro_values, limitations_values, usage_values
from pipeline.card.rows import table_values
from pipeline.common.io import atomic_write_text
from pipeline.models.modeling_encoder import MODEL_TYPE
from pipeline.run.directory import (
    MODEL_CONFIG_FILE,
    RunDir,
    RunDirError,
    is_model_dir,
    is_number,
    note,
    saved_model_config,
)

__all__ = ["build_model_card", "card_data", "hub_id", "warn_if_not_portable", "write_model_card"]

TEMPLATE_PATH = Path(__file__).with_name("template.md")
TASK_TYPE = "text-classification"
TASK_NAME = "Text Classification"


def write_model_card(run_dir: str | Path) -> Path:
    """Write `model/README.md` for a finished run; RunDirError (one line, naming the file) when it cannot."""
    run = RunDir(Path(run_dir))
    card = build_model_card(run)
    atomic_write_text(run.model_card_path, str(card))
    return run.model_card_path


def build_model_card(run: RunDir) -> ModelCard:
    run.check_finished()  # "metrics.json is missing — the run did not finish evaluation", and the like
    if not is_model_dir(run.model_dir):
        raise RunDirError(f"{run.model_dir}: missing (no {MODEL_CONFIG_FILE}) — the run saved no model to describe")
    return render_card(read_facts(run, run.read_config(), run.read_record()))


def render_card(facts: CardFacts) -> ModelCard:
    """The template filled from `facts`: metadata from card_data, text from the facts and what is written from them."""
    values = {**intro_values(facts), **data_values(facts), **limitations_values(facts), **usage_values(facts)}
    values |= table_values(facts)
    values["label_rows"] = list(enumerate(facts.labels))
    return ModelCard.from_template(card_data(facts), template_path=str(TEMPLATE_PATH), facts=facts, **values)


def card_data(facts: CardFacts) -> ModelCardData:
    """The card's YAML metadata: base model and dataset where they come from the Hub, and the test metrics' model-index."""
    dataset = dict(zip(("dataset_type", "dataset_name", "dataset_config", "dataset_split"), dataset_reference(facts)))
    common = dict(task_type=TASK_TYPE, task_name=TASK_NAME, **dataset)
    test = facts.record.test
    figures = [("accuracy", facts.accuracy_name.capitalize(), None, test.accuracy)]
    figures += [("f1", f"{a.capitalize()}-F1", {"average": a}, test.figure(f"{a}_f1")) for a in ("macro", "micro")]
    results = [
        EvalResult(**common, metric_type=kind, metric_name=name, metric_args=args, metric_value=value)
        for kind, name, args, value in figures
        if is_number(value)  # a model-index result needs its figure
    ]
    hub_dataset = hub_id(facts.data.get("hub_name")) if facts.from_hub else None
    return ModelCardData(
        base_model=hub_id(facts.base),
        datasets=[hub_dataset] if hub_dataset else None,
        library_name="transformers",
        license=facts.license,
        metrics=["accuracy", "f1"],
        model_name=facts.name,
        pipeline_tag=TASK_TYPE,
        tags=[TASK_TYPE] + (["custom_code"] if facts.is_encoder else []),
        eval_results=results or None,
    )


def warn_if_not_portable(run_dir: str | Path, notes: list[str] | None = None) -> None:
    """A from-scratch encoder saved before its code was stored with it: say how to fix that (RunDirWarning)."""
    run = RunDir(Path(run_dir))
    saved = saved_model_config(run.model_dir) or {}
    if saved.get("model_type") == MODEL_TYPE and not saved.get("auto_map"):
        note(
            [] if notes is None else notes,
            f"{run.model_dir}: saved before the encoder's code was stored with it, so it loads only where the "
            f"pipeline is installed; run: python -m pipeline.report --upgrade-model {run.path}",
        )
