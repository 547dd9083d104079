"""Fine-tune a text classifier: data -> tokenization -> training -> evaluation, into one run directory.

    python -m pipeline.finetune --config configs/ag_news_bert.yaml [section.key=value ...]
    accelerate launch -m pipeline.finetune --config ...        # several GPUs or nodes, same code

    from pipeline import finetune
    record = finetune.run(load_config("configs/ag_news_minilm.yaml"))   # metrics.json's content

An earlier run under the same name is replaced only once this one has loaded its data, tokenizer and model: a typo
in a path never costs the earlier run.

- `stages.py`: the four stages (prepare, train, evaluate) and the record of what they did.
- `finish.py`: after stage 4: the baseline, the ensemble, the label audit, the outputs.
- `runner.py`: `run(config)`, the stages in order; `cli.py`: the command.
"""

from pipeline.finetune.cli import main, setup_logging
from pipeline.finetune.runner import run
from pipeline.finetune.stages import OnValidation, model_source
from pipeline.train.start import RunError, check_run_dir

__all__ = ["OnValidation", "RunError", "check_run_dir", "main", "model_source", "run", "setup_logging"]
