"""The library's import structure: no import cycles (imports under ``TYPE_CHECKING`` and inside functions
included), and the light entry points do not pull in heavy dependencies."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

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


STORES = {"s3": {"boto3", "botocore", "mypy_boto3_s3"}, "gcs": {"google", "requests"},
          "azure": {"azure"}}
"""Each store folder of checkpointfs.store and the client libraries only it may import."""


def runtime_imports(path: Path) -> set[str]:
    """The top-level names of the packages ``path`` imports outside ``if TYPE_CHECKING`` (annotations only)."""
    imported: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in inner.names}
            elif isinstance(inner, ast.ImportFrom) and not inner.level:
                imported.add((inner.module or "").split(".")[0])
    return imported


def test_the_manager_knows_the_store_interface_only() -> None:
    """checkpointfs.direct keeps the contract on the store interface and its wrappers, connected through the
    registry: no module of it imports a store's folder."""
    graph = import_graph()
    assert {"checkpointfs.store.base", "checkpointfs.store.registry", "checkpointfs.direct.stream"} <= graph[
        "checkpointfs.direct.manager"]
    direct = {name: deps for name, deps in graph.items() if name.startswith("checkpointfs.direct")}
    for name, deps in direct.items():
        stores = {d for d in deps if any(d.startswith(f"checkpointfs.store.{s}") for s in STORES)}
        assert not stores, f"{name} imports a store's folder: {sorted(stores)}"


def test_no_store_folder_imports_another() -> None:
    graph = import_graph()
    for store in STORES:
        mine = {name for name in graph if name.startswith(f"checkpointfs.store.{store}")}
        others = {f"checkpointfs.store.{other}" for other in STORES if other != store}
        for name in mine:
            crossing = {d for d in graph[name] if d.startswith(tuple(others))}
            assert not crossing, f"{name} imports another store's folder: {sorted(crossing)}"


def test_each_client_library_is_imported_by_its_store_folder_only() -> None:
    """Outside ``if TYPE_CHECKING``, boto3 and botocore are imported under checkpointfs/store/s3 only, google-auth and
    requests under checkpointfs/store/gcs only, the Azure SDK under checkpointfs/store/azure only (in the manager and
    the store layer; the tools are the next to move)."""
    for path in PACKAGE_DIR.rglob("*.py"):
        name = module_name(path)
        if not name.startswith(("checkpointfs.direct", "checkpointfs.store")):
            continue
        imported = runtime_imports(path)
        for store, libraries in STORES.items():
            if not name.startswith(f"checkpointfs.store.{store}"):
                assert not imported & libraries, f"{name} imports {sorted(imported & libraries)}"


@pytest.mark.parametrize(("uri", "options", "extra", "loaded", "not_loaded"), [
    ("s3://bucket/cp", {}, "boto3", {"boto3", "botocore"}, {"google.auth", "requests", "azure.storage.blob"}),
    ("gs://bucket/cp", {}, "google.auth", {"google.auth", "requests"}, {"boto3", "botocore", "azure.storage.blob"}),
    ("az://container/cp", {"account_name": "acct", "account_key": "a2V5"}, "azure.storage.blob",
     {"azure.storage.blob"}, {"boto3", "botocore", "google.auth"}),
])
def test_a_manager_loads_its_own_stores_client_library_only(uri: str, options: dict[str, str], extra: str,
                                                           loaded: set[str], not_loaded: set[str]) -> None:
    """``manager_for`` on each scheme, in a fresh interpreter: the store's own client library is loaded, no other
    store's (``gs://`` and ``az://`` load neither boto3 nor botocore)."""
    pytest.importorskip(extra)
    code = ("import sys, checkpointfs\n"
            f"checkpointfs.manager_for({uri!r}, endpoint_url='http://127.0.0.1:9', **{options!r})\n"
            f"print(','.join(sorted(m for m in {sorted(loaded | not_loaded)!r} if m in sys.modules)))")
    env = {**os.environ, "STORAGE_EMULATOR_HOST": "", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    modules = set(filter(None, out.stdout.strip().split(",")))
    assert modules == loaded, (uri, modules)


def test_the_library_has_no_import_cycles() -> None:
    try:
        order = list(TopologicalSorter(import_graph()).static_order())
    except CycleError as e:
        raise AssertionError(f"import cycle in checkpointfs: {' -> '.join(e.args[1])}") from None
    assert "checkpointfs.direct.manager" in order


def test_importing_the_sink_does_not_import_boto3() -> None:
    code = ("import sys, checkpointfs.sink; "
            "print(','.join(sorted(m for m in ('boto3', 'botocore') if m in sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert loaded == "", f"importing checkpointfs.sink loaded {loaded}"
