"""Batch prediction: label the rows of a table (or a DataFrame, or a list of texts) with a trained model.

    python -m pipeline.predict --model runs/ag_news_bert --input news.csv --output labelled.csv
    python -m pipeline.predict --model runs/ag_news_bert --input emails.jsonl --output labelled.jsonl --probabilities

`--model` is a run directory or any saved sequence-classification folder. Input is read by the same reader and text
rule as training, so a row becomes the same text in both. The output holds every input row, in order and unchanged,
then the added columns (label, label_id, score, [prob_<class>...], error).

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
