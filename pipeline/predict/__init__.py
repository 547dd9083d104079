"""Batch prediction: label the rows of a table (or a DataFrame, or a list of texts) with a trained model.

    python -m pipeline.predict --model runs/ag_news_bert --input news.csv --output labelled.csv
    python -m pipeline.predict --model runs/ag_news_bert --input emails.jsonl --output labelled.jsonl --probabilities

`--model` is a run directory (its `model/`, plus the text columns, separator and fixed length of the run) or any
saved Hugging Face sequence-classification directory, BERT or the from-scratch encoder alike; a run's `model/`
copied on its own reads those from its decision.json. Input is read by the same reader and text rule as training
(pipeline.data.tables; a folder, of files or of class folders, by pipeline.data.folders), so a row becomes the same text in
both.

The output holds every input row, in input order, with its input columns unchanged, then `label` (class name),
`label_id`, `score` (probability of that label), optionally `prob_<class>` for every class, and `error`: empty for
a labelled row, the reason for a row that could not be labelled (its text is empty).

Modules: source (which model, which text rule), predictor (texts -> probabilities), output (added columns,
writers, atomic output), api (predict_texts, predict_dataframe), cli (the command).
"""

from pipeline.predict.api import predict_dataframe, predict_texts
from pipeline.predict.cli import main
from pipeline.predict.predictor import LabelledTexts, Predictor
from pipeline.predict.source import ModelSource, PredictError, resolve_model_source

__all__ = [
    "LabelledTexts",
    "ModelSource",
    "PredictError",
    "Predictor",
    "main",
    "predict_dataframe",
    "predict_texts",
    "resolve_model_source",
]
