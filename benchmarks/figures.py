"""Measured-looking figures that README.md and docs/*.md state outside the regions benchmarks/quote.py writes.

A figure looks measured when it is a duration (``12.0 s``, ``572 ms``, ``2 min``), a ratio (``0.12x``, ``1.02
times``), an amount
of money (``$531``), a memory size in MB or GB (sizes of files and parts are written in MiB), a request rate
(``24.6 requests a batch``, ``1.00 per checkpoint file``, any fractional count of requests), or a fractional number
in a table's cell. Code (fenced blocks and inline spans), HTML comments and the generated regions are not read.

Such a figure outside a region must be a fact that is not measured (a setting, a price, a constant of the protocol)
and listed in :data:`ALLOWED_FILE` with the reason: one entry a line, ``page | text | why``, where ``text`` is the
words of one line of the page that hold the figure, as written (it may hold `` | `` itself: a table's cells), and
``*`` as the page stands for every page."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from benchmarks.quote import REPO, pages, regions

ALLOWED_FILE = REPO / "benchmarks" / "prose_facts.txt"

_NUM = r"(?<![\w.,/])(?<![A-Za-z_]-)\d[\d,]*(?:\.\d+)?"
"""A number, not one inside a name or a version (``spark-4.3``, ``3.5.9``); the second of a range counts."""
_PER = r"(?:a|an|per|each)\s+(?:micro-batch|batch|checkpoint\s+file|file|commit)"
MEASURED = re.compile("|".join([
    rf"{_NUM}\s(?:µs|ms|s|min|minutes?|seconds?|hours?)\b",
    rf"{_NUM}x\b",
    r"(?<![\w.,/-])\d[\d,]*\.\d+\s+times\b",
    r"\$\s?\d[\d,]*(?:\.\d+)?",
    rf"{_NUM}\s?(?:MB|GB)\b",
    rf"{_NUM}\s+(?:checkpoint\s+)?requests?\s+{_PER}",
    r"(?<![\w.,/-])\d[\d,]*\.\d+\s+(?:checkpoint\s+)?requests?\b",
    rf"(?<![\w.,/-])\d[\d,]*\.\d+\s+(?:checkpoint\s+requests?\s+)?{_PER}",
]))
"""A figure that looks measured, in prose or in a table."""

FRACTION = re.compile(r"(?<![\w.,/-])\d[\d,]*\.\d+(?![\w.])")
"""A fractional number (not a version such as 3.5.9): measured when it is in a cell that starts with a figure, in a
table's column whose heading names a measure (:data:`MEASURED_HEADER`), past the first (which names the row)."""

MEASURED_HEADER = re.compile(r"(?i)\b(?:requests?|ms|s|seconds?|min|time|x|ratio|per|total|MB|RSS|CPU|wall|latency|"
                             r"rate|batch|growth|overhead|floor|anchor|cost|month)\b|\$|/s\b")
"""A table heading over measured figures."""

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")
_NUMERIC_CELL = re.compile(r"[\s*~]*(?:about\s+)?[$\d]")


def _figures_cell(cell: str) -> bool:
    """Whether a table cell holds figures: it starts with one and has few words (a description that names versions,
    such as Spark 4.3, does not)."""
    return bool(_NUMERIC_CELL.match(cell)) and sum(c.isalpha() for c in cell) <= 40

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


@dataclass(frozen=True)
class Figure:
    """A measured-looking figure on a page: where (line, and column from 0), the figure, and the line's text."""

    page: str
    line: int
    column: int
    figure: str
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.figure!r} in: {self.text.strip()[:160]}"


@dataclass(frozen=True)
class Allowed:
    """An entry of the allow-list: a page (or ``*``), the text of a line holding figures, and why."""

    page: str
    text: str
    why: str
    line: int


def _spaces(text: str) -> str:
    """``text`` as spaces, its newlines kept: offsets and line numbers stay as on the page."""
    return re.sub(r"[^\n]", " ", text)


def _blank(match: re.Match[str]) -> str:
    return _spaces(match.group(0))


def _code(match: re.Match[str]) -> str:
    """An inline code span as underscores: gone, without joining the words on either side into one figure."""
    return "_" * len(match.group(0))


def readable(text: str) -> str:
    """``text`` with what is not prose blanked out: generated regions, HTML comments, fenced code, inline code and
    link targets (same length, same lines)."""
    for region in list(regions(text)):
        text = text[:region.start] + _spaces(text[region.start:region.end]) + text[region.end:]
    text = _COMMENT.sub(_blank, text)
    lines, fenced = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            lines.append(" " * len(line))
        else:
            lines.append(" " * len(line) if fenced else line)
    text = "\n".join(lines)
    text = _CODE_SPAN.sub(_code, text)
    return _LINK_TARGET.sub(_blank, text)


def _cells(line: str) -> list[tuple[int, int]]:
    """The spans of a table row's cells (between its pipes)."""
    return list(itertools.pairwise(i for i, c in enumerate(line) if c == "|"))


def figures(text: str, page: str) -> list[Figure]:
    """The measured-looking figures of ``text`` outside its regions and code."""
    original = text.split("\n")
    lines = readable(text).split("\n")
    found = []
    header: list[str] = []
    for number, line in enumerate(lines, 1):
        spans = list(MEASURED.finditer(line))
        if not line.lstrip().startswith("|"):
            header = []
        elif number < len(lines) and _SEPARATOR.match(lines[number]):
            header = [line[a + 1:b] for a, b in _cells(line)]
        elif not _SEPARATOR.match(line):
            for column, (a, b) in enumerate(_cells(line)):
                if 0 < column < len(header) and MEASURED_HEADER.search(header[column]) and _figures_cell(line[a + 1:b]):
                    spans += [m for m in FRACTION.finditer(line, a, b)
                              if not any(s.start() <= m.start() < s.end() for s in spans)]
        found += [Figure(page, number, m.start(), m.group(0), original[number - 1])
                  for m in sorted(spans, key=lambda m: m.start())]
    return found


def load_allowed(path: Path = ALLOWED_FILE) -> list[Allowed]:
    """The allow-list's entries; ValueError naming the line of one that is not ``page | text | why``."""
    entries = []
    for number, raw in enumerate(path.read_text().split("\n"), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split(" | ")
        page, text, why = parts[0].strip(), " | ".join(parts[1:-1]).strip(), parts[-1].strip()
        if len(parts) < 3 or not (page and text and why):
            raise ValueError(f"{path.name}:{number}: not 'page | text | why': {raw!r}")
        entries.append(Allowed(page, text, why, number))
    return entries


def _covers(entry: Allowed, figure: Figure) -> bool:
    """Whether the entry's text, where it occurs on the figure's line, holds the figure."""
    if entry.page not in ("*", figure.page):
        return False
    end = figure.column + len(figure.figure)
    return any(m.start() <= figure.column and end <= m.end()
               for m in re.finditer(re.escape(entry.text), figure.text))


def stray(allowed: list[Allowed] | None = None) -> tuple[list[Figure], list[Allowed]]:
    """The figures of every page that no region writes and no entry allows, and the entries that allow nothing."""
    entries = load_allowed() if allowed is None else allowed
    unused = list(entries)
    found = []
    for page in pages():
        for figure in figures(page.read_text(), str(page.relative_to(REPO))):
            covering = [e for e in entries if _covers(e, figure)]
            if not covering:
                found.append(figure)
            unused = [e for e in unused if e not in covering]
    return found, unused
