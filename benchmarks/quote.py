"""``python -m benchmarks.quote [--check]``: writes every figure README.md and docs/*.md quote from a results file.

A quoted table or sentence sits between two markers, ``<!-- results:NAME ... -->`` and ``<!-- /results:NAME -->``;
NAME is a key of :data:`QUOTES`, which says which results files under benchmarks/results/ it reads and renders it.
The tool rewrites what lies between the markers of every region on every page (the opening marker too, which names
the tool and the files); ``--check`` changes nothing and exits 1 naming each region that differs from its files.
Prose outside the regions quotes no measured figure (tests/benchmarks/test_quote.py; benchmarks/figures.py)."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks import report, report_latency, report_pages, report_scale

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"

log = logging.getLogger("checkpointfs.quote")


@dataclass(frozen=True)
class Quote:
    """What one region holds: the results files it reads (relative to benchmarks/results/) and its renderer."""

    sources: tuple[str, ...]
    render: Callable[[], str]


QUOTES: dict[str, Quote] = {
    "readme_headline": Quote(("scale.json", "steady_state.json", "spark.json", "jvm_cloud.json"),
                             report_pages.readme_headline),
    "headline": Quote(("jvm_inprocess.json", "jvm_commit.json", "sizes.json", "spark.json", "compaction.json"),
                      report.headline),
    "jvm_inprocess_summary": Quote(("jvm_inprocess.json",), report.jvm_inprocess_summary),
    "jvm_inprocess": Quote(("jvm_inprocess.json",), report.jvm_inprocess),
    "jvm_commit": Quote(("jvm_commit.json",), report.jvm_commit),
    "jvm_sizes": Quote(("jvm_commit.json",), report.jvm_sizes),
    "jvm_sizes_summary": Quote(("jvm_commit.json",), report.jvm_sizes_summary),
    "sizes_summary": Quote(("sizes.json", "sizes_large.json"), report.sizes_summary),
    "sizes_part_sizes": Quote(("sizes_part_sizes.json",), report.sizes_part_sizes),
    "sizes": Quote(("sizes.json",), report.sizes),
    "commit": Quote(("commit.json",), report.commit),
    "spark": Quote(("spark.json",), report.spark),
    "steady_state": Quote(("steady_state.json", "spark.json"), report.steady_state),
    "compaction": Quote(("compaction.json",), report.compaction),
    "scale": Quote(("scale.json",), report.scale),
    "scale_requests": Quote(("scale.json",), report_scale.requests),
    "scale_times": Quote(("scale.json",), report_scale.times),
    "scale_throttle": Quote(("scale.json",), report_scale.throttle),
    "scale_bill": Quote(("scale.json",), report_scale.bill),
    "latency": Quote(("latency.json",), report_latency.latency),
    "latency_summary": Quote(("latency.json",), report_latency.latency_summary),
    "express_bill": Quote(("scale.json",), report_latency.express_bill),
    "jvm_cloud": Quote(("jvm_cloud.json",), report.jvm_cloud),
    "jvm_cloud_gs": Quote(("jvm_cloud.json",), lambda: report_pages.jvm_cloud_sentence("gs")),
    "jvm_cloud_abfs": Quote(("jvm_cloud.json",), lambda: report_pages.jvm_cloud_sentence("abfs")),
    "lines": Quote(tuple(f"lines/spark-{line}.json" for line in report.LINES), report.lines),
    "demo": Quote(("demo.json",), report_pages.demo),
    "spark_summary": Quote(("spark.json",), report_pages.spark_summary),
    "spark_format_v2": Quote(("spark_format_v2.json",), report_pages.spark_format_v2),
    "shapes": Quote(("shapes.json",), report_pages.shapes),
    "compaction_python": Quote(("compaction.json",), report_pages.compaction_python),
    "verify": Quote(("verify.json",), report_pages.verify),
    "campaign": Quote(("campaign.json",), lambda: report_pages.campaign("campaign.json")),
    "campaign_cluster": Quote(("campaign-short-cluster.json",),
                              lambda: report_pages.campaign("campaign-short-cluster.json")),
    "suite_times": Quote(("suite_times.json",), report_pages.suite_times),
}
"""Every region a page may hold, by name."""

OPENING = re.compile(r"^<!-- results:(?P<name>[\w-]+)(?:[ :][^>\n]*)?-->[ \t]*$", re.M)
"""A region's opening marker, alone on its line (a marker quoted inside a line is prose)."""


def pages() -> list[Path]:
    """The pages that quote results: README.md and every docs/*.md."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def closing(name: str) -> str:
    """The marker that ends region ``name``."""
    return f"<!-- /results:{name} -->"


def opening(name: str) -> str:
    """The marker that starts region ``name``, naming the tool and the files it is written from."""
    sources = QUOTES[name].sources
    files = f"benchmarks/results/{sources[0]}" if len(sources) == 1 else f"{', '.join(sources)} in benchmarks/results/"
    return f"<!-- results:{name}: written by `python -m benchmarks.quote` from {files} -->"


@dataclass(frozen=True)
class Region:
    """One region of a page: its name, the line its opening marker is on, and its span in the page's text (from
    the start of the opening marker to the end of the closing one)."""

    name: str
    line: int
    start: int
    end: int


def regions(text: str, page: Path | str = "<text>") -> Iterator[Region]:
    """The regions of ``text`` in order; ValueError naming the page and line of an unknown name, a region never
    closed or one inside another."""
    position = 0
    while (found := OPENING.search(text, position)) is not None:
        name, line = found["name"], text.count("\n", 0, found.start()) + 1
        if name not in QUOTES:
            raise ValueError(f"{page}:{line}: unknown results region {name!r} (known: {', '.join(QUOTES)})")
        end = text.find(f"\n{closing(name)}", found.end()) + 1
        if end == 0:
            raise ValueError(f"{page}:{line}: results region {name!r} has no {closing(name)}")
        inner = OPENING.search(text, found.end(), end)
        if inner is not None:
            raise ValueError(f"{page}:{line}: results region {name!r} holds another ({inner['name']!r})")
        yield Region(name, line, found.start(), end + len(closing(name)))
        position = end + len(closing(name))


WIDTH = 120
"""The pages' line length: a region's prose is wrapped to it (tables are not)."""


def wrapped(markdown: str) -> str:
    """``markdown`` with its paragraphs and list items wrapped to :data:`WIDTH`; tables and headings as they are."""
    blocks = []
    for block in markdown.split("\n\n"):
        lines = block.split("\n")
        if any(line.lstrip().startswith(("|", "#", "<!--")) for line in lines):
            blocks.append(block)
        elif all(line.startswith("- ") for line in lines):
            blocks.append("\n".join(textwrap.fill(line, WIDTH, subsequent_indent="  ", break_long_words=False,
                                                  break_on_hyphens=False) for line in lines))
        else:
            blocks.append(textwrap.fill(" ".join(lines), WIDTH, break_long_words=False, break_on_hyphens=False))
    return "\n\n".join(blocks)


def render(name: str) -> str:
    """Region ``name`` as a page holds it, both markers included."""
    quote = QUOTES[name]
    for source in quote.sources:
        if not (RESULTS / source).is_file():
            raise FileNotFoundError(f"results region {name!r}: no benchmarks/results/{source}")
    return f"{opening(name)}\n\n{wrapped(quote.render().strip())}\n\n{closing(name)}"


def rewritten(text: str, page: Path | str = "<text>") -> str:
    """``text`` with every region rendered afresh from its results files."""
    out, position = [], 0
    for region in list(regions(text, page)):
        out += [text[position:region.start], render(region.name)]
        position = region.end
    return "".join(out) + text[position:]


def stale(paths: list[Path] | None = None) -> list[str]:
    """``page:line: name`` of every region whose text differs from what its results files give."""
    found = []
    for page in paths if paths is not None else pages():
        text = page.read_text()
        for region in regions(text, page):
            if text[region.start:region.end] != render(region.name):
                found.append(f"{_shown(page)}:{region.line}: {region.name}")
    return found


def _shown(page: Path) -> str:
    """A page's path as messages give it: relative to the repository when inside it."""
    return str(page.relative_to(REPO)) if page.is_relative_to(REPO) else str(page)


def used() -> set[str]:
    """The names of the regions the pages hold."""
    return {region.name for page in pages() for region in regions(page.read_text(), page)}


def main(argv: list[str] | None = None) -> int:
    """Rewrite the regions of every page (or, with ``--check``, only report the stale ones)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quote", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a region is stale")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.check:
        found = stale()
        for where in found:
            log.error("%s: differs from its results file (run python -m benchmarks.quote)", where)
        return 1 if found else 0
    for page in pages():
        text = page.read_text()
        new = rewritten(text, page)
        if new != text:
            page.write_text(new)
            log.info("wrote %s", _shown(page))
    return 0


if __name__ == "__main__":
    sys.exit(main())
