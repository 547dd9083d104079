"""Rendering the report's blocks as Markdown (tables only) and as one self-contained HTML page (charts embedded)."""

from __future__ import annotations

import base64
import html
import struct
from collections.abc import Iterable

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


_CSS = """
body { margin: 0; background: #f3f4f6; color: #1d2430;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 36px 56px; background: #fff; }
h1 { font-size: 1.65em; margin: 0 0 .3em; }
h2 { font-size: 1.3em; margin: 2.2em 0 .6em; padding-bottom: .25em; border-bottom: 1px solid #dde1e6; }
h3 { font-size: 1.05em; margin: 1.5em 0 .4em; }
.meta { color: #5b6573; font-size: .9em; }
.verdict { font-size: 1.08em; font-weight: 600; background: #eef5ff; border-left: 4px solid #1f77b4;
           padding: .6em .9em; }
.note { background: #fff7e6; border-left: 4px solid #f0a020; padding: .4em .8em; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: .4em 0 1em; font-size: .9em; }
th, td { border: 1px solid #dde1e6; padding: .32em .65em; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num, td.best, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.group-start td { border-top: 2px solid #b9c0c9; }
td.best { font-weight: 700; }
td.right { color: #1b7a2f; white-space: nowrap; }
td.wrong { color: #b3261e; white-space: nowrap; }
td.text { min-width: 280px; max-width: 560px; }
.figures { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
figure { margin: 0; flex: 1 1 400px; }
figure img { display: block; width: 100%; height: auto; }
figcaption { font-size: .86em; color: #5b6573; text-align: center; margin-top: .2em; }
"""


def render_html(title: str, blocks: Iterable[Block]) -> str:
    body = "\n".join(_block_html(block) for block in blocks if block.only != "md")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
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
