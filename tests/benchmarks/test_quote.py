"""Every figure README.md and docs/ quote of a benchmark is the one its results file holds: the regions
benchmarks/quote.py writes match their files, no measured-looking figure stands outside them unless
benchmarks/prose_facts.txt says why it is no measurement, and benchmarks/results/ keeps one file per benchmark."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import figures, quote
from benchmarks.figures import Allowed


def test_every_region_matches_its_results_files() -> None:
    assert quote.stale() == [], "run python -m benchmarks.quote"


def test_no_measured_figure_stands_outside_a_region() -> None:
    found, unused = figures.stray()
    assert [str(f) for f in found] == [], (
        "quote these from a results file (benchmarks/quote.py), or list them in benchmarks/prose_facts.txt with why "
        "they are not measured")
    assert [f"prose_facts.txt:{e.line}: {e.page} | {e.text}" for e in unused] == [], "these entries allow nothing"


def test_every_region_is_on_a_page_and_every_results_file_is_quoted() -> None:
    assert quote.used() == set(quote.QUOTES)
    quoted = {source for q in quote.QUOTES.values() for source in q.sources}
    kept = {p.name for p in quote.RESULTS.glob("*.json")}
    kept |= {f"lines/{p.name}" for p in quote.RESULTS.glob("lines/*.json")}
    assert kept - quoted == set(), "a results file no page quotes: regenerate in place, history is in git"
    assert quoted - kept == set()


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text)
    return page


def test_a_region_that_differs_from_its_file_is_stale_until_rewritten(tmp_path: Path) -> None:
    page = _page(tmp_path, "Before.\n\n<!-- results:commit -->\n| direct_write | 1.00 | 999.9 |\n"
                           "<!-- /results:commit -->\n\nAfter.\n")
    assert quote.stale([page]) == [f"{page}:3: commit"]
    page.write_text(quote.rewritten(page.read_text(), page))
    assert quote.stale([page]) == []
    text = page.read_text()
    assert text.startswith("Before.\n\n<!-- results:commit: written by `python -m benchmarks.quote` from "
                           "benchmarks/results/commit.json -->\n\n| contender |")
    assert text.endswith("\n\n<!-- /results:commit -->\n\nAfter.\n") and "999.9" not in text


@pytest.mark.parametrize(("text", "error"), [
    ("<!-- results:no_such_table -->\n<!-- /results:no_such_table -->\n", "page.md:1: unknown results region"),
    ("x\n<!-- results:commit -->\nnever closed\n", "page.md:2: results region 'commit' has no"),
    ("<!-- results:commit -->\n<!-- results:demo -->\n<!-- /results:demo -->\n<!-- /results:commit -->\n",
     "page.md:1: results region 'commit' holds another ('demo')"),
])
def test_a_broken_region_is_named_with_its_line(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        quote.stale([_page(tmp_path, text)])


def test_a_marker_quoted_inside_a_line_is_prose() -> None:
    assert list(quote.regions("Write `<!-- results:NAME -->` above a table.\n")) == []


def _found(text: str) -> list[str]:
    return [f.figure for f in figures.figures(text, "page.md")]


@pytest.mark.parametrize(("text", "expected"), [
    ("a commit on `abfs://` takes 572 ms, the shim's 25 ms", ["572 ms", "25 ms"]),
    ("a micro-batch took 143.8 s (14.0-22.5 s)", ["143.8 s", "22.5 s"]),
    ("at 0.12x the default's, 6.5x fewer, 1.02 times the floor", ["0.12x", "6.5x", "1.02 times"]),
    ("the bill: $531 a month", ["$531"]),
    ("a peak RSS of 46 MB", ["46 MB"]),
    ("24.6 requests a batch, 1.00 per checkpoint file, 2.5 requests",
     ["24.6 requests a batch", "1.00 per checkpoint file", "2.5 requests"]),
    ("it took 2 min 38 s, 60 to 110 µs a file", ["2 min", "38 s", "110 µs"]),
])
def test_measured_looking_figures_are_found(text: str, expected: list[str]) -> None:
    assert _found(text) == expected


@pytest.mark.parametrize("text", [
    "parts of 16 MiB, 8 in flight, on pyspark 3.5.9 and spark-4.3, hadoop3-2.2.28",
    "the store check: 3 requests, once; exit 0; 1 a file it read is torn",
    "run `bench --latency-ms 20 --throttle 0.5x`, a 10-second watermark, 429s and 500s",
    "```\nmake demo   # 572 ms\n```",
    "<!-- 572 ms -->",
    "<!-- results:commit -->\n| direct_write | 1.00 | 208.5 ms |\n<!-- /results:commit -->",
    "| line | Scala | tested |\n|---|---|---|\n| 4.0 (4.0.5) | 2.13 | yes |",
])
def test_settings_versions_code_and_regions_are_not_figures(text: str) -> None:
    assert _found(text) == []


def test_fractions_in_a_measured_column_are_figures() -> None:
    table = ("| entries | seconds | peak RSS | note |\n| --- | --- | --- | --- |\n"
             "| 100 000 | 0.6 | 46 MB | on Spark 4.1, 4.2 and 4.3 the same |\n")
    assert _found(table) == ["0.6", "46 MB"]


def test_an_allowed_line_holds_its_figures_and_nothing_else() -> None:
    text = "Retries back off from 200 ms (the default); a commit took 25 ms.\n"
    found = figures.figures(text, "docs/x.md")
    entry = Allowed("docs/x.md", "back off from 200 ms", "the default back-off, a setting", 1)
    assert [f.figure for f in found if not figures._covers(entry, f)] == ["25 ms"]
    assert not figures._covers(Allowed("docs/other.md", "back off from 200 ms", "why", 1), found[0])
    assert figures._covers(Allowed("*", "200 ms", "why", 1), found[0])


def test_the_allow_list_names_page_text_and_reason(tmp_path: Path) -> None:
    listed = tmp_path / "facts.txt"
    listed.write_text("# a comment\n\ndocs/a.md | 132.8 (797) | 15.8 | a table's cells | counted by a test\n")
    assert figures.load_allowed(listed) == [Allowed("docs/a.md", "132.8 (797) | 15.8 | a table's cells",
                                                    "counted by a test", 3)]
    listed.write_text("docs/a.md | no reason\n")
    with pytest.raises(ValueError, match=re.escape("facts.txt:1: not 'page | text | why'")):
        figures.load_allowed(listed)
