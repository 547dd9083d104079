"""The config reference page, docs/config-reference.md, rendered from the config dataclasses' field docs.

    python -m pipeline.config.reference --write          # or > docs/config-reference.md

Only the page's introduction and each section's one-line lead are written here.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.config.schema import PipelineConfig
from pipeline.config.values import default_of, describe

PAGE = Path(__file__).resolve().parents[2] / "docs" / "config-reference.md"
COMMAND = "python -m pipeline.config.reference --write"

INTRO = f"""# Config reference

<!-- Generated from the config dataclasses' field docs (pipeline/config/schema.py, data_config.py,
     train_config.py); do not edit by hand: change a field's help and run `{COMMAND}`. -->

Every default lives in `pipeline/config/schema.py` and the modules beside it, in typed dataclasses.

- The YAML files in `configs/` say only what differs from the defaults.
- A config may start from another file: `extends: other.yaml`.
- Any key can be set on the command line after the config path: `train.epochs=1`. See [Running](running.md).
- The fully resolved config is saved in every run directory, as `config.yaml`.
- "none" as a default means the key is unset (`null` in YAML).
"""

# Each section's lead sentence on the page; the sections come in the config's own order (_sections).
LEADS = {
    "run": "The run directory, the seed, the licence.",
    "data": "Where the rows come from and how they are read. The rules behind these keys: [Your own data](your-data.md) and [File formats](file-formats.md).",
    "tokenizer": "How texts become tokens, and how long texts are read: [Long texts](long-texts.md).",
    "model": "Which network is trained.",
    "model.encoder": "The architecture of the encoder trained from scratch (`model.kind: encoder`).",
    "train": "The training loop: [Scores you can act on](scores-and-thresholds.md) explains class weights and losses; [Performance](performance.md) the speed settings.",
    "train.distill": "Distillation: [Distillation](distillation.md).",
    "eval": "Evaluation, thresholds, the export and the baseline.",
    "tune": "The hyperparameter search of `python -m pipeline.tune`: [Hyperparameter search](tune.md).",
}


def _sections(section: type, prefix: str = "") -> Iterator[tuple[str, type]]:
    """(key prefix, dataclass) of every section below `section`, depth first: run, ..., model, model.encoder, ..."""
    hints = typing.get_type_hints(section)
    for item in dataclasses.fields(section):
        if dataclasses.is_dataclass(hints[item.name]):
            yield prefix + item.name, hints[item.name]
            yield from _sections(hints[item.name], f"{prefix}{item.name}.")


# (key prefix, dataclass, the section's lead sentence), in the page's order.
SECTIONS = tuple((prefix, section, LEADS[prefix]) for prefix, section in _sections(PipelineConfig))


def render() -> str:
    """The whole page."""
    parts = [INTRO]
    for prefix, section, lead in SECTIONS:
        parts.append(f"## {prefix}\n\n{lead}\n\n{section_table(prefix, section)}")
    return "\n".join(parts)


def section_table(prefix: str, section: type) -> str:
    """A Markdown table of a section's settings; a nested section is a row pointing to its own table."""
    hints = typing.get_type_hints(section)
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for item in dataclasses.fields(section):
        key, tp = f"{prefix}.{item.name}", hints[item.name]
        if dataclasses.is_dataclass(tp):
            anchor = key.replace(".", "")  # the fragment MkDocs gives the heading: train.distill -> traindistill
            rows.append(f"| `{key}.*` | a section | | {_cell(help_of(item))}: see [{key}](#{anchor}) |")
            continue
        shown = item.metadata["shown"] if "shown" in item.metadata else _value_text(default_of(item))
        cells = (f"`{key}`", describe(tp), shown, help_of(item))
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def help_of(item: dataclasses.Field) -> str:
    """A field's documentation: its help, then what more the reference says."""
    parts = [item.metadata.get("help", ""), item.metadata.get("more", "")]
    return ". ".join(part.rstrip(".") for part in parts if part)


def _value_text(value: Any) -> str:
    """A default as the page shows it: `hub`, 0.1, true, none, `[text]`."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}"
    if isinstance(value, list):
        return "`[" + ", ".join(str(item) for item in value) + "]`"
    return f'`"{value}"`' if value.strip() != value or not value else f"`{value}`"


def _cell(text: str) -> str:
    """Text inside a table cell: a | would end the cell."""
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipeline.config.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {PAGE.name} in docs/ instead of printing it")
    args = parser.parse_args(argv)
    if args.write:
        PAGE.write_text(render(), encoding="utf-8")
    else:
        sys.stdout.write(render())


if __name__ == "__main__":
    main()
