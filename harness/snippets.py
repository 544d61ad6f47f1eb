"""The fenced code blocks of README.md and docs/*.md, and what each one is.

Each block that a reader could take for a command or a program (info string ``bash``, ``sh``, ``shell``,
``console``, ``python``, ``py``, ``pycon``, or none) carries an HTML comment on the line right before its fence::

    <!-- snippet: run -->                          run by tests/docs/test_snippets_run.py (no Spark, the embedded S3)
    <!-- snippet: run given=NAME -->               the same, after the setup NAME of that module
    <!-- snippet: tested-by tests/x.py::test_y -->  that test runs the same commands (or reads this block and runs it)
    <!-- snippet: cloud -->                        needs a real AWS, GCP or Azure account (the prose says so too)
    <!-- snippet: output -->                       a sample of what a command prints (with the command shown)
    <!-- snippet: settings -->                     Spark settings for a properties file, not a command: each literal
                                                   value of a setting that ``spark_conf()`` makes must be its value
    <!-- snippet: dev -->                          a command of the project's own development in a checkout (make
                                                   targets, pytest selections, harness modules): the gate runs those;
                                                   every make target and module it names must exist

Blocks in other languages (json, diff, scala, xml) may carry a marker; it is then checked the same way.

    python -m harness.snippets          # the count of blocks by kind; exit 1 with the problems, if any
"""

from __future__ import annotations

import argparse
import ast
import logging
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

KINDS = ("run", "tested-by", "cloud", "output", "settings", "dev")
CHECKED_LANGUAGES = frozenset({"", "bash", "sh", "shell", "console", "python", "py", "pycon"})
"""Info strings of blocks that must carry a marker: shell, Python, and blocks that name no language."""

MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<kind>\S+)(?:\s+(?P<argument>.*?))?\s*-->\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
_CLOUD_WORDS = re.compile(r"(?i)\b(account|credentials)\b")
CLOUD_PROSE_LINES = 6
"""How many lines before a ``cloud`` block's marker must say it needs a real account (or credentials)."""

log = logging.getLogger("checkpointfs.snippets")


@dataclass(frozen=True)
class Snippet:
    """One fenced block: its page (relative to the repository), the line of its opening fence (from 1), its
    language, its text (the fence's indentation removed), and its marker's kind and argument (None when it has
    none)."""

    page: str
    line: int
    language: str
    text: str
    kind: str | None
    argument: str
    before: str
    """The lines of the page before the marker (or the fence), for the prose checks."""

    @property
    def id(self) -> str:
        """``page:line``, as test ids show it."""
        return f"{self.page}:{self.line}"

    @property
    def checked(self) -> bool:
        """Whether the block must carry a marker."""
        return self.language in CHECKED_LANGUAGES


def pages() -> list[Path]:
    """README.md and every docs/*.md."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def parse(text: str, page: str) -> list[Snippet]:
    """The fenced blocks of ``text`` in order; ValueError naming the page and line of a fence never closed."""
    lines = text.split("\n")
    found: list[Snippet] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(fence[0] * len(fence))
                                        and not lines[end].strip().strip(fence[0])):
            end += 1
        if end == len(lines):
            raise ValueError(f"{page}:{i + 1}: a fenced block that is never closed")
        body = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:end])
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        kind, argument = (marker["kind"], (marker["argument"] or "").strip()) if marker else (None, "")
        before = "\n".join(lines[max(0, i - 1 - CLOUD_PROSE_LINES):i - 1 if marker else i])
        found.append(Snippet(page, i + 1, opening["info"].lower(), textwrap.dedent(body) + "\n", kind, argument,
                             before))
        i = end + 1
    return found


def snippets(paths: Iterable[Path] | None = None) -> list[Snippet]:
    """Every fenced block of ``paths`` (README.md and docs/*.md by default)."""
    return [s for path in (pages() if paths is None else paths)
            for s in parse(path.read_text(), str(path.relative_to(REPO)))]


def names_a_test(target: str, root: Path = REPO) -> bool:
    """Whether ``path.py::name`` (or ``path.py::Class::name``, a parametrization's ``[id]`` left out) names a test
    function defined in that file."""
    path, _, name = target.partition("::")
    file = root / path
    if not name or not path.endswith(".py") or not file.is_file():
        return False
    parts = name.split("[", 1)[0].split("::")
    scope: list[ast.stmt] = ast.parse(file.read_text(), str(file)).body
    for part in parts[:-1]:
        classes = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == part]
        if not classes:
            return False
        scope = classes[0].body
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == parts[-1]
               and n.name.startswith("test") for n in scope)


def _settings_problems(snippet: Snippet) -> list[str]:
    """A ``settings`` block's literal values that differ from what ``spark_conf()`` makes on the main line."""
    from checkpointfs.spark import spark_conf
    from checkpointfs.spark.lines import DEFAULT_LINE

    made = spark_conf(None, line=DEFAULT_LINE, packages=True)
    problems = []
    for number, line in enumerate(snippet.text.splitlines(), start=snippet.line + 1):
        key, _, value = line.strip().partition(" ")
        key, _, assigned = key.partition("=")
        value = (assigned or value).strip()
        if not key or key.startswith("#"):
            continue
        if not key.startswith("spark."):
            problems.append(f"{snippet.page}:{number}: {key!r} is not a Spark setting")
        elif key in made and not re.search(r"\.\.\.|/path|<", value) and value != made[key]:
            problems.append(f"{snippet.page}:{number}: {key} is {value!r} here, spark_conf() makes {made[key]!r}")
    return problems


_MAKE_TARGET = re.compile(r"^\s*make\s+(?P<target>[\w-]+)", re.M)
_MODULE = re.compile(r"-m\s+(?P<module>(?:harness|benchmarks|checkpointfs)(?:\.\w+)*)")
_TEST_PATH = re.compile(r"(?<![\w/.])(?P<path>tests(?:/[\w.-]+)*)")
_MAKEFILE_TARGET = re.compile(r"^(?P<targets>[\w-]+(?:\s+[\w-]+)*)\s*:(?!=)", re.M)


def _dev_problems(snippet: Snippet) -> list[str]:
    """The make targets, modules and test paths a ``dev`` block names that do not exist."""
    targets = {t for m in _MAKEFILE_TARGET.finditer((REPO / "Makefile").read_text()) for t in m["targets"].split()}
    problems = [f"{snippet.id}: no make target {m['target']!r}" for m in _MAKE_TARGET.finditer(snippet.text)
                if m["target"] not in targets]
    for m in _MODULE.finditer(snippet.text):
        module = REPO / m["module"].replace(".", "/")
        if not (module.with_suffix(".py").is_file() or (module / "__init__.py").is_file()):
            problems.append(f"{snippet.id}: no module {m['module']!r} in the checkout")
    problems += [f"{snippet.id}: no {m['path']!r} in the checkout" for m in _TEST_PATH.finditer(snippet.text)
                 if not (REPO / m["path"]).exists()]
    return problems


def problems(found: Iterable[Snippet]) -> list[str]:
    """What is wrong with the markers of ``found``: a block that needs one and has none, an unknown kind, a
    ``tested-by`` naming no test, a ``cloud`` block whose prose does not say so, a ``settings`` or ``dev`` block
    that does not hold, an argument where none is taken."""
    out: list[str] = []
    for s in found:
        if s.kind is None:
            if s.checked:
                out.append(f"{s.id}: a ```{s.language or '(no language)'} block without a `<!-- snippet: KIND -->` "
                           f"line before it (KIND: {', '.join(KINDS)})")
            continue
        if s.kind not in KINDS:
            out.append(f"{s.id}: unknown snippet kind {s.kind!r} (known: {', '.join(KINDS)})")
        elif s.kind == "tested-by":
            if not names_a_test(s.argument):
                out.append(f"{s.id}: tested-by {s.argument!r} names no test function in the checkout")
        elif s.kind == "run":
            if s.argument and not s.argument.startswith("given="):
                out.append(f"{s.id}: run takes only given=NAME, not {s.argument!r}")
            if s.language not in {"bash", "sh", "python", "py"}:
                out.append(f"{s.id}: run needs a ```bash or ```python block, not {s.language or 'no language'!r}")
        elif s.argument:
            out.append(f"{s.id}: {s.kind} takes no argument ({s.argument!r})")
        elif s.kind == "cloud" and not _CLOUD_WORDS.search(s.before):
            out.append(f"{s.id}: a cloud block whose prose (the {CLOUD_PROSE_LINES} lines before it) does not say "
                       "it needs a real account")
        elif s.kind == "settings":
            out += _settings_problems(s)
        elif s.kind == "dev":
            out += _dev_problems(s)
    return out


def marked(kind: str, found: Iterable[Snippet] | None = None) -> list[Snippet]:
    """The blocks marked ``kind``."""
    return [s for s in (snippets() if found is None else found) if s.kind == kind]


def blocks_tested_by(nodeid: str) -> list[Snippet]:
    """The blocks whose ``tested-by`` names ``nodeid`` (a parametrization's ``[id]`` left out): for a test that
    reads the documented commands and runs them."""
    name = nodeid.split("[", 1)[0]
    return [s for s in marked("tested-by") if s.argument == name]


def substituted(snippet: Snippet, replacements: dict[str, str]) -> str:
    """The block's text with each key of ``replacements`` replaced (what stands for the reader's own store, master
    or file); AssertionError naming a key the block no longer holds, so that a test running it notices the docs
    changed."""
    text = snippet.text
    for old, new in replacements.items():
        assert old in text, f"{snippet.id} no longer holds {old!r}:\n{text}"
        text = text.replace(old, new)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    found = snippets()
    counts = Counter(s.kind or "unmarked" for s in found if s.checked or s.kind)
    for kind in (*KINDS, "unmarked"):
        log.info("%-9s %d", kind, counts.get(kind, 0))
    wrong = problems(found)
    for problem in wrong:
        log.error("%s", problem)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
