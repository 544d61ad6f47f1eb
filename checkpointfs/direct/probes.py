"""The probe rule of DirectWriteManager: ``exists`` and ``open`` with the fewest requests S3 allows.

docs/contract.md ("exists: the probe rule") states it once for Python and the JVM shim (whose
``io.checkpointfs.spark.direct.Probes`` lists the Spark call sites it was derived from, per line: 3.5, 4.0, 4.1, 4.2 and
4.3, none of which asks about a directory under a file's name). In short: a file this manager published with
put-if-absent and has not deleted exists with no request, and so does a directory it made (``mkdirs``, which sends
no request) or a parent of one, until the manager deletes it or a parent of it, as on a file system; a path strictly
below the manager's root whose name Spark gives only to files, and that is not a directory the manager has seen, is
probed with one HeadObject; anything else (the root, what lies above it, directories, other names) with a HeadObject
and, when that finds no file, one ListObjectsV2. In mode ``log-order`` (the default) the next batch of a metadata log
is answered with no request too: a log batch (``N``, ``N.compact``) whose previous batch (``N-1`` or
``N-1.compact``) this manager published beside it with put-if-absent, and has not deleted, is absent, while the
store check is on (a writer of ``N`` then fails its put-if-absent, as it would fail on ``exists``' true). The file
names and the bounds of what a manager remembers are the protocol's (:mod:`checkpointfs.protocol`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Literal

from ..protocol import CONTENT_BUDGET_BYTES, KNOWLEDGE_CAPACITY, MAX_CONTENT_BYTES, is_file_name, is_log_batch_name

__all__ = ["ExistsPlan", "Knowledge", "ProbeMode", "exists_plan", "is_below", "is_file_name", "is_log_batch_name",
           "previous_batches"]

ProbeMode = Literal["log-order", "file-names", "full"]
"""``log-order`` (default): the rule, with the next batch of a log this manager writes answered absent;
``file-names``: the rule, a HeadObject for every file; ``full``: HeadObject then ListObjectsV2 for every path."""


ExistsPlan = Literal["present", "absent", "head", "head-then-list"]
"""How ``exists`` of a file path is answered: ``present``/``absent`` with no request, ``head`` (one head request;
absent on 404), or ``head-then-list`` (a head request and, on 404, a one-entry listing of the path as a directory)."""


def previous_batches(name: str) -> tuple[str, ...]:
    """The names of the batch before log batch ``name`` (``N`` or ``N.compact``): ``N-1`` and ``N-1.compact``;
    none for batch 0 or a name that is not a log batch."""
    if not is_log_batch_name(name):
        return ()
    batch = int(name.removesuffix(".compact"))
    return (str(batch - 1), f"{batch - 1}.compact") if batch > 0 else ()


def is_below(root: tuple[str, str], bucket: str, key: str) -> bool:
    """Whether ``bucket``/``key`` lies strictly below ``root`` (a bucket and a key prefix, "" for the bucket)."""
    root_bucket, root_key = root
    if bucket != root_bucket:
        return False
    return not root_key or key.startswith(root_key.rstrip("/") + "/")


_NO_CONTENT = b""


class Knowledge:
    """What one manager knows: files it published with put-if-absent and has not deleted (with the bytes of the
    small ones), directories it has seen (parents of files it wrote or listed, directories a listing showed), and
    directories it made (``mkdirs``, which sends no request) with their parents, as a file system makes them:
    present with no request, and shown by a listing of their parent, until the manager deletes them or a parent.
    Bounded; forgetting only costs a request. It never makes a file appear that this manager did not publish."""

    def __init__(self, capacity: int = KNOWLEDGE_CAPACITY, budget: int = CONTENT_BUDGET_BYTES) -> None:
        self._lock = threading.Lock()
        self._capacity = capacity
        self._budget = budget
        self._published: OrderedDict[tuple[str, str], bytes | None] = OrderedDict()
        self._directories: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._made: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._kept = 0

    def published(self, bucket: str, key: str, content: bytes | None, put_if_absent: bool) -> None:
        """``key`` was published by this manager; ``content`` its bytes when known."""
        with self._lock:
            self._drop((bucket, key))
            self._note_parents(bucket, key)
            if not put_if_absent:
                return
            kept = content if (content is not None and len(content) <= MAX_CONTENT_BYTES
                               and is_log_batch_name(key.rsplit("/", 1)[-1])) else None
            self._published[(bucket, key)] = kept
            self._kept += len(kept or _NO_CONTENT)
            while len(self._published) > self._capacity:
                _, evicted = self._published.popitem(last=False)
                self._kept -= len(evicted or _NO_CONTENT)
            for name, value in self._published.items():  # oldest first: keep the bytes within the budget
                if self._kept <= self._budget:
                    break
                if value is not None:
                    self._kept -= len(value)
                    self._published[name] = None

    def listed(self, bucket: str, directories: list[str], files: list[str]) -> None:
        """What a listing showed (keys of sub-directories and of files)."""
        with self._lock:
            for key in directories:
                self._add_directory(bucket, key)
            for key in files:
                self._note_parents(bucket, key)

    def made(self, bucket: str, key: str) -> None:
        """``key`` was made by this manager (``mkdirs``): it and each of its parents are made directories, the key
        itself the newest."""
        parts = key.strip("/").split("/")
        with self._lock:
            for i in range(1, len(parts) + 1):
                name = (bucket, "/".join(parts[:i]))
                self._made[name] = None
                self._made.move_to_end(name)
                while len(self._made) > self._capacity:
                    self._made.popitem(last=False)

    def is_made(self, bucket: str, key: str) -> bool:
        """Whether ``key`` is a directory this manager made, or a parent of one, and has not deleted since."""
        with self._lock:
            return (bucket, key) in self._made

    def made_children(self, bucket: str, key: str) -> list[str]:
        """The keys of the directories this manager made directly in directory ``key`` ("" for the bucket), sorted:
        a listing of ``key`` shows them."""
        with self._lock:
            return sorted(k for b, k in self._made if b == bucket and k.rpartition("/")[0] == key)

    def is_published(self, bucket: str, key: str) -> bool:
        with self._lock:
            return (bucket, key) in self._published

    def is_next_batch(self, bucket: str, key: str) -> bool:
        """Whether ``key`` is the batch after one this manager published beside it with put-if-absent (and has not
        deleted): :func:`previous_batches`."""
        directory, _, name = key.rpartition("/")
        before = [f"{directory}/{b}" if directory else b for b in previous_batches(name)]
        with self._lock:
            return any((bucket, b) in self._published for b in before)

    def content(self, bucket: str, key: str) -> bytes | None:
        """The bytes of a published file, when kept."""
        with self._lock:
            return self._published.get((bucket, key))

    def is_directory(self, bucket: str, key: str) -> bool:
        with self._lock:
            return (bucket, key) in self._directories or (bucket, key) in self._made

    def forget(self, bucket: str, key: str) -> None:
        """Drop what is known at or below ``key`` (a delete)."""
        prefix = key.rstrip("/") + "/"
        with self._lock:
            for name in [n for n in self._published if n[0] == bucket and (n[1] == key or n[1].startswith(prefix))]:
                self._drop(name)
            for known in (self._directories, self._made):
                for name in [n for n in known if n[0] == bucket and (n[1] == key or n[1].startswith(prefix))]:
                    del known[name]

    def forget_file(self, bucket: str, key: str) -> None:
        """Drop one file before it is written again."""
        with self._lock:
            self._drop((bucket, key))

    def _drop(self, name: tuple[str, str]) -> None:
        if name in self._published:
            self._kept -= len(self._published.pop(name) or _NO_CONTENT)

    def _note_parents(self, bucket: str, key: str) -> None:
        parts = key.split("/")[:-1]
        for i in range(len(parts), 0, -1):
            self._add_directory(bucket, "/".join(parts[:i]))

    def _add_directory(self, bucket: str, key: str) -> None:
        self._directories[(bucket, key)] = None
        self._directories.move_to_end((bucket, key))
        while len(self._directories) > self._capacity:
            self._directories.popitem(last=False)


def exists_plan(known: Knowledge, root: tuple[str, str] | None, bucket: str, key: str, *, mode: ProbeMode,
                store_check: bool) -> ExistsPlan:
    """The probe rule (docs/contract.md, "exists: the probe rule"; tests/protocol/golden_probes.json, which the
    shim's ``Probes.existsPlan`` follows too): how ``exists`` of ``bucket``/``key`` (a key, not a bucket) is answered
    by a manager serving ``root`` (None: no root) that knows ``known``."""
    full = mode == "full"
    if not full and (known.is_published(bucket, key) or known.is_made(bucket, key)):
        return "present"
    below = root is not None and is_below(root, bucket, key)
    if mode == "log-order" and store_check and below and known.is_next_batch(bucket, key):
        return "absent"
    if (not full and below and is_file_name(key.rsplit("/", 1)[-1])
            and not known.is_directory(bucket, key)):
        return "head"
    return "head-then-list"
