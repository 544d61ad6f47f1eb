"""Where the tools read from: a checkpoint or output directory given as a URI (``s3://``, ``s3a://``, ``gs://``,
Azure's ``az://``/``abfs[s]://``/``wasb[s]://``, ``file://``, a local path, ``hdfs://``/``webhdfs://`` through fsspec),
with a manager for the log readers and a recursive listing.

The listing is one flat ``ListObjectsV2`` walk on S3 (keys come back in the store's sorted order), a flat listing
through the manager's own store on other object stores (GCS and Azure list in name order too), and an fsspec walk
elsewhere; no file is probed on its own. A failure to read a location is raised as its :mod:`checkpointfs.errors` type
(:func:`store_error`), with credentials kept out of the message.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
from .sparkconf import S3ClientSettings, client_settings

TEMP_NAME = re.compile(r"^\..+\.tmp$")
"""Spark's and RenameBasedManager's temp files: ``.<name>.<uuid>.tmp`` beside the target."""


def store_error(error: BaseException, path: str, operation: str,
                secrets: tuple[str, ...] = ()) -> CheckpointFsError | None:
    """The :mod:`checkpointfs.errors` error that ``error`` stands for when ``operation`` on ``path`` failed: itself
    for a checkpointfs error, the S3 client's translation for a botocore error (the same one the managers raise),
    :class:`AccessDeniedError` or :class:`StoreUnavailableError` for a file system's ``PermissionError`` or
    ``ConnectionError``/``TimeoutError``; None for anything else (raised as it is). ``secrets`` (credentials the
    caller holds) are redacted from the message."""
    if isinstance(error, CheckpointFsError):
        return error
    if isinstance(error, PermissionError):
        return AccessDeniedError(path, redact(f"{operation}: {type(error).__name__}: {error}", secrets))
    if isinstance(error, (ConnectionError, TimeoutError)):
        return StoreUnavailableError(path, redact(f"{operation}: {type(error).__name__}: {error}", secrets))
    try:
        from botocore.exceptions import BotoCoreError, ClientError

        from ..s3.client import translate
    except ImportError:  # pragma: no cover - boto3 is a dependency
        return None
    if isinstance(error, (BotoCoreError, ClientError)):
        return translate(error, path, operation, secrets)
    return None


@dataclass(frozen=True, slots=True)
class Listed:
    """One file under a location: its path relative to the location (``/``-separated) and its size."""

    rel: str
    size: int


class Location:
    """A directory on a store: :attr:`manager` for checkpointfs's log readers, :meth:`walk` for a recursive listing.

    ``endpoint_url`` applies to S3 locations (default: the AWS configuration, ``AWS_ENDPOINT_URL_S3`` included), and
    wins over ``spark_conf``: a job's Spark settings, whose S3A options for this location's bucket (endpoint, region,
    path-style access, SSL, credentials) the S3 client then uses (:mod:`checkpointfs.tools.sparkconf`)."""

    def __init__(self, uri: str, *, endpoint_url: str | None = None, spark_conf: Mapping[str, str] | None = None,
                 spark_conf_source: str = "") -> None:
        parsed = paths.parse(uri)
        self.uri = uri.rstrip("/") or uri
        self.scheme = parsed.scheme
        self.endpoint_url = endpoint_url
        self.is_s3 = parsed.scheme in paths.S3_SCHEMES
        self.is_object_store = parsed.scheme in paths.OBJECT_SCHEMES
        """An object store's location (S3, GCS, Azure Blob Storage): its :attr:`bucket` (an Azure container) and
        :attr:`key` are set. Other than S3, read through the manager's store (Azure: credentials from the
        environment, checkpointfs.store.azure_connect; ``endpoint_url`` the account's Blob endpoint)."""
        self.client_settings: S3ClientSettings | None = None
        if self.is_object_store and not self.is_s3:
            target = paths.parse_object(uri)
            self.bucket, self.key = target.bucket, target.key
        if self.is_s3:
            self.bucket, self.key = paths.parse_s3(uri)
            if spark_conf is not None:
                self.client_settings = client_settings(spark_conf, self.bucket, spark_conf_source)
                if endpoint_url:  # the command line wins over the file
                    self.client_settings.endpoint_url = endpoint_url
                    self.client_settings.origins["fs.s3a.endpoint"] = "--endpoint-url"
        self._manager: CheckpointFileManager | None = None
        self._client: Any = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this location's client was given (to redact from messages)."""
        return self.client_settings.secrets if self.client_settings else ()

    @property
    def manager(self) -> CheckpointFileManager:
        """The manager the log readers use (made on first use)."""
        if self._manager is None:
            options = {"endpoint_url": self.endpoint_url} if self.is_object_store and self.endpoint_url else {}
            self._manager = manager_for(self.uri, **options)
        return self._manager

    def path(self, rel: str = "") -> str:
        """The full path of ``rel`` under this location, in the form the location was given."""
        return paths.join(self.uri, rel) if rel else self.uri

    @property
    def walk_is_sorted(self) -> bool:
        """Whether :meth:`walk` yields paths in sorted order (S3 lists keys in UTF-8 order, which is code-point
        order, as GCS and Azure list names; a file system walk has no global order)."""
        return self.is_object_store

    def walk(self) -> Iterator[Listed]:
        """Every file under the location, recursively (directories themselves are not yielded). An absent
        directory yields nothing. Raises the :mod:`checkpointfs.errors` error of the failure (:func:`store_error`)
        when the store cannot be read."""
        try:
            if self.is_s3:
                yield from self._walk_s3()
            elif self.is_object_store:
                yield from self._walk_store()
            else:
                yield from self._walk_fsspec()
        except Exception as e:
            mapped = store_error(e, self.uri, "list_objects_v2" if self.is_s3 else "list", self.secrets)
            if mapped is None or mapped is e:
                raise
            raise mapped from None

    def _walk_s3(self) -> Iterator[Listed]:
        """Pages are fetched one ahead by a helper thread (at most ``PREFETCH_PAGES`` waiting), so the store answers
        the next page while this one is processed."""
        prefix = self.key + "/" if self.key else ""
        paginator = self.s3_client().get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": 1000})
        for page in _prefetched(iter(pages)):
            for obj in page.get("Contents", ()):
                rel = obj["Key"][len(prefix):]
                if rel and not rel.endswith("/"):
                    yield Listed(rel, int(obj["Size"]))

    def _walk_store(self) -> Iterator[Listed]:
        """A flat listing through the manager's own store (its retries and errors), a page prefetched ahead (List
        Blobs on Azure: folder markers are left out)."""
        prefix = self.key + "/" if self.key else ""
        where = ObjectPath.parse(self.uri).below(prefix)
        for page in _prefetched(self.object_store().list_pages(where, page_size=1000)):
            for obj in page.objects:
                rel = obj.key[len(prefix):]
                if rel and not rel.endswith("/"):
                    yield Listed(rel, obj.size)

    def object_store(self) -> ObjectStore:
        """The object store under this location's manager, without the store check's wrapper (tools probe and
        list; they never publish a checkpoint file)."""
        store = getattr(self.manager, "store", None)
        if not isinstance(store, ObjectStore):
            raise InvalidPathError(self.uri, "not on an object store")
        inner = getattr(store, "inner", None)
        while isinstance(inner, ObjectStore):
            store, inner = inner, getattr(inner, "inner", None)
        return store

    def _walk_fsspec(self) -> Iterator[Listed]:
        import fsspec

        parsed = paths.parse(self.uri)
        if parsed.scheme in ("", "file", "local"):
            yield from _walk_local(os.path.abspath(parsed.path))
            return
        fs = fsspec.filesystem(parsed.scheme)
        root_path = fs._strip_protocol(self.uri).rstrip("/")
        if not fs.exists(root_path):
            return
        for dirpath, _dirs, files in fs.walk(root_path, detail=True):
            base = dirpath.rstrip("/")
            for name, info in files.items():
                if info.get("type") != "directory":
                    yield Listed(f"{base}/{name}"[len(root_path) + 1:], int(info.get("size") or 0))

    def s3_client(self) -> Any:
        """A boto3 S3 client for this location (standard credential chain, ``endpoint_url`` if given)."""
        if self._client is None:
            import boto3
            import botocore.session
            from botocore.config import Config

            core = botocore.session.get_session()
            # Listings are read for keys and sizes only: leave LastModified as text instead of parsing every one
            # with dateutil (about half a millisecond a key, the main cost of a long listing).
            core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=str)
            session = boto3.Session(botocore_session=core)
            settings = self.client_settings
            endpoint_url = self.endpoint_url or (settings.endpoint_url if settings else None)
            if settings is not None:
                style: Any = {"addressing_style": "path" if settings.path_style else "virtual"}
            else:
                style = {"addressing_style": "path"} if self.endpoint_url else None
            region = (settings.region if settings else None) or session.region_name or "us-east-1"
            config = Config(region_name=region, connect_timeout=5, read_timeout=30,
                            retries={"mode": "standard", "max_attempts": 3}, s3=style)
            keys: dict[str, Any] = {}
            if settings is not None and settings.access_key:
                keys = {"aws_access_key_id": settings.access_key, "aws_secret_access_key": settings.secret_key,
                        "aws_session_token": settings.session_token}
            self._client = session.client("s3", endpoint_url=endpoint_url, config=config,
                                          use_ssl=settings.use_ssl if settings else True, **keys)
        return self._client

    def open_uploads(self) -> list[str]:
        """Keys of multipart uploads under this S3 location never completed nor aborted (``[]`` elsewhere: GCS's
        resumable sessions cannot be listed; an unfinalized one is invisible and expires)."""
        if not self.is_s3:
            return []
        prefix = self.key + "/" if self.key else ""
        try:
            answer = self.s3_client().list_multipart_uploads(Bucket=self.bucket, Prefix=prefix)
        except Exception as e:
            mapped = store_error(e, self.uri, "list_multipart_uploads", self.secrets)
            if mapped is None or mapped is e:
                raise
            raise mapped from None
        return [self.path(u["Key"][len(prefix):]) for u in answer.get("Uploads", [])]

    def close(self) -> None:
        """Release the manager and the client."""
        if self._manager is not None:
            self._manager.close()
            self._manager = None
        if self._client is not None:
            self._client.close()
            self._client = None


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
        if not location.is_s3:
            _ = location.manager  # an unsupported scheme fails here, before any listing
        return location
    except InvalidPathError as e:
        raise InvalidPathError(redact(e.path), redact(e.cause)) from None
