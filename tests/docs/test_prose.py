"""The prose rules of README.md and docs/*.md, and their links.

Rules, per file: the median sentence is at most 20 words, no sentence is over 60 words, no paragraph is over 150
words; README.md (the front page) is at most 1,600 words, counted as `wc -w` counts them. Every relative link in
these files names a file that exists (and, with a `#fragment`, a heading of that page); links between docs pages stay
inside docs/, where MkDocs can check them.

What is measured is prose: fenced code blocks, tables, headings, HTML comments and tags, and link reference lines
are skipped. An inline code span counts as one word, a link as its text. A list item is its own paragraph and ends
its sentence. Sentences end at `.`, `!` or `?` followed by whitespace, and at the end of a paragraph.

    python tests/docs/test_prose.py          # prints every file's figures as a table
"""

from __future__ import annotations

import re
import statistics
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = REPO_ROOT / "docs"
README = REPO_ROOT / "README.md"

MAX_MEDIAN_SENTENCE = 20
MAX_SENTENCE = 60
MAX_PARAGRAPH = 150
MAX_README_WORDS = 1600

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
THEMATIC_BREAK = re.compile(r"^\s{0,3}([-*_=])(\s*\1){2,}\s*$")
TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$")
LINK_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*\S")
HTML_TAG_LINE = re.compile(r"^\s*</?[A-Za-z][^>]*>\s*$")
ADMONITION = re.compile(r"^\s*(!!!|\?\?\?\+?)\s")
LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+")
BLOCKQUOTE = re.compile(r"^\s*>\s?")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]+)\](\([^)]*\)|\[[^\]]*\])")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+")
WORD = re.compile(r"[A-Za-z0-9]")


@dataclass
class Measure:
    """A Markdown file's prose: the words of each sentence and of each paragraph (lists of counts)."""

    sentences: list[int] = field(default_factory=list)
    paragraphs: list[int] = field(default_factory=list)

    @property
    def words(self) -> int:
        return sum(self.paragraphs)

    @property
    def median_sentence(self) -> float:
        return statistics.median(self.sentences) if self.sentences else 0.0

    @property
    def longest_sentence(self) -> int:
        return max(self.sentences, default=0)

    @property
    def longest_paragraph(self) -> int:
        return max(self.paragraphs, default=0)


def words_of(text: str) -> list[str]:
    """The words of a piece of prose: a code span is one word, a link its text, an image nothing; a token without
    a letter or digit (a dash, an arrow) is no word."""
    text = CODE_SPAN.sub("code", text)
    text = IMAGE.sub(" ", text)
    text = LINK.sub(r"\1", text)
    return [token for token in text.split() if WORD.search(token)]


def sentences_of(paragraph: str) -> list[str]:
    """A paragraph's sentences, split after `.`, `!` or `?` and the whitespace after them; code spans are set aside
    first, so a dot inside one (`model.onnx`, `data.text_columns`) ends nothing."""
    masked = CODE_SPAN.sub(lambda match: "code" + "x" * (len(match.group(0)) - 4), paragraph)
    pieces, start = [], 0
    for end in SENTENCE_END.finditer(masked):
        pieces.append(paragraph[start : end.start()])
        start = end.end()
    pieces.append(paragraph[start:])
    return [piece for piece in pieces if words_of(piece)]


def paragraphs_of(markdown: str) -> list[str]:
    """The prose paragraphs of a Markdown text, each joined into one line: consecutive non-blank prose lines, a list
    item (with its continuation lines) on its own; code fences, tables, headings, HTML comments and tags, and link
    reference lines end a paragraph and are left out."""
    paragraphs: list[str] = []
    current: list[str] = []
    fence: str | None = None
    in_comment = in_table = False

    def close() -> None:
        if current:
            paragraphs.append(" ".join(part.strip() for part in current))
            current.clear()

    lines = markdown.splitlines()
    if lines and lines[0].strip() == "---" and "---" in (line.strip() for line in lines[1:]):
        front_matter_end = 1 + [line.strip() for line in lines[1:]].index("---")
        lines = [""] * (front_matter_end + 1) + lines[front_matter_end + 1 :]  # YAML front matter: no prose
    for index, line in enumerate(lines):
        if fence is not None:  # inside a fenced block: only its closing fence matters
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
                line = line.split("-->", 1)[1]
                if not line.strip():
                    continue
            else:
                continue
        if "<!--" in line:  # a comment: the text before it stays, the rest until --> goes
            before, after = line.split("<!--", 1)
            if "-->" in after:
                line = before + after.split("-->", 1)[1]
            else:
                in_comment = True
                line = before
            if not line.strip():
                close()
                continue
        opening = FENCE.match(line)
        if opening:
            close()
            fence = opening.group(1)
            continue
        if not line.strip():
            close()
            in_table = False
            continue
        if in_table and "|" in line:
            continue
        in_table = False
        if TABLE_SEPARATOR.match(line) and "|" in line:  # the line above was the table's header row
            if current and "|" in current[-1]:
                current.pop()
            close()
            in_table = True
            continue
        if line.lstrip().startswith("|"):
            close()
            in_table = True
            continue
        if (
            HEADING.match(line)
            or LINK_REFERENCE.match(line)
            or HTML_TAG_LINE.match(line)
            or ADMONITION.match(line)
            or (THEMATIC_BREAK.match(line) and index > 0)
        ):
            close()
            continue
        line = BLOCKQUOTE.sub("", line)
        if LIST_ITEM.match(line):
            close()
            line = LIST_ITEM.sub("", line, count=1)
        current.append(line)
    close()
    return paragraphs


def measure(markdown: str) -> Measure:
    """Sentence and paragraph lengths, in words, of a Markdown text's prose."""
    result = Measure()
    for paragraph in paragraphs_of(markdown):
        words = len(words_of(paragraph))
        if not words:
            continue
        result.paragraphs.append(words)
        result.sentences.extend(len(words_of(sentence)) for sentence in sentences_of(paragraph))
    return result


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS_DIR.glob("*.md"))]


def name(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


# ---- links --------------------------------------------------------------------------------------------------------

INLINE_LINK = re.compile(r"!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)", re.MULTILINE)
EXTERNAL = re.compile(r"^([a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


def without_code(markdown: str) -> str:
    """The text with fenced blocks and code spans blanked out, so that a link inside them is not read as one."""
    kept, fence = [], None
    for line in markdown.splitlines():
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            kept.append("")
            continue
        opening = FENCE.match(line)
        if opening:
            fence = opening.group(1)
            kept.append("")
            continue
        kept.append(CODE_SPAN.sub("", line))
    return "\n".join(kept)


def links_of(markdown: str) -> list[str]:
    text = without_code(markdown)
    return INLINE_LINK.findall(text) + [match.group(1) for match in REFERENCE_DEFINITION.finditer(text)]


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc extension makes it (MkDocs' default)."""
    text = CODE_SPAN.sub(lambda match: match.group(2), heading)
    text = LINK.sub(r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors_of(path: Path) -> set[str]:
    anchors, seen = set(), {}
    for line in without_code(path.read_text(encoding="utf-8")).splitlines():
        if HEADING.match(line):
            base = slug(line.strip().lstrip("#").strip().rstrip("#").strip())
            count = seen.get(base, 0)
            anchors.add(base if count == 0 else f"{base}_{count}")
            seen[base] = count + 1
        anchors.update(re.findall(r"\{\s*#([\w-]+)", line))  # attr_list ids: {#name}
    return anchors


def broken_links(path: Path) -> list[str]:
    """The relative links of a Markdown file that name no file (or no heading), each with why."""
    problems = []
    for target in links_of(path.read_text(encoding="utf-8")):
        if EXTERNAL.match(target):
            continue
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{target}: no such file")
            continue
        if path.parent == DOCS_DIR and DOCS_DIR not in (linked, *linked.parents):
            problems.append(f"{target}: outside docs/, where MkDocs cannot follow it")
            continue
        if fragment and linked.suffix == ".md" and fragment not in anchors_of(linked):
            problems.append(f"{target}: no heading #{fragment} in {linked.name}")
    return problems


# ---- tests --------------------------------------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # `python tests/docs/test_prose.py` needs no pytest
    pytest = None

SAMPLE = """\
# A heading of many words that is never counted as prose at all

The first sentence has six words. The `python -m pipeline.predict --input x.csv` span is one word!

- A list item is its own paragraph
  and goes on here. Two.
- Another item: [a link](other.md) counts its text.

```bash
python -m pipeline.finetune --config a.yaml this line is code and is never counted however long it is
```

| table | row |
| --- | --- |
| not | prose |

<!-- a comment
over lines -->
[ref]: https://example.org
Last words?
"""


def test_measure_counts_prose_only():
    measured = measure(SAMPLE)
    assert measured.paragraphs == [12, 12, 7, 2]
    assert measured.sentences == [6, 6, 11, 1, 7, 2]
    assert measured.words == 33
    assert measured.median_sentence == 6
    assert measured.longest_sentence == 11
    assert measured.longest_paragraph == 12


def test_measure_finds_a_sentence_over_the_limit():
    long_sentence = " ".join(["word"] * (MAX_SENTENCE + 1)) + "."
    measured = measure(f"Short one.\n{long_sentence}\n\nAnother short one.\n")
    assert measured.longest_sentence == MAX_SENTENCE + 1
    assert measured.longest_paragraph == MAX_SENTENCE + 3
    assert measured.median_sentence == 3


def test_front_matter_and_nested_blocks_are_no_prose():
    text = "---\nhide:\n  - toc\n---\n\n- An item:\n\n    ```bash\n    python -m a b c\n    ```\n\n    More of it.\n"
    assert measure(text).paragraphs == [2, 3]


def test_links_and_anchors_are_read():
    text = "See [a](x.md#part), ![img](pic.png) and `[not](code.md)`.\n\n[ref]: y.md\n"
    assert links_of(text) == ["x.md#part", "pic.png", "y.md"]
    assert slug("Several processes: `accelerate launch`, torchrun") == "several-processes-accelerate-launch-torchrun"


if pytest is not None:
    FILES = pytest.mark.parametrize("path", markdown_files(), ids=name)

    @FILES
    def test_median_sentence(path):
        median = measure(path.read_text(encoding="utf-8")).median_sentence
        assert median <= MAX_MEDIAN_SENTENCE, f"{name(path)}: median sentence {median} words"

    @FILES
    def test_longest_sentence(path):
        measured = measure(path.read_text(encoding="utf-8"))
        long = [
            sentence
            for paragraph in paragraphs_of(path.read_text(encoding="utf-8"))
            for sentence in sentences_of(paragraph)
            if len(words_of(sentence)) > MAX_SENTENCE
        ]
        assert measured.longest_sentence <= MAX_SENTENCE, f"{name(path)}: sentences over {MAX_SENTENCE} words: {long}"

    @FILES
    def test_longest_paragraph(path):
        long = [
            paragraph[:120]
            for paragraph in paragraphs_of(path.read_text(encoding="utf-8"))
            if len(words_of(paragraph)) > MAX_PARAGRAPH
        ]
        assert not long, f"{name(path)}: paragraphs over {MAX_PARAGRAPH} words, starting: {long}"

    @FILES
    def test_relative_links_resolve(path):
        assert not broken_links(path), f"{name(path)}: {broken_links(path)}"

    def test_readme_is_a_front_page():
        words = len(README.read_text(encoding="utf-8").split())
        assert words <= MAX_README_WORDS, (
            f"README.md has {words} words (wc -w); the front page keeps to {MAX_README_WORDS}"
        )


def table() -> str:
    rows = [("file", "words", "median sentence", "longest sentence", "longest paragraph")]
    for path in markdown_files():
        measured = measure(path.read_text(encoding="utf-8"))
        rows.append(
            (
                name(path),
                str(measured.words),
                f"{measured.median_sentence:g}",
                str(measured.longest_sentence),
                str(measured.longest_paragraph),
            )
        )
    rows.append(
        ("limit", f"README {MAX_README_WORDS} (wc -w)", str(MAX_MEDIAN_SENTENCE), str(MAX_SENTENCE), str(MAX_PARAGRAPH))
    )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    print(f"README.md: {len(README.read_text(encoding='utf-8').split())} words (wc -w)")
    broken = {name(path): broken_links(path) for path in markdown_files() if broken_links(path)}
    for file, problems in broken.items():
        print(f"{file}: broken links: {problems}", file=sys.stderr)
    sys.exit(1 if broken else 0)
