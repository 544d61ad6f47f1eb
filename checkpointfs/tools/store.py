"""Where the tools read from: a checkpoint or output directory given as a URI (``s3://``, ``s3a://``, ``gs://``,
Azure's ``az://``/``abfs[s]://``/``wasb[s]://``, ``file://``, a local path, ``hdfs://``/``webhdfs://`` through fsspec),
with a manager for the log readers and a recursive listing.

Object stores (S3, GCS, Azure Blob Storage) are read through the store layer the managers use
(:func:`checkpointfs.store.connect`: its retries, its answer table, its errors): the listing is one flat walk of the
store's pages (keys come back in name order on every object store), prefetched a page ahead. Elsewhere an fsspec walk.
No file is probed on its own. A failure to read a location is raised as its :mod:`checkpointfs.errors` type
(:func:`store_error`), with credentials kept out of the message.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from queue import Full, Queue
from typing import Any

from .. import paths
from ..contract import CheckpointFileManager
from ..errors import (
    AccessDeniedError,
    CheckpointFsError,
    InvalidPathError,
    StoreUnavailableError,
)
from ..factory import manager_for
from ..redact import redact
from ..store.base import ObjectPath, ObjectStore
from ..store.registry import Connection, connect
from .sparkconf import S3ClientSettings, client_settings

TEMP_NAME = re.compile(r"^\..+\.tmp$")
"""Spark's and RenameBasedManager's temp files: ``.<name>.<uuid>.tmp`` beside the target."""


def store_error(error: BaseException, path: str, operation: str,
                secrets: tuple[str, ...] = ()) -> CheckpointFsError | None:
    """The :mod:`checkpointfs.errors` error that ``error`` stands for when ``operation`` on ``path`` failed: itself
    for a checkpointfs error (what the store layer raises), :class:`AccessDeniedError` or
    :class:`StoreUnavailableError` for a file system's ``PermissionError`` or ``ConnectionError``/``TimeoutError``;
    None for anything else (raised as it is). ``secrets`` (credentials the caller holds) are redacted from the
    message."""
    if isinstance(error, CheckpointFsError):
        return error
    if isinstance(error, PermissionError):
        return AccessDeniedError(path, redact(f"{operation}: {type(error).__name__}: {error}", secrets))
    if isinstance(error, (ConnectionError, TimeoutError)):
        return StoreUnavailableError(path, redact(f"{operation}: {type(error).__name__}: {error}", secrets))
    return None


@dataclass(frozen=True, slots=True)
class Listed:
    """One file under a location: its path relative to the location (``/``-separated) and its size."""

    rel: str
    size: int


class Location:
    """A directory on a store: :attr:`manager` for checkpointfs's log readers, :meth:`walk` for a recursive listing.

    ``endpoint_url`` is the object store's endpoint (S3 default: the AWS configuration, ``AWS_ENDPOINT_URL_S3``
    included), and wins over ``spark_conf``: a job's Spark settings, whose S3A options for this location's bucket
    (endpoint, region, path-style access, SSL, credentials) the S3 store then uses
    (:mod:`checkpointfs.tools.sparkconf`). Other stores take their credentials from the environment (their
    ``connect``)."""

    def __init__(self, uri: str, *, endpoint_url: str | None = None, spark_conf: Mapping[str, str] | None = None,
                 spark_conf_source: str = "") -> None:
        parsed = paths.parse(uri)
        self.uri = uri.rstrip("/") or uri
        self.scheme = parsed.scheme
        self.endpoint_url = endpoint_url
        self.is_s3 = parsed.scheme in paths.S3_SCHEMES
        self.is_object_store = parsed.scheme in paths.OBJECT_SCHEMES
        """An object store's location (S3, GCS, Azure Blob Storage): its :attr:`bucket` (an Azure container) and
        :attr:`key` are set, and it is read through :meth:`object_store`."""
        self.client_settings: S3ClientSettings | None = None
        if self.is_object_store:
            target = paths.parse_object(uri)
            self.bucket, self.key = target.bucket, target.key
        if self.is_s3:
            if spark_conf is not None:
                self.client_settings = client_settings(spark_conf, self.bucket, spark_conf_source)
                if endpoint_url:  # the command line wins over the file
                    self.client_settings.endpoint_url = endpoint_url
                    self.client_settings.origins["fs.s3a.endpoint"] = "--endpoint-url"
        self._manager: CheckpointFileManager | None = None
        self._store: ObjectStore | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this location's client was given (to redact from messages)."""
        return self.client_settings.secrets if self.client_settings else ()

    def store_options(self) -> tuple[Connection, dict[str, Any]]:
        """What this location's object store is connected with: the connection (endpoint) and the store's own
        options (S3: the job's S3A settings when given: region, path-style access, credentials)."""
        settings = self.client_settings
        endpoint_url = self.endpoint_url or (settings.endpoint_url if settings else None)
        if endpoint_url and "://" not in endpoint_url and settings is not None:
            endpoint_url = ("https://" if settings.use_ssl else "http://") + endpoint_url
        options: dict[str, Any] = {}
        if settings is not None:
            options = {"region": settings.region, "path_style": settings.path_style,
                       "aws_access_key_id": settings.access_key, "aws_secret_access_key": settings.secret_key,
                       "aws_session_token": settings.session_token}
        return Connection(endpoint_url=endpoint_url, root=self.uri), options

    def object_store(self, connection: Connection | None = None) -> ObjectStore:
        """The object store of this location (made on first use; tools list, read and probe it, never publishing a
        checkpoint file, so no store check wraps it). ``connection``: a store of its own with these settings
        instead (its requests counted apart), which the caller closes."""
        if not self.is_object_store:
            raise InvalidPathError(self.uri, "not on an object store")
        default, options = self.store_options()
        if connection is not None:
            return connect(self.uri, replace(connection, endpoint_url=default.endpoint_url, root=self.uri), **options)
        if self._store is None:
            self._store = connect(self.uri, default, **options)
        return self._store

    @property
    def manager(self) -> CheckpointFileManager:
        """The manager the log readers use (made on first use; on an object store, on :meth:`object_store`)."""
        if self._manager is None:
            if self.is_object_store:
                from ..direct.manager import DirectWriteManager

                self._manager = DirectWriteManager(root=self.uri, store=self.object_store())
            else:
                self._manager = manager_for(self.uri, **_fsspec_options(self.uri))
        return self._manager

    def path(self, rel: str = "") -> str:
        """The full path of ``rel`` under this location, in the form the location was given."""
        return paths.join(self.uri, rel) if rel else self.uri

    @property
    def walk_is_sorted(self) -> bool:
        """Whether :meth:`walk` yields paths in sorted order (S3 lists keys in UTF-8 order, which is code-point
        order, as GCS and Azure list names; an S3 directory bucket lists in no such order, and a file system walk has
        no global order)."""
        parsed = paths.parse(self.uri)
        return self.is_object_store and not (parsed.scheme in paths.S3_SCHEMES
                                             and paths.is_directory_bucket(parsed.authority))

    def walk(self) -> Iterator[Listed]:
        """Every file under the location, recursively (directories themselves are not yielded). An absent
        directory yields nothing. Raises the :mod:`checkpointfs.errors` error of the failure (:func:`store_error`)
        when the store cannot be read."""
        try:
            if self.is_object_store:
                yield from self._walk_store()
            else:
                yield from self._walk_fsspec()
        except Exception as e:
            mapped = store_error(e, self.uri, "list", self.secrets)
            if mapped is None or mapped is e:
                raise
            raise mapped from None

    def _walk_store(self) -> Iterator[Listed]:
        """A flat listing through the store (its retries and errors), a page prefetched ahead (List Blobs on Azure:
        folder markers are left out)."""
        prefix = self.key + "/" if self.key else ""
        where = ObjectPath.parse(self.uri).below(prefix)
        for page in _prefetched(self.object_store().list_pages(where, page_size=1000)):
            for obj in page.objects:
                rel = obj.key[len(prefix):]
                if rel and not rel.endswith("/"):
                    yield Listed(rel, obj.size)

    def _walk_fsspec(self) -> Iterator[Listed]:
        import fsspec

        parsed = paths.parse(self.uri)
        if parsed.scheme in ("", "file", "local"):
            yield from _walk_local(os.path.abspath(parsed.path))
            return
        fs = fsspec.filesystem(parsed.scheme, **_fsspec_options(self.uri))
        root_path = fs._strip_protocol(self.uri).rstrip("/")
        if not fs.exists(root_path):
            return
        for dirpath, _dirs, files in fs.walk(root_path, detail=True):
            base = dirpath.rstrip("/")
            for name, info in files.items():
                if info.get("type") != "directory":
                    yield Listed(f"{base}/{name}"[len(root_path) + 1:], int(info.get("size") or 0))

    def delete_file(self, rel: str) -> None:
        """Delete the one file ``rel`` below this location and nothing under it (what the managers' ``delete`` would
        also remove: every key below ``<rel>/``, a directory's files): one DeleteObject on an object store, through the
        store layer (:func:`checkpointfs.store.connect`); a file removal elsewhere, which refuses a directory. A file
        that is not there is no error on an object store. Raises the :mod:`checkpointfs.errors` error of the
        failure (:func:`store_error`)."""
        path = self.path(rel)
        try:
            if self.is_object_store:
                self.object_store().delete(ObjectPath.parse(path))
            else:
                import fsspec

                fs = fsspec.filesystem(paths.parse(self.uri).scheme or "file", **_fsspec_options(self.uri))
                fs.rm_file(fs._strip_protocol(path))
        except Exception as e:
            mapped = store_error(e, path, "delete", self.secrets)
            if mapped is None or mapped is e:
                raise
            raise mapped from None

    def open_uploads(self) -> list[str]:
        """Paths of multipart uploads under this object store location never completed nor aborted (``[]`` elsewhere,
        and on GCS and Azure, whose resumable sessions and uncommitted blocks cannot be listed: an unfinished one is
        invisible and expires)."""
        if not self.is_object_store:
            return []
        prefix = self.key + "/" if self.key else ""
        uploads = self.object_store().list_uploads(ObjectPath.parse(self.uri).below(prefix))
        return [self.path(u.key[len(prefix):]) for u in uploads]

    def close(self) -> None:
        """Release the manager and the store."""
        if self._manager is not None:
            self._manager.close()  # closes the store under it
            self._manager = None
        elif self._store is not None:
            self._store.close()
        self._store = None


def _fsspec_options(uri: str) -> dict[str, Any]:
    """The options of the fsspec file system that a URI carries (``webhdfs://user@host:port/``: host, port and
    user); none for local paths."""
    scheme = paths.parse(uri).scheme
    if scheme in ("", "file", "local", "memory"):
        return {}
    import fsspec

    try:
        filesystem = fsspec.get_filesystem_class(scheme)
    except (ValueError, ImportError):  # an unknown scheme: the manager or walk refuses it, naming the path
        return {}
    return dict(filesystem._get_kwargs_from_urls(uri))


PREFETCH_PAGES = 4
_DONE = object()


def _prefetched(pages: Iterator[Any]) -> Iterator[Any]:
    """``pages``, fetched by a helper thread into a bounded queue; its errors are raised here."""
    queue: Queue[Any] = Queue(maxsize=PREFETCH_PAGES)
    stop = threading.Event()

    def fetch() -> None:
        try:
            for page in pages:
                while not stop.is_set():
                    try:
                        queue.put(page, timeout=0.1)
                        break
                    except Full:
                        continue
                if stop.is_set():
                    return
            queue.put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which raises it
            queue.put(e)

    thread = threading.Thread(target=fetch, name="checkpointfs-list", daemon=True)
    thread.start()
    try:
        while True:
            item = queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def _walk_local(root: str) -> Iterator[Listed]:
    """Every file under ``root``, one directory entry at a time (``os.scandir`` streams; nothing is collected)."""
    if not os.path.isdir(root):
        return
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as entries:
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append(rel)
                elif entry.is_file():
                    yield Listed(rel, entry.stat().st_size)


def open_location(uri: str, *, endpoint_url: str | None = None, spark_conf: Mapping[str, str] | None = None,
                  spark_conf_source: str = "") -> Location:
    """A :class:`Location` for ``uri``; :class:`~checkpointfs.errors.InvalidPathError` for a malformed URI or an
    unsupported scheme."""
    try:
        location = Location(uri, endpoint_url=endpoint_url, spark_conf=spark_conf,
                            spark_conf_source=spark_conf_source)
        if not location.is_object_store:
            _ = location.manager  # an unsupported scheme fails here, before any listing
        return location
    except InvalidPathError as e:
        raise InvalidPathError(redact(e.path), redact(e.cause)) from None
