"""Fine-tune BERT text classifiers: data -> tokenization -> training -> evaluation."""

__version__ = "0.1.0"
