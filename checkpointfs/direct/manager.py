"""DirectWriteManager: checkpoint files written straight to their final object key, no temp key, no rename. It keeps
the contract on an :class:`~checkpointfs.store.base.ObjectStore`: by default the one its root's scheme names, connected
by :func:`checkpointfs.store.connect` (S3, GCS or Azure Blob Storage), wrapped in a
:class:`~checkpointfs.store.read_your_writes.ReadYourWritesStore` when ``consistency_window_s`` is set and in the
store check (:class:`~checkpointfs.store.check.CheckedStore`) unless ``store_check`` is off. It knows no store by
name: nothing here imports a store's folder.

Costs, in requests: before the process's first create-if-absent to a bucket, the store check (3 requests; 6 more
before its first create-if-absent multipart completion there: checkpointfs.store.check); a small-file commit is one
PutObject; ``exists`` of a file one HeadObject (none for a file this manager published or a directory it made; the
probe rule of checkpointfs.direct.probes says when a 404 is followed by a ListObjectsV2); ``open`` one GetObject (none
for a small file this manager published); ``mkdirs`` none; ``list`` one ListObjectsV2 per 1000 children (with the
directories this manager made there, which the store does not hold); ``delete`` one DeleteObject plus one listing of
the prefix and one DeleteObjects per 1000 keys under it. On ``gs://`` and Azure the same costs hold under their
stores' names (a small-file commit is one multipart upload ``POST``, one Put Blob: checkpointfs.store.gcs,
checkpointfs.store.azure).
"""

from __future__ import annotations

import builtins
import io
import logging
import uuid
from typing import Any, BinaryIO, cast

from .. import events, paths, protocol
from ..contract import CancellableOutputStream, CheckpointFileManager, FileStatus, PathFilter
from ..errors import BucketNotFoundError, InvalidPathError, PathNotFoundError
from ..metrics import CheckpointMetrics, MeasuredReader
from ..protocol import WRITE_ID_KEY
from ..store.base import ObjectPath, ObjectStore
from ..store.check import CheckedStore
from ..store.read_your_writes import ReadYourWritesStore
from ..store.registry import connect, options_of
from .options import AbortStrategy, DirectWriteOptions
from .probes import Knowledge, ProbeMode, exists_plan
from .reader import ObjectReader
from .stream import DirectWriteStream

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_INFLIGHT_PARTS", "DEFAULT_PART_SIZE", "WRITE_ID_KEY", "AbortStrategy", "DirectWriteManager",
           "DirectWriteOptions"]
DEFAULT_PART_SIZE = protocol.PART_SIZE_BYTES
"""The default part size (the protocol's)."""
DEFAULT_MAX_INFLIGHT_PARTS = protocol.PARTS_IN_FLIGHT
"""The default number of parts of one file in flight (the protocol's)."""
_DELETE_BATCH = 1000


def _bucket_and_key(root: str) -> tuple[str, str]:
    parsed = paths.parse_object(root)
    return parsed.bucket, parsed.key


class DirectWriteManager(CheckpointFileManager):
    """Writes object store paths (``s3://``, ``s3a://``, ``gs://``, Azure Blob Storage's ``az://``, ``abfs[s]://``,
    ``wasb[s]://``) directly to their final key with create-if-absent commits.

    Takes a :class:`DirectWriteOptions` or its fields as keywords (``DirectWriteManager(part_size=...)``; see
    DirectWriteOptions for each), and the store's own keywords (credentials, region, encryption, an Azure account:
    :func:`checkpointfs.store.connect`), with which it connects to the store its ``root``'s scheme names (S3 without
    a root). ``store``: the object store to keep the contract on instead (store keywords are then refused).
    """

    def __init__(self, options: DirectWriteOptions | None = None, *, store: ObjectStore | None = None,
                 **keywords: Any) -> None:
        fields = DirectWriteOptions.fields()
        store_options = {name: value for name, value in keywords.items() if name not in fields}
        generic = {name: value for name, value in keywords.items() if name in fields}
        if options is not None and generic:
            raise TypeError("pass DirectWriteOptions or its fields as keywords, not both")
        self.options = options if options is not None else DirectWriteOptions.of(**generic)
        """The settings of this manager."""
        opts = self.options
        unknown = sorted(set(store_options) - {n for f in ("s3", "gcs", "azure") for n in options_of(f)})
        if unknown:
            raise TypeError(f"unknown DirectWriteManager option(s): {', '.join(unknown)}")
        if store is not None and any(value is not None for value in store_options.values()):
            raise TypeError(f"store options ({', '.join(sorted(store_options))}) with a given store: its connection "
                            "is already made")
        self.root = _bucket_and_key(opts.root) if opts.root is not None else None
        self.exists_probe: ProbeMode = opts.exists_probe
        self.known = Knowledge()
        """What this manager knows of its own files and of directories (checkpointfs.direct.probes)."""
        self.part_size = opts.part_size
        self.max_inflight_parts = opts.max_inflight_parts
        self.list_page_size = opts.list_page_size
        self.abort_strategy: AbortStrategy = opts.abort_strategy
        base: ObjectStore = store if store is not None else connect(opts.root or "s3://", opts.connection(),
                                                                    **store_options)
        self.connected: ObjectStore = base
        """The store itself, under the wrappers (for tests and tools that need its client)."""
        if opts.consistency_window_s > 0:
            base = ReadYourWritesStore(base, opts.consistency_window_s)
        if opts.store_check:
            base = CheckedStore(base)
        else:
            log.warning("%s: store_check=False: the store is trusted to refuse a second put-if-absent without being "
                        "checked; a store that ignores If-None-Match lets two writers of a checkpoint both succeed",
                        opts.root or "DirectWriteManager")
        self.store: ObjectStore = base
        """The store the contract is kept on (checked before its first put-if-absent: checkpointfs.store.check)."""
        self.requests = self.store.requests
        """Requests sent to the store, by operation name (S3's: ``PutObject``; a GCS store counts its requests under
        the same names, checkpointfs.store.gcs; an Azure store under Azure's: ``PutBlob``), retries included: the
        store's count (a store given to two managers counts both's)."""
        self.metrics = CheckpointMetrics()
        """This manager's metrics, by the names of ``protocol.json``'s table (checkpointfs.metrics)."""
        self._how = ("files written directly to their final keys (put-if-absent, no temp file, no rename), store "
                     + ("check on" if opts.store_check else "check off (store_check=False)"))

    def _object(self, path: str) -> ObjectPath:
        """The object ``path`` names; InvalidPathError for a path of another store than this manager's."""
        parsed = paths.parse_object(path)
        if parsed.family != self.store.capabilities.family:
            raise InvalidPathError(path, f"a {parsed.family} path given to a manager of a "
                                         f"{self.store.capabilities.family} store (manager_for picks by scheme)")
        return ObjectPath(parsed.bucket, parsed.key, path, parsed.base)

    @property
    def is_local(self) -> bool:
        return False

    def close(self) -> None:
        self.store.close()

    # -- the contract -------------------------------------------------------------------------------------------
    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        operation = "createOverwrite" if overwrite_if_possible else "createIfAbsent"
        with self.metrics.call(operation, until_closed=True) as call:
            where = self._object(path)
            if not where.key or path.endswith("/"):
                raise InvalidPathError(path, "a file path needs a key that does not end with '/'")
            events.announce_root(log, path, self._how)
            self.known.forget_file(where.bucket, where.key)
            return DirectWriteStream(self.store, where, overwrite=overwrite_if_possible, write_id=uuid.uuid4().hex,
                                     part_size=self.part_size, max_inflight_parts=self.max_inflight_parts,
                                     abort_strategy=self.abort_strategy,
                                     on_published=lambda body: self.known.published(
                                         where.bucket, where.key, body, put_if_absent=not overwrite_if_possible),
                                     call=call)

    def open(self, path: str) -> BinaryIO:
        with self.metrics.call("open", until_closed=True) as call:
            where = self._object(path)
            if not where.key:
                raise PathNotFoundError(path, "a bucket is not a file")
            kept = self.known.content(where.bucket, where.key)
            # a small file this manager published is read from memory: S3 never changes it in place
            raw = io.BytesIO(kept) if kept is not None else ObjectReader(self.store, where, self.options.retry_policy)
            return cast(BinaryIO, io.BufferedReader(MeasuredReader(raw, call), buffer_size=256 * 1024))

    def list(self, path: str, filter: PathFilter | None = None) -> list[FileStatus]:
        with self.metrics.call("list"):
            return self._list(path, filter)

    def _list(self, path: str, filter: PathFilter | None) -> builtins.list[FileStatus]:
        where = self._object(path)
        prefix = where.key + "/" if where.key else ""
        listing = self.store.list(where.below(prefix), delimiter="/",
                                  page_size=self.list_page_size)
        shown = [p[len(prefix):].rstrip("/") for p in listing.prefixes]
        made = [k[len(prefix):] for k in self.known.made_children(where.bucket, where.key)]
        result = [FileStatus(paths.join(path, name), 0, True, 0) for name in shown + sorted(set(made) - set(shown))]
        for obj in listing.objects:
            name = obj.key[len(prefix):]
            if name:  # a directory marker object ("dir/") is the directory itself
                result.append(FileStatus(paths.join(path, name), obj.size, False,
                                         int(obj.last_modified.timestamp() * 1000)))
        result = sorted((s for s in result if filter is None or filter(s.path)), key=lambda status: status.path)
        self.known.listed(where.bucket, [prefix + s.name for s in result if s.is_dir],
                          [prefix + s.name for s in result if not s.is_dir])
        return result

    def mkdirs(self, path: str) -> None:
        """An object store has no directories to make, so no request is sent: the directory (and each of its parents)
        is remembered as made (:class:`~checkpointfs.direct.probes.Knowledge`), so that ``exists`` answers it present
        and ``list`` of its parent shows it, as on a file system, until this manager deletes it or a parent of it."""
        where = self._object(path)
        if where.key.strip("/"):
            self.known.made(where.bucket, where.key.strip("/"))

    def exists(self, path: str) -> bool:
        with self.metrics.call("exists"):
            return self._exists(path)

    def _exists(self, path: str) -> bool:
        where = self._object(path)
        bucket, key = where.bucket, where.key
        if not key:
            try:
                self.store.head_bucket(where)
            except PathNotFoundError:
                raise BucketNotFoundError(path, f"bucket {bucket!r} does not exist") from None
            return True
        plan = exists_plan(self.known, self.root, bucket, key, mode=self.exists_probe,
                           store_check=self.options.store_check)
        if plan in ("present", "absent"):
            return plan == "present"
        try:
            self.store.head(where)
            return True
        except PathNotFoundError:
            pass
        if plan == "head":
            return False
        first = next(self.store.list_pages(where.below(key + "/"), page_size=1), None)
        return first is not None and bool(first.objects or first.prefixes)

    def delete(self, path: str) -> None:
        with self.metrics.call("delete"):
            self._delete(path)

    def _delete(self, path: str) -> None:
        where = self._object(path)
        if not where.key:
            raise InvalidPathError(path, "refusing to delete a whole bucket")
        self.known.forget(where.bucket, where.key)
        self.store.delete(where)
        batch: list[str] = []
        for page in self.store.list_pages(where.below(where.key + "/"),
                                          page_size=self.list_page_size):
            for obj in page.objects:
                batch.append(obj.key)
                if len(batch) == _DELETE_BATCH:
                    self.store.delete_many(where, batch)
                    batch = []
        if batch:
            self.store.delete_many(where, batch)
