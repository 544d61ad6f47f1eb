"""DirectWriteManager: checkpoint files written straight to their final S3 key, no temp key, no rename.

Costs, in requests: a small-file commit is one PutObject; ``exists`` of a file one HeadObject (none for a file this
manager published; the probe rule of checkpointfs.s3.probes says when a 404 is followed by a ListObjectsV2);
``open`` one GetObject (none for a small file this manager published); ``mkdirs`` none; ``list`` one ListObjectsV2
per 1000 children; ``delete`` one DeleteObject plus one listing of the prefix and one
DeleteObjects per 1000 keys under it.
"""

from __future__ import annotations

import builtins
import io
import logging
import uuid
from collections.abc import Iterator
from typing import Any, BinaryIO, Literal, cast

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from .. import paths
from ..contract import CancellableOutputStream, CheckpointFileManager, FileStatus, PathFilter
from ..errors import BucketNotFoundError, InvalidPathError, PathNotFoundError
from .client import WRITE_ID_KEY, Encryption, RetryPolicy, S3Client
from .probes import Knowledge, ProbeMode, is_below, is_file_name
from .reader import S3Reader
from .recent import RecentChanges
from .stream import AbortStrategy, DirectWriteStream

log = logging.getLogger(__name__)

__all__ = ["WRITE_ID_KEY", "AbortStrategy", "DirectWriteManager", "Encryption"]
DEFAULT_PART_SIZE = 8 * 1024 * 1024
DEFAULT_MAX_INFLIGHT_PARTS = 8
_DELETE_BATCH = 1000


class DirectWriteManager(CheckpointFileManager):
    """Writes ``s3://`` and ``s3a://`` paths directly to their final key with put-if-absent commits.

    Args:
        endpoint_url: the S3 endpoint (None: AWS, or ``AWS_ENDPOINT_URL_S3``); set, it selects path-style addressing.
        region: the region to sign for (None: the session's, else ``us-east-1``).
        part_size: files below it are one PutObject; larger ones stream as multipart parts of this size.
        max_inflight_parts: parts of one file uploaded at once; ``write`` blocks while that many are in flight, so
            a stream holds at most ``(max_inflight_parts + 1) * part_size`` bytes.
        abort_strategy: ``"abort"`` (cancel aborts the multipart upload) or ``"close-then-delete"`` (for stores that
            cannot abort: cancel completes the upload, then deletes the object, retrying per ``delete_retry``, and
            raises AbortFailedError if it cannot).
        retry: the RetryPolicy of every request (default: ``RetryPolicy()``).
        delete_retry: the RetryPolicy of deletes (default: ``retry``).
        sse: server-side encryption of every write, ``"AES256"`` or ``"aws:kms"`` (None: the bucket's default).
        sse_kms_key_id: the KMS key of ``sse="aws:kms"`` (None: the account's default key).
        aws_access_key_id: credentials; None uses the standard boto3 chain.
        aws_secret_access_key: the secret key that goes with ``aws_access_key_id``.
        aws_session_token: the session token of temporary credentials.
        session: a ready ``boto3.Session`` to take credentials and region from (instead of the three above).
        connect_timeout_s: seconds to open a connection before the attempt fails (and is retried).
        read_timeout_s: seconds to wait for an answer before the attempt fails (and is retried).
        max_pool_connections: connections kept open to the endpoint.
        list_page_size: keys per ListObjectsV2 page, at most 1000.
        consistency_window_s: for stores that lag: for this long after its own write or delete of a key, the
            manager waits out a read of that key, or a listing of its directory, that does not show the change yet.
            0, the default, trusts the store, as S3 is strongly consistent.
        client: a prepared boto3 S3 client, for tests and advanced use (its credentials are then not known to the
            manager, which redacts the explicit ones given here only).
        root: the checkpoint directory this manager serves (``manager_for`` passes its URI). ``exists`` of a path
            strictly below it, named as Spark names only files, is one HeadObject, with no directory listing
            (docs/contract.md, "exists: the probe rule"). None: no path is below the root.
        exists_probe: ``"file-names"`` (default, the rule above) or ``"full"``: every ``exists`` sends a HeadObject
            and, when that finds no file, a ListObjectsV2, and nothing is answered from what the manager knows.
    """

    def __init__(
        self,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        part_size: int = DEFAULT_PART_SIZE,
        max_inflight_parts: int = DEFAULT_MAX_INFLIGHT_PARTS,
        abort_strategy: AbortStrategy = "abort",
        retry: RetryPolicy | None = None,
        delete_retry: RetryPolicy | None = None,
        sse: Literal["AES256", "aws:kms"] | None = None,
        sse_kms_key_id: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        session: boto3.Session | None = None,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 30.0,
        max_pool_connections: int = 32,
        list_page_size: int = 1000,
        consistency_window_s: float = 0.0,
        client: Any = None,
        root: str | None = None,
        exists_probe: ProbeMode = "file-names",
    ) -> None:
        if abort_strategy not in ("abort", "close-then-delete"):
            raise ValueError(f"abort_strategy must be 'abort' or 'close-then-delete', got {abort_strategy!r}")
        if part_size < 1:
            raise ValueError(f"part_size must be positive, got {part_size}")
        if max_inflight_parts < 1:
            raise ValueError(f"max_inflight_parts must be at least 1, got {max_inflight_parts}")
        if sse not in (None, "AES256", "aws:kms"):
            raise ValueError(f"sse must be None, 'AES256' or 'aws:kms', got {sse!r}")
        if sse_kms_key_id and sse != "aws:kms":
            raise ValueError("sse_kms_key_id needs sse='aws:kms'")
        if exists_probe not in ("file-names", "full"):
            raise ValueError(f"exists_probe must be 'file-names' or 'full', got {exists_probe!r}")
        self.root = paths.parse_s3(root) if root is not None else None
        self.exists_probe: ProbeMode = exists_probe
        self.known = Knowledge()
        """What this manager knows of its own files and of directories (checkpointfs.s3.probes)."""
        if consistency_window_s < 0:
            raise ValueError(f"consistency_window_s must not be negative, got {consistency_window_s}")
        self.part_size = part_size
        self.max_inflight_parts = max_inflight_parts
        self.list_page_size = list_page_size
        self.abort_strategy: AbortStrategy = abort_strategy
        self.recent = RecentChanges(consistency_window_s)
        secrets = [aws_access_key_id or "", aws_secret_access_key or "", aws_session_token or ""]
        if client is None:
            session = session or boto3.Session(
                aws_access_key_id=aws_access_key_id,
                aws_secret_access_key=aws_secret_access_key,
                aws_session_token=aws_session_token,
                region_name=region,
            )
            config = Config(
                region_name=region or session.region_name or "us-east-1",
                retries={"total_max_attempts": 1, "mode": "standard"},  # tenacity retries, seeing every attempt
                connect_timeout=connect_timeout_s,
                read_timeout=read_timeout_s,
                max_pool_connections=max_pool_connections,
                s3={"addressing_style": "path"} if endpoint_url else {},
            )
            client = session.client("s3", endpoint_url=endpoint_url, config=config)
            credentials = session.get_credentials()
            if credentials is not None:
                frozen = credentials.get_frozen_credentials()
                secrets += [frozen.access_key or "", frozen.secret_key or "", frozen.token or ""]
        retry = retry or RetryPolicy()
        self.s3 = S3Client(client, retry=retry, delete_retry=delete_retry or retry,
                           encryption=Encryption(sse, sse_kms_key_id) if sse else None, secrets=tuple(secrets))
        """The S3 client with this manager's retry policies, error translation and request counting."""
        self.metrics = self.s3.metrics

    @property
    def is_local(self) -> bool:
        return False

    def close(self) -> None:
        self.s3.close()

    # -- the contract -------------------------------------------------------------------------------------------
    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        bucket, key = paths.parse_s3(path)
        if not key or path.endswith("/"):
            raise InvalidPathError(path, "a file path needs a key that does not end with '/'")
        self.known.forget_file(bucket, key)
        return DirectWriteStream(self.s3, self.recent, path, bucket, key, overwrite=overwrite_if_possible,
                                 write_id=uuid.uuid4().hex, part_size=self.part_size,
                                 max_inflight_parts=self.max_inflight_parts, abort_strategy=self.abort_strategy,
                                 on_published=lambda body: self.known.published(
                                     bucket, key, body, put_if_absent=not overwrite_if_possible))

    def open(self, path: str) -> BinaryIO:
        bucket, key = paths.parse_s3(path)
        if not key:
            raise PathNotFoundError(path, "a bucket is not a file")
        kept = self.known.content(bucket, key)
        if kept is not None:  # a small file this manager published: S3 never changes it in place
            return cast(BinaryIO, io.BytesIO(kept))
        change = self.recent.get(bucket, key)
        reader: S3Reader | None = None
        if change is not None and change.write_id is not None:  # our own write: wait out a lagging store
            reader = self.recent.wait_until(change.at, lambda: self._current_reader(path, bucket, key, change.write_id))
        if reader is None:
            reader = S3Reader(self.s3, path, bucket, key)
        return cast(BinaryIO, io.BufferedReader(reader, buffer_size=256 * 1024))

    def _current_reader(self, path: str, bucket: str, key: str, write_id: str | None) -> S3Reader | None:
        """A reader of ``key`` if the store shows the version with ``write_id``; None if absent or stale."""
        try:
            reader = S3Reader(self.s3, path, bucket, key)
        except PathNotFoundError:
            return None
        if reader.write_id != write_id:
            reader.close()
            return None
        return reader

    def list(self, path: str, filter: PathFilter | None = None) -> list[FileStatus]:
        bucket, key = paths.parse_s3(path)
        prefix = key + "/" if key else ""
        changes = self.recent.under(bucket, prefix)
        if not changes:
            listing = self._list_once(path, bucket, prefix, filter)
        else:
            listing = [s for s in self._list_settled(path, bucket, prefix, changes)
                       if filter is None or filter(s.path)]
        self.known.listed(bucket, [prefix + s.name for s in listing if s.is_dir],
                          [prefix + s.name for s in listing if not s.is_dir])
        return listing

    def _list_settled(self, path: str, bucket: str, prefix: str, changes: dict[str, Any]) -> builtins.list[FileStatus]:
        """A listing that shows this manager's own recent changes under ``prefix``: files it wrote are waited for
        (within the consistency window), files it deleted are left out, and so are sub-directories in which it
        deleted keys and nothing else is left."""
        written = {k[len(prefix):].split("/", 1)[0] for k, c in changes.items() if c.write_id is not None}
        deleted_keys = {k for k, c in changes.items() if c.write_id is None}
        deleted_files = {k[len(prefix):] for k in deleted_keys if "/" not in k[len(prefix):]}
        emptied_dirs = {k[len(prefix):].split("/", 1)[0] for k in deleted_keys if "/" in k[len(prefix):]} - written

        def live(status: FileStatus) -> bool:
            if not status.is_dir:
                return status.name not in deleted_files
            if status.name not in emptied_dirs:
                return True
            sub = f"{prefix}{status.name}/"
            return any(o["Key"] not in deleted_keys for page in self._pages(path, Bucket=bucket, Prefix=sub)
                       for o in page.get("Contents", []))

        def settled() -> builtins.list[FileStatus] | None:
            listing = [s for s in self._list_once(path, bucket, prefix, None) if live(s)]
            return listing if written <= {s.name for s in listing} else None

        listing = self.recent.wait_until(max(c.at for c in changes.values()), settled)
        if listing is None:
            log.warning("%s: the listing still misses files this manager wrote %.1f s ago", path,
                        self.recent.window_s)
            listing = [s for s in self._list_once(path, bucket, prefix, None) if live(s)]
        return listing

    def _list_once(self, path: str, bucket: str, prefix: str, filter: PathFilter | None) -> builtins.list[FileStatus]:
        result = []
        for page in self._pages(path, Bucket=bucket, Prefix=prefix, Delimiter="/", MaxKeys=self.list_page_size):
            for common in page.get("CommonPrefixes", []):
                child = paths.join(path, common["Prefix"][len(prefix):].rstrip("/"))
                if filter is None or filter(child):
                    result.append(FileStatus(child, 0, True, 0))
            for obj in page.get("Contents", []):
                name = obj["Key"][len(prefix):]
                if not name:  # a directory marker object ("dir/") is the directory itself
                    continue
                child = paths.join(path, name)
                if filter is None or filter(child):
                    mtime = int(obj["LastModified"].timestamp() * 1000)
                    result.append(FileStatus(child, int(obj["Size"]), False, mtime))
        return sorted(result, key=lambda status: status.path)

    def _pages(self, path: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        args: dict[str, Any] = dict(kwargs)
        while True:
            page = self.s3.call(path, "list_objects_v2", **args)
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            args["ContinuationToken"] = token

    def mkdirs(self, path: str) -> None:
        paths.parse_s3(path)  # validates; S3 has no directories to make

    def exists(self, path: str) -> bool:
        bucket, key = paths.parse_s3(path)
        if not key:
            try:
                self.s3.call(path, "head_bucket", Bucket=bucket)
            except PathNotFoundError:
                raise BucketNotFoundError(path, f"bucket {bucket!r} does not exist") from None
            return True
        full = self.exists_probe == "full"
        if not full and self.known.is_published(bucket, key):
            return True
        change = self.recent.get(bucket, key)
        if self._head_exists(path, bucket, key):
            return True
        if change is not None and change.write_id is not None:  # our own write: a 404 is the store's lag
            if self.recent.wait_until(change.at, lambda: self._head_exists(path, bucket, key) or None):
                return True
        if not full and self._is_file_position(bucket, key):
            return False

        def listed() -> bool | None:
            page = self.s3.call(path, "list_objects_v2", Bucket=bucket, Prefix=key + "/", MaxKeys=1)
            return True if page.get("KeyCount") else None

        if listed():
            return True
        ours = [c.at for c in self.recent.under(bucket, key + "/").values() if c.write_id is not None]
        return bool(ours) and bool(self.recent.wait_until(max(ours), listed))

    def _is_file_position(self, bucket: str, key: str) -> bool:
        """Whether the probe rule takes ``key`` for a file (no directory listing after a 404): below the root,
        named as Spark names only files, and not a directory this manager has seen."""
        return (self.root is not None and is_below(self.root, bucket, key)
                and is_file_name(key.rsplit("/", 1)[-1]) and not self.known.is_directory(bucket, key))

    def _head_exists(self, path: str, bucket: str, key: str) -> bool:
        try:
            self.s3.call(path, "head_object", Bucket=bucket, Key=key)
            return True
        except PathNotFoundError:
            return False

    def delete(self, path: str) -> None:
        bucket, key = paths.parse_s3(path)
        if not key:
            raise InvalidPathError(path, "refusing to delete a whole bucket")
        self.known.forget(bucket, key)
        self.s3.call(path, "delete_object", policy=self.s3.delete_retry, Bucket=bucket, Key=key)
        self.recent.deleted(bucket, key)
        # What the listing shows, and what this manager wrote lately that a lagging listing may not show yet.
        unlisted = {k for k, c in self.recent.under(bucket, key + "/").items() if c.write_id is not None}
        batch: builtins.list[dict[str, str]] = []
        for page in self._pages(path, Bucket=bucket, Prefix=key + "/", MaxKeys=self.list_page_size):
            keys = [obj["Key"] for obj in page.get("Contents", [])]
            if page.get("IsTruncated") is False or not page.get("IsTruncated"):
                keys += sorted(unlisted - set(keys))
            for name in keys:
                unlisted.discard(name)
                batch.append({"Key": name})
                if len(batch) == _DELETE_BATCH:
                    self._delete_batch(path, bucket, batch)
                    batch = []
        if batch:
            self._delete_batch(path, bucket, batch)

    def _delete_batch(self, path: str, bucket: str, batch: builtins.list[dict[str, str]]) -> None:
        answer = self.s3.call(path, "delete_objects", policy=self.s3.delete_retry, Bucket=bucket,
                           Delete={"Objects": batch, "Quiet": True})
        for obj in batch:
            self.recent.deleted(bucket, obj["Key"])
        errors = answer.get("Errors") or []
        if errors:
            first = errors[0]
            raise self.s3.translate(
                ClientError({"Error": {"Code": first.get("Code"), "Message": first.get("Message")}}, "DeleteObjects"),
                f"s3://{bucket}/{first.get('Key')}", "delete_objects",
            )

