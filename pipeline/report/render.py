"""Rendering the report's blocks as Markdown (tables only) and as one self-contained HTML page (charts embedded)."""

from __future__ import annotations

import base64
import html
import struct
from collections.abc import Iterable
from pathlib import Path

from pipeline.report import plots
from pipeline.report.blocks import Block, Chart, Heading, Images, Paragraph, Table


def render_markdown(blocks: Iterable[Block]) -> str:
    parts = [_block_markdown(block) for block in blocks if block.only != "html"]
    return "\n\n".join(part for part in parts if part) + "\n"


def _block_markdown(block: Block) -> str:
    if isinstance(block, Heading):
        return "#" * block.level + " " + _md_escape(block.text)
    if isinstance(block, Paragraph):
        text = _md_escape(block.text)
        return {"verdict": f"**{text}**", "note": f"> Note: {text}", "meta": f"*{text}*"}.get(block.style, text)
    if isinstance(block, Table):
        return _table_markdown(block)
    return ""


def _table_markdown(table: Table) -> str:
    numeric = table.numeric_columns()
    lines = [
        "| " + " | ".join(_md_escape(text) for text in table.header) + " |",
        "|" + "|".join("---:" if is_numeric else "---" for is_numeric in numeric) + "|",
    ]
    for row in table.rows:
        cells = [f"**{_md_escape(cell.text)}**" if cell.style == "best" else _md_escape(cell.text) for cell in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    # Pipes would split table cells; "<" would let a text from the data inject HTML (or an autolink) into rendered
    # Markdown, and brackets would let it add links and images ([text](url), ![](url)).
    text = str(text).replace("\\", "\\\\").replace("<", "&lt;").replace("\n", " ")
    for character in "|[]":
        text = text.replace(character, "\\" + character)
    return text


# The HTML report's stylesheet, inlined so that report.html is one self-contained file.
STYLESHEET = (Path(__file__).parent / "report.css").read_text(encoding="utf-8")


def render_html(title: str, blocks: Iterable[Block]) -> str:
    body = "\n".join(_block_html(block) for block in blocks if block.only != "md")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>\n{STYLESHEET}</style>\n</head>\n<body>\n<main>\n"
        f"{body}\n</main>\n</body>\n</html>\n"
    )


def _block_html(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return f"{_tag('p', block.style)}{html.escape(block.text)}</p>"
    if isinstance(block, Table):
        return _table_html(block)
    if isinstance(block, Images):
        return '<div class="figures">' + "".join(map(_chart_html, block.charts)) + "</div>"
    return ""


def _table_html(table: Table) -> str:
    numeric = table.numeric_columns()
    header = "".join(
        f"{_tag('th', 'num' if num else '')}{html.escape(text)}</th>" for text, num in zip(table.header, numeric)
    )
    row_styles = table.row_styles or [""] * len(table.rows)
    body = "".join(
        _tag("tr", style) + "".join(f"{_tag('td', cell.style)}{html.escape(cell.text)}</td>" for cell in row) + "</tr>"
        for row, style in zip(table.rows, row_styles)
    )
    return f'<div class="table-wrap"><table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>'


def _tag(name: str, css_class: str) -> str:
    return f'<{name} class="{css_class}">' if css_class else f"<{name}>"


def _chart_html(chart: Chart) -> str:
    # Never wider than the image's own CSS size: upscaling would blur small charts. The PNG's IHDR chunk follows its
    # 8-byte signature: length, type, then width and height as big-endian uint32.
    css_width = struct.unpack(">I", chart.png[16:20])[0] * 96 // plots.PNG_DPI
    data_uri = "data:image/png;base64," + base64.b64encode(chart.png).decode("ascii")
    figcaption = f"<figcaption>{html.escape(chart.caption)}</figcaption>" if chart.caption else ""
    return f'<figure style="max-width: {css_width}px"><img src="{data_uri}" alt="{html.escape(chart.alt_text)}">{figcaption}</figure>'
