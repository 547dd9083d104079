"""Stage 3: the training loop, optimizer, losses, checkpoints and CPU dropout."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "loop": "TrainResult Trainer create_accelerator",
        "start": "start_run_dir",
    },
)
