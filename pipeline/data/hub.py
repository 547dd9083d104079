"""Splits from the Hugging Face Hub (data.source: hub): a dataset id, a save_to_disk folder or a download folder."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.build import label_columns_of, require_columns
from pipeline.data.folder_sniff import saved_dataset_files
from pipeline.data.rows import SPLITS, SplitRows
from pipeline.data.split_column import SPLIT_VALUES
from pipeline.data.text import TextSpec

logger = logging.getLogger("pipeline.data.load")
OFFLINE_HINT = "To run without the Hub, set data.source=files and data.train_file=... / data.test_file=... (optionally data.validation_file=...), see docs/offline.md"
_TRUE_VALUES = {"1", "ON", "YES", "TRUE"}


def read_hub_tables(config: DataConfig) -> tuple[dict[str, SplitRows], list[str] | None]:
    """The Hub dataset's splits as SplitRows, and its ClassLabel names if any."""
    loaded = load_hub_dataset(config)
    if not isinstance(loaded, datasets.DatasetDict):
        raise DataError(
            f"Hub dataset '{config.hub_name}' has a single unnamed split; the pipeline needs a 'train' split"
        )
    chosen = hub_split_names(config, list(loaded))
    feature = None if config.label_columns else loaded[chosen["train"]].features.get(config.label_column)
    feature = getattr(feature, "feature", feature)  # a multi-label column is a list (Sequence) of ClassLabel
    hub_names = list(feature.names) if isinstance(feature, datasets.ClassLabel) else None
    needed = list(dict.fromkeys([*TextSpec.from_data_config(config).input_columns, *label_columns_of(config)]))
    tables = {}
    for split, name in chosen.items():
        source = f"Hub dataset '{config.hub_name}' split '{name}'"
        # The split column is read from train only: divided by it, train is the one split.
        columns = [*needed, config.split_column] if config.split_column and split == "train" else needed
        require_columns(loaded[name].column_names, columns, source, config)
        frame = loaded[name].select_columns(list(dict.fromkeys(columns))).to_pandas()
        if hub_names is not None and config.task == "single_label":
            # -1 in a ClassLabel column (a hidden label) is absent: such a row is incomplete, not of a class -1.
            labels = frame[config.label_column]
            frame[config.label_column] = labels.astype(object).where(labels >= 0, None)
            if split != "train" and frame[config.label_column].isna().all():
                logger.warning(
                    f"{source} has no labels (every one is -1, the Hub's mark of a hidden label, as GLUE's test splits have): left out, and {split} is carved from train instead"
                )
                continue
        tables[split] = SplitRows(frame, source, "data.hub_name")
    return tables, hub_names


def hub_split_names(config: DataConfig, available: list[str]) -> dict[str, str]:
    """Which Hub split is train, validation and test: data.hub_splits, the same name, or a SPLIT_VALUES name."""
    given = config.hub_splits or {}
    unknown = [key for key in given if key not in SPLITS]
    if unknown:
        raise DataError(
            f"data.hub_splits: {unknown[0]!r} is not a split of the pipeline; map train, validation or test"
        )
    chosen: dict[str, str] = {}
    for split in SPLITS:
        if split in given:
            if given[split] not in available:
                raise DataError(
                    f"data.hub_splits: Hub dataset '{config.hub_name}' has no split '{given[split]}' for {split} (its splits: {', '.join(available)})"
                )
            chosen[split] = given[split]
        elif candidates := [name for name in available if SPLIT_VALUES.get(name.casefold()) == split]:
            chosen[split] = split if split in candidates else candidates[0]
    if "train" not in chosen:
        raise DataError(
            f"Hub dataset '{config.hub_name}' has the splits {', '.join(available)} and none is train: name it in data.hub_splits (e.g. {{train: <split>}}); validation and test are carved from train where it has none"
        )
    unused = [name for name in available if name not in chosen.values()]
    carved = [split for split in SPLITS if split not in chosen]
    if unused:
        instead = f", and {' and '.join(carved)} carved from train" if carved else ""
        (logger.warning if carved else logger.info)(
            f"Hub dataset '{config.hub_name}': split{'s' if len(unused) > 1 else ''} {', '.join(unused)} not used{instead}; data.hub_splits maps a split to train, validation or test"
        )
    return chosen


def load_hub_dataset(config: DataConfig) -> Any:
    """`datasets.load_dataset`, failing over to the cache within `hub_timeout_seconds` if the Hub is unreachable."""
    saved = _load_saved(config.hub_name)
    if saved is not None:
        return saved
    endpoint, cache = datasets.config.HF_ENDPOINT, str(Path(config.cache_dir).expanduser())
    if offline_mode():
        reason = "offline mode is on (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)"
    else:
        problem = probe_hub(endpoint, config.hub_name, config.hub_timeout_seconds)
        if problem is None:
            return _load_online(config, endpoint, cache)
        reason = f"the Hugging Face Hub could not be reached at {endpoint} ({problem})"
        logger.warning(f"{reason}; looking for a cached copy of {config.hub_name}")
    detail = ""
    with forced_offline():
        try:
            return datasets.load_dataset(config.hub_name, config.hub_config, cache_dir=cache)
        except OSError as error:  # ConnectionError or FileNotFoundError: nothing cached
            logger.debug("Loading %s from the cache failed: %r", config.hub_name, error)
        except ValueError as error:  # cached, but not this data.hub_config
            detail = f" ({str(error).splitlines()[0]})"
    raise DataError(
        f"Cannot load Hub dataset '{config.hub_name}': {reason}, and no usable cached copy was found in {cache}{detail}. {OFFLINE_HINT}."
    )


def _load_saved(name: str) -> datasets.DatasetDict | None:
    """The splits of a save_to_disk folder (a Dataset as train); None for a Hub id or a folder of data files."""
    path = Path(name).expanduser()
    if not path.is_dir():
        if name.startswith((".", "/", "~")):
            raise DataError(f"data.hub_name: {name} is neither a folder nor a Hub dataset id ('owner/name')")
        return None
    if not saved_dataset_files(path):
        return None
    _refuse_empty_saved_splits(path)
    saved = datasets.load_from_disk(str(path))
    return saved if isinstance(saved, datasets.DatasetDict) else datasets.DatasetDict({"train": saved})


def _refuse_empty_saved_splits(path: Path) -> None:
    """Name a split saved with no rows: `load_from_disk` fails on it with a bare IndexError."""
    folders = [path] if (path / datasets.config.DATASET_STATE_JSON_FILENAME).is_file() else sorted(path.iterdir())
    for folder in folders:
        state = folder / datasets.config.DATASET_STATE_JSON_FILENAME
        if state.is_file() and not json.loads(state.read_text(encoding="utf-8")).get("_data_files"):
            split = "train" if folder == path else folder.name
            raise DataError(
                f"The {split} split is empty: {folder} (data.hub_name) was saved with no rows; save the dataset without it (a missing validation or test split is carved from train)"
            )


def _load_online(config: DataConfig, endpoint: str, cache: str) -> Any:
    """`load_dataset` once the Hub has answered; its errors become DataErrors that say which setting to check."""
    try:
        return datasets.load_dataset(config.hub_name, config.hub_config, cache_dir=cache)
    except FileNotFoundError as error:  # includes datasets' DatasetNotFoundError
        raise DataError(
            f"data.hub_name: Hub dataset '{config.hub_name}' was not found at {endpoint} ({error}); check the name, or log in (HF_TOKEN) for a private or gated dataset. {OFFLINE_HINT}."
        ) from None
    except OSError as error:  # the connection dropped, or an HTTP error, after the probe
        raise DataError(
            f"Hub dataset '{config.hub_name}': loading from {endpoint} failed ({type(error).__name__}: {error}). {OFFLINE_HINT}."
        ) from None
    except ValueError as error:  # e.g. an unknown data.hub_config
        raise DataError(f"Hub dataset '{config.hub_name}' (data.hub_config={config.hub_config!r}): {error}") from None


def offline_mode() -> bool:
    """The libraries read these variables once, at import; the environment may have changed since."""
    import huggingface_hub.constants as hub_constants

    from_env = any(
        os.environ.get(name, "").upper() in _TRUE_VALUES for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )
    return from_env or bool(hub_constants.HF_HUB_OFFLINE) or bool(datasets.config.HF_HUB_OFFLINE)


def probe_hub(endpoint: str, name: str, timeout_seconds: float) -> str | None:
    """None if the Hub answers in time (a thread bounds DNS hangs too; 5xx counts as unreachable), else why."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    outcome: list[str | None] = []

    def ask() -> None:
        try:
            HfApi(endpoint=endpoint).dataset_info(name, timeout=timeout_seconds)
            outcome.append(None)
        except HfHubHTTPError as error:
            status = error.response.status_code if error.response is not None else None
            outcome.append(None if status is not None and status < 500 else f"HTTP {status or 'error'}: {error}")
        except Exception as error:  # connection refused, DNS failure, timeout, proxy errors: all mean unreachable
            outcome.append(f"{type(error).__name__}: {error}")

    thread = threading.Thread(target=ask, name="pipeline-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout_seconds)
    return outcome[0] if outcome else f"no answer within {timeout_seconds:g} s"


@contextlib.contextmanager
def forced_offline() -> Iterator[None]:
    """Make `datasets` and `huggingface_hub` behave as under HF_HUB_OFFLINE=1 (they read the variable at import)."""
    import huggingface_hub.constants as hub_constants

    saved = (hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE)
    hub_constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
    try:
        yield
    finally:
        hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE = saved
