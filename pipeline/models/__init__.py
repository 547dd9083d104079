"""Stage 3's models: a pretrained checkpoint with a new head, or the from-scratch encoder (`build_model`), and
loading a saved one (`load_classifier`). Names load their module on first use: `from pipeline import models` costs
nothing, so prediction on an export never imports torch; any of these names imports it, and registers the encoder
with transformers' Auto classes.
"""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "classifier": "SEGMENTS WEIGHTS_DTYPE build_model eval_logits load_classifier max_positions require_segments",
        "encoder": "EncoderClassifierConfig EncoderForSequenceClassification",
        "cls_only": "restrict_last_layer_to_cls",
    },
)
