"""The layout of a checkpoint directory, read from one recursive listing: which log files exist, and the state
store files of each stateful operator.

State layout (Spark 3.5 to 4.3): ``state/<operatorId>/<partition>/`` holds the default store's files; a named store
(a stream-stream join's ``left-keyToNumValues`` and the like) has its own subdirectory there. Version ``v`` (the state
after batch ``v - 1``) is ``<v>.delta`` or ``<v>.snapshot`` (HDFSBackedStateStoreProvider), ``<v>.zip`` or
``<v>.changelog`` (RocksDBStateStoreProvider; ``<v>_<uniqueId>.zip``/``.changelog`` with checkpoint format 2).
``state/<operatorId>/_metadata/metadata`` describes the operator (name, stores, partitions); names starting with
``_`` or ``.`` are never partitions or stores.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..log import names
from .store import TEMP_NAME, Listed

VERSION_FILE = re.compile(r"^(\d+)(?:_([^.]+))?\.(delta|snapshot|zip|changelog)$")
FULL_KINDS = frozenset({"snapshot", "zip"})
"""Files that hold a whole version; the others hold the changes since the previous version."""
NOT_STORES = frozenset({"SSTs", "logs"})
"""RocksDB's shared directories inside a partition: its SST and log files, not stores."""
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


@dataclass
class Tree:
    """The files of a directory tree, by directory (``""`` is the root): name -> size."""

    files: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    subdirs: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    count: int = 0

    @classmethod
    def of(cls, listing: Iterable[Listed]) -> Tree:
        """The tree of a recursive listing."""
        tree = cls()
        for item in listing:
            parent, _, name = item.rel.rpartition("/")
            tree.files[parent][name] = item.size
            tree.count += 1
            while parent:
                above, _, child = parent.rpartition("/")
                if child in tree.subdirs[above]:
                    break
                tree.subdirs[above].add(child)
                parent = above
        return tree

    def names(self, directory: str) -> dict[str, int]:
        """The files directly in ``directory``."""
        return self.files.get(directory, {})

    def dirs(self, directory: str) -> set[str]:
        """The subdirectories of ``directory``."""
        return self.subdirs.get(directory, set())

    def batch_ids(self, directory: str, compactible: bool = False) -> list[tuple[int, str]]:
        """``(batch id, file name)`` of the log files in ``directory``, by batch id."""
        found = [(batch_id, name) for name in self.names(directory)
                 if (batch_id := names.batch_id_of(name, compactible)) is not None]
        return sorted(found)

    def temp_files(self) -> list[str]:
        """Relative paths of leftover temp files: ``.<name>.<uuid>.tmp`` and anything under ``_temporary/``."""
        found = []
        for directory, files in self.files.items():
            in_temporary = "_temporary" in directory.split("/")
            for name in files:
                if in_temporary or TEMP_NAME.match(name):
                    found.append(f"{directory}/{name}" if directory else name)
        return sorted(found)


@dataclass
class StoreFiles:
    """The version files of one state store instance (an operator's partition, one store)."""

    rel: str
    full: set[int] = field(default_factory=set)
    changes: set[int] = field(default_factory=set)

    @property
    def latest(self) -> int | None:
        """The highest version with a file."""
        versions = self.full | self.changes
        return max(versions) if versions else None

    def loadable(self, version: int) -> bool:
        """Whether ``version`` can be rebuilt: a whole-version file at it, or its change file on top of a loadable
        previous version (version 0 is the empty state)."""
        while version > 0:
            if version in self.full:
                return True
            if version not in self.changes:
                return False
            version -= 1
        return True

    def files_for(self, version: int) -> bool:
        """Whether a file of exactly ``version`` exists."""
        return version in self.full or version in self.changes


@dataclass
class OperatorLayout:
    """One stateful operator's directory ``state/<id>``."""

    id: int
    rel: str
    partitions: dict[int, list[StoreFiles]]
    metadata_rel: str | None
    """The operator's metadata file: ``_metadata/metadata`` (version 1, Spark 4.0+), else the latest
    ``_metadata/v2/<batch>`` (version 2: transformWithState, Spark 4.0+); None when it has none."""

    @property
    def has_metadata(self) -> bool:
        """Whether the operator has a metadata file."""
        return self.metadata_rel is not None

    @property
    def latest_version(self) -> int | None:
        """The highest state version any partition holds."""
        versions = [s.latest for stores in self.partitions.values() for s in stores if s.latest is not None]
        return max(versions) if versions else None


def store_files(tree: Tree, rel: str) -> StoreFiles:
    """The version files directly in ``rel``."""
    store = StoreFiles(rel)
    for name in tree.names(rel):
        match = VERSION_FILE.match(name)
        if match:
            (store.full if match.group(3) in FULL_KINDS else store.changes).add(int(match.group(1)))
    return store


def metadata_file(tree: Tree, op_rel: str) -> str | None:
    """The operator metadata file of ``op_rel`` (see :attr:`OperatorLayout.metadata_rel`)."""
    if "metadata" in tree.names(f"{op_rel}/_metadata"):
        return f"{op_rel}/_metadata/metadata"
    batches = [b for b in (names.parse_long(n) for n in tree.names(f"{op_rel}/_metadata/v2")) if b is not None]
    return f"{op_rel}/_metadata/v2/{max(batches)}" if batches else None


def operators(tree: Tree, state_rel: str = "state") -> list[OperatorLayout]:
    """The operators under ``state/``, by id."""
    found = []
    for op_name in tree.dirs(state_rel):
        op_id = names.parse_long(op_name)
        if op_id is None or op_id < 0:
            continue
        op_rel = f"{state_rel}/{op_name}"
        partitions: dict[int, list[StoreFiles]] = {}
        for part_name in tree.dirs(op_rel):
            part = names.parse_long(part_name)
            if part is None or part < 0:
                continue
            part_rel = f"{op_rel}/{part_name}"
            stores = [store_files(tree, part_rel)]
            stores += [store_files(tree, f"{part_rel}/{sub}") for sub in sorted(tree.dirs(part_rel))
                       if not sub.startswith(("_", ".")) and sub not in NOT_STORES]
            partitions[part] = [s for s in stores if s.latest is not None] or stores[:1]
        found.append(OperatorLayout(op_id, op_rel, partitions, metadata_file(tree, op_rel)))
    return sorted(found, key=lambda op: op.id)


def provider_of(conf: dict[str, str] | None, tree: Tree, operator: OperatorLayout) -> str | None:
    """The state store provider: recorded in the offsets' conf, else told by the file names (``.zip``/``.changelog``
    are RocksDB's, ``.delta``/``.snapshot`` HDFSBackedStateStoreProvider's)."""
    if conf and conf.get(PROVIDER_CONF):
        return conf[PROVIDER_CONF]
    for stores in operator.partitions.values():
        for store in stores:
            for name in tree.names(store.rel):
                match = VERSION_FILE.match(name)
                if match:
                    return ROCKSDB_PROVIDER if match.group(3) in ("zip", "changelog") else HDFS_PROVIDER
    return None
