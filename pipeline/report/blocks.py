"""The report's document model: sections are built once as blocks, then rendered to Markdown and to HTML."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cell:
    text: str
    # "best" (bold), "right"/"wrong" (a prediction against gold), "num" (right-aligned), "text" (long prose)
    style: str = ""


@dataclass
class Block:
    # "md" or "html" when a block exists in one rendering only (charts in HTML, their table stand-ins in Markdown).
    only: str = field(default="", kw_only=True)


@dataclass
class Heading(Block):
    text: str
    level: int = 2


@dataclass
class Paragraph(Block):
    text: str
    style: str = ""  # "verdict", "note" or "meta"


@dataclass
class Table(Block):
    header: list[str]
    rows: list[list[Cell]]
    # Optional CSS class per row (HTML only), e.g. to separate groups of rows.
    row_styles: list[str] | None = None

    def numeric_columns(self) -> list[bool]:
        """Columns whose every cell is a number (blank cells aside), to be right-aligned."""
        return [
            bool(self.rows)
            and all(row[i].style in ("num", "best") or not row[i].text for row in self.rows)
            and any(row[i].text for row in self.rows)
            for i in range(len(self.header))
        ]


@dataclass
class Chart:
    png: bytes
    alt_text: str
    caption: str = ""


@dataclass
class Images(Block):
    """Charts shown side by side, wrapping on narrow screens."""

    charts: list[Chart]


def num_cells(*texts: str) -> list[Cell]:
    return [Cell(text, "num") for text in texts]
