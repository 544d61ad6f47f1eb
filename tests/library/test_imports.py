"""The library's import structure: no import cycles (imports under ``TYPE_CHECKING`` and inside functions
included), and the light entry points do not pull in heavy dependencies."""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import checkpointfs

PACKAGE_DIR = Path(checkpointfs.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every module of checkpointfs/ -> the checkpointfs modules it imports, anywhere in its source."""
    modules = {module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from pkg import sub`` imports the submodule; ``from pkg import name`` the package itself
                subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def test_the_import_graph_covers_the_s3_modules() -> None:
    """The manager keeps the contract on the store interface; only the S3 store knows boto3 (through
    checkpointfs.s3.client, which reads botocore failures); the stream and the reader know the interface only."""
    graph = import_graph()
    assert {"checkpointfs.store.base", "checkpointfs.store.s3", "checkpointfs.s3.stream"} <= graph[
        "checkpointfs.s3.manager"]
    assert "checkpointfs.s3.client" in graph["checkpointfs.store.s3"]
    assert "checkpointfs.store.s3" not in graph["checkpointfs.s3.stream"] | graph["checkpointfs.s3.reader"]
    assert "checkpointfs.protocol" in graph["checkpointfs.s3.client"]


def test_only_the_s3_store_and_its_translation_import_boto3() -> None:
    """Outside ``if TYPE_CHECKING`` (annotations only), no module of the S3 side but those two imports boto3."""
    boto = {"boto3", "botocore"}
    for path in PACKAGE_DIR.rglob("*.py"):
        name = module_name(path)
        if not name.startswith(("checkpointfs.s3", "checkpointfs.store")):
            continue
        imported: set[str] = set()
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in inner.names}
                elif isinstance(inner, ast.ImportFrom) and not inner.level:
                    imported.add((inner.module or "").split(".")[0])
        if name not in ("checkpointfs.store.s3", "checkpointfs.s3.client"):
            assert not imported & boto, f"{name} imports {imported & boto}"


def test_the_library_has_no_import_cycles() -> None:
    try:
        order = list(TopologicalSorter(import_graph()).static_order())
    except CycleError as e:
        raise AssertionError(f"import cycle in checkpointfs: {' -> '.join(e.args[1])}") from None
    assert "checkpointfs.s3.manager" in order


def test_importing_the_sink_does_not_import_boto3() -> None:
    code = ("import sys, checkpointfs.sink; "
            "print(','.join(sorted(m for m in ('boto3', 'botocore') if m in sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert loaded == "", f"importing checkpointfs.sink loaded {loaded}"
