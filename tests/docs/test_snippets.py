"""Every shell and Python block of README.md and docs/*.md says what it is (harness/snippets.py): run by a test,
tested by a named test that exists, needing a real cloud account, a sample of output, Spark settings that match
``spark_conf()``, or a development command whose make targets and modules exist. No Spark, no JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.snippets import REPO, names_a_test, parse, problems, snippets


def test_every_block_of_the_docs_is_marked_and_its_marker_holds() -> None:
    found = snippets()
    assert [s for s in found if s.checked], "no shell or Python block found: the parser lost them"
    assert problems(found) == []


def _problems(page: str) -> list[str]:
    return problems(parse(page, "page.md"))


@pytest.mark.parametrize(("page", "expected"), [
    ("text\n\n```bash\nls\n```\n", ["page.md:3: a ```bash block without"]),
    ("text\n\n```\nls\n```\n", ["page.md:3: a ```(no language) block without"]),
    ("```json\n{}\n```\n", []),
    ("<!-- snippet: output -->\n```\n$ ls\nREADME.md\n```\n", []),
    ("<!-- snippet: bogus -->\n```bash\nls\n```\n", ["page.md:2: unknown snippet kind 'bogus'"]),
    ("<!-- snippet: tested-by tests/docs/test_snippets.py::test_nothing_of_that_name -->\n```bash\nls\n```\n",
     ["page.md:2: tested-by 'tests/docs/test_snippets.py::test_nothing_of_that_name' names no test"]),
    ("Needs no login.\n<!-- snippet: cloud -->\n```bash\naws s3 ls\n```\n", ["page.md:3: a cloud block whose prose"]),
    ("With a real AWS account:\n<!-- snippet: cloud -->\n```bash\naws s3 ls\n```\n", []),
    ("<!-- snippet: dev -->\n```\nmake no-such-target\n```\n", ["page.md:2: no make target 'no-such-target'"]),
    ("<!-- snippet: dev -->\n```\n.venv/bin/python -m harness.no_such_module\n```\n",
     ["page.md:2: no module 'harness.no_such_module'"]),
    ("<!-- snippet: dev -->\n```\nmake check\n.venv/bin/python -m pytest tests/docs -m 'not spark'\n```\n", []),
    ("<!-- snippet: settings -->\n```\nspark.hadoop.fs.s3a.create.conditional.enabled false\n```\n",
     ["page.md:3: spark.hadoop.fs.s3a.create.conditional.enabled is 'false' here, spark_conf() makes 'true'"]),
    ("<!-- snippet: settings -->\n```\nspark.jars /path/a.jar,...\n"
     "spark.plugins io.checkpointfs.spark.CheckpointfsPlugin\n```\n", []),
    ("<!-- snippet: run -->\n```\nls\n```\n", ["page.md:2: run needs a ```bash or ```python block"]),
    ("<!-- snippet: output extra -->\n```\nls\n```\n", ["page.md:2: output takes no argument"]),
])
def test_markers_are_checked(page: str, expected: list[str]) -> None:
    found = _problems(page)
    assert len(found) == len(expected), found
    for problem, start in zip(found, expected, strict=True):
        assert problem.startswith(start), problem


def test_an_unclosed_fence_names_its_line() -> None:
    with pytest.raises(ValueError, match=r"page\.md:2: a fenced block that is never closed"):
        parse("text\n```bash\nls\n", "page.md")


def test_an_indented_block_in_a_list_is_read_without_its_indentation() -> None:
    [block] = parse("1. Run:\n   <!-- snippet: run -->\n   ```python\n   print(1)\n   ```\n", "page.md")
    assert (block.kind, block.language, block.text, block.line) == ("run", "python", "print(1)\n", 3)


@pytest.mark.parametrize(("target", "expected"), [
    ("tests/docs/test_snippets.py::test_markers_are_checked", True),
    ("tests/docs/test_snippets.py::test_markers_are_checked[x]", True),
    ("tests/docs/test_snippets.py::test_missing", False),
    ("tests/docs/test_snippets.py::_problems", False),
    ("tests/docs/no_such_file.py::test_x", False),
    ("tests/docs/test_snippets.py", False),
])
def test_tested_by_must_name_a_test_function(target: str, expected: bool) -> None:
    assert names_a_test(target) is expected


def test_pages_are_the_readme_and_the_docs() -> None:
    read = {s.page for s in snippets()}
    assert "README.md" in read and any(page.startswith("docs/") for page in read)
    assert all((REPO / page).is_file() for page in read) and not any(Path(p).is_absolute() for p in read)
