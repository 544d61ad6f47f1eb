"""The wheel ships only what users import: every module under checkpointfs/ (the wheel takes them all) is reachable,
through static imports, from a module users import or run; and none imports the project's own tooling.

The project's servers (MinIO, fake-gcs-server, Azurite, the recording proxy, the Spark cluster) live in
harness/servers, outside the package: a module that only this repository's tests, harness or benchmarks import belongs
there (or in tests/), not in the wheel."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / "checkpointfs"
PROJECT_ONLY = ("harness", "tests")
"""Top-level packages of this checkout that the library must not import."""


def package_modules() -> dict[str, Path]:
    """Every module of the source tree the wheel is built from: dotted name -> file."""
    modules = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def lazy_submodules(tree: ast.Module) -> set[str]:
    """The submodule names a package's module-level ``__getattr__`` loads from its tables: the string values of the
    module-level dicts it reads (``_WHERE = {"EmbeddedS3": "embedded_s3", ...}`` in checkpointfs/testing)."""
    getattr_fn = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"),
                      None)
    if getattr_fn is None:
        return set()
    read = {node.id for node in ast.walk(getattr_fn) if isinstance(node, ast.Name)}
    names: set[str] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id in read
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            names |= {v.value for v in node.value.values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return names


def imported_names(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module ``name`` imports anywhere in its source (under ``TYPE_CHECKING`` and inside functions too),
    relative imports resolved, with the packages each import runs on the way; a package's ``__init__`` also imports
    the submodules its lazy ``__getattr__`` tables name, and any module imports a module whose full dotted name it
    holds as a string (what ``importlib.import_module`` is given)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    targets: set[str] = {f"{name}.{sub}" for sub in lazy_submodules(tree)} if path.name == "__init__.py" else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules:
            targets.add(node.value)  # a module named in full, loaded by importlib (checkpointfs.store.registry)
    with_parents = set(targets)
    for target in targets:  # importing a.b.c runs a and a.b first
        parts = target.split(".")
        with_parents |= {".".join(parts[:i]) for i in range(1, len(parts))}
    return with_parents - {name}


DOCUMENTED_WITHOUT_IMPORTER = {
    "checkpointfs.protocol.settings": "docs/spark.md: the Python statement of the shim's settings check, which "
                                      "tests/protocol/golden_settings.json holds the shim to",
}
"""Modules shipped on purpose that nothing users import reaches, each with where the docs name it and why."""

ENTRY_POINT = re.compile(r"""pytest_plugins\s*=\s*\[\s*["'](checkpointfs[\w.]*)|-p\s+(checkpointfs[\w.]*)"""
                         r"|python\d?(?:\.\d+)?\s+-m\s+(checkpointfs[\w.]*)|\bfrom\s+(checkpointfs[\w.]*)\s+import\b"
                         r"|\bimport\s+(checkpointfs[\w.]*)")
"""How the README and docs/ tell users to load a module: ``pytest_plugins``, ``-p``, ``python -m``, ``import``."""


def docs_text() -> str:
    return "\n".join(doc.read_text() for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


def roots(modules: dict[str, Path]) -> set[str]:
    """What users import or run: the package and each direct subpackage, the console scripts' modules
    (pyproject.toml), the modules the README and docs/ tell users to import, run or load as a pytest plugin, and
    :data:`DOCUMENTED_WITHOUT_IMPORTER`."""
    found = {"checkpointfs"} | {name for name, path in modules.items()
                                if path.name == "__init__.py" and name.count(".") == 1}
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"].get("scripts", {})
    found |= {target.split(":")[0] for target in scripts.values()}
    found |= {next(g for g in m.groups() if g) for m in ENTRY_POINT.finditer(docs_text())}
    return found | DOCUMENTED_WITHOUT_IMPORTER.keys()


def test_every_module_of_the_package_is_reachable_from_what_users_import() -> None:
    modules = package_modules()
    graph = {name: imported_names(name, path, modules) for name, path in modules.items()}
    start = roots(modules)
    assert {"checkpointfs", "checkpointfs.cli", "checkpointfs.testing", "checkpointfs.testing.pytest_plugin"} <= start
    missing = sorted(start - modules.keys())
    assert not missing, f"modules the docs name that are not in checkpointfs/: {missing}"
    undocumented = [m for m in DOCUMENTED_WITHOUT_IMPORTER if f"`{m}`" not in docs_text()]
    assert not undocumented, f"DOCUMENTED_WITHOUT_IMPORTER names modules the docs do not: {undocumented}"
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(t for t in graph[name] if t in modules and t not in seen)
    unreachable = sorted(modules.keys() - seen)
    assert not unreachable, (
        f"modules of checkpointfs/ that nothing users import reaches (they would ship in the wheel): "
        f"{', '.join(f'{m} ({modules[m].relative_to(REPO)})' for m in unreachable)}; "
        "project-only? move it to harness/ or tests/support")


def test_the_package_imports_nothing_of_the_project_tooling() -> None:
    modules = package_modules()
    offenders = []
    for name, path in modules.items():
        tooling = {t for t in imported_names(name, path, modules) if t.split(".")[0] in PROJECT_ONLY}
        offenders += [f"{name} imports {t}" for t in sorted(tooling) if not any(o.startswith(f"{t}.") for o in tooling)]
    assert not offenders, f"the wheel has no harness/ nor tests/: {'; '.join(offenders)}"
