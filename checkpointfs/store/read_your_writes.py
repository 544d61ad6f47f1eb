"""Read-your-writes on a lagging store, as a wrapper: :class:`ReadYourWritesStore` remembers what it wrote and
deleted in the last ``window_s`` seconds, and waits out the store's lag on reads of those keys instead of believing
it. S3 itself has been strongly consistent since December 2020 (DirectWriteManager wraps its store only when
``consistency_window_s`` is set); S3-compatible stores and caching layers may still lag."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone

from ..clock import Monotonic
from ..errors import CheckpointFsError, PathNotFoundError
from .base import GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectPath, ObjectStore, OpenUpload, Part, PutMode
from .recent import Change, RecentChanges

log = logging.getLogger(__name__)

__all__ = ["ReadYourWritesStore"]
_WHOLE_PAGE = 1000  # a listing merged with our changes is read whole: in full pages, whatever the caller asked
_UNKNOWN_TIME = datetime.fromtimestamp(0, timezone.utc)


class ReadYourWritesStore(ObjectStore):
    """``inner`` with its own recent changes visible: for ``window_s`` seconds after a write (or a write that failed
    but may have been applied), a head or a get of that key waits for the store to show it (a get: that very
    version); a listing waits for the files written under it and leaves out those deleted; a listing without a
    delimiter also shows the keys written under it that the store does not show yet."""

    def __init__(self, inner: ObjectStore, window_s: float, clock: Monotonic = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if window_s <= 0:
            raise ValueError(f"ReadYourWritesStore needs a positive window, got {window_s}")
        self.inner = inner
        self.recent = RecentChanges(window_s, clock, sleep)
        self.requests = inner.requests
        self.capabilities = inner.capabilities
        self._lock = threading.Lock()
        self._uploads: dict[str, str] = {}  # upload id -> the write id of its object

    def close(self) -> None:
        self.inner.close()

    # -- writing: recorded -------------------------------------------------------------------------------------
    def _wrote(self, where: ObjectPath, write_id: str, send: Callable[[], None]) -> None:
        try:
            send()
        except CheckpointFsError as e:
            if e.maybe_applied:  # the write may land: reads of the key wait for it like for any write of ours
                self.recent.wrote(where.bucket, where.key, write_id)
            raise
        self.recent.wrote(where.bucket, where.key, write_id)

    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        self._wrote(where, write_id, lambda: self.inner.put(where, data, mode=mode, write_id=write_id))

    def create_multipart(self, where: ObjectPath, *, mode: PutMode, write_id: str) -> MultipartUpload:
        upload = self.inner.create_multipart(where, mode=mode, write_id=write_id)
        with self._lock:
            self._uploads[upload.upload_id] = write_id
        return upload

    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        return self.inner.upload_part(where, upload_id, number, data, abandon=abandon)

    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode,
                           tail: bytes = b"") -> None:
        with self._lock:
            write_id = self._uploads.pop(upload_id, "")
        self._wrote(where, write_id,
                    lambda: self.inner.complete_multipart(where, upload_id, parts, mode=mode, tail=tail))

    def abort_multipart(self, where: ObjectPath, upload_id: str) -> None:
        with self._lock:
            self._uploads.pop(upload_id, None)
        self.inner.abort_multipart(where, upload_id)

    def list_uploads(self, where: ObjectPath) -> list[OpenUpload]:
        return self.inner.list_uploads(where)

    def delete(self, where: ObjectPath) -> None:
        self.inner.delete(where)
        self.recent.deleted(where.bucket, where.key)

    def delete_many(self, where: ObjectPath, keys: Sequence[str]) -> None:
        self.inner.delete_many(where, keys)
        for key in keys:
            self.recent.deleted(where.bucket, key)

    # -- reading: lag waited out -------------------------------------------------------------------------------
    def _our_write(self, where: ObjectPath) -> Change | None:
        change = self.recent.get(where.bucket, where.key)
        return change if change is not None and change.write_id is not None else None

    def get(self, where: ObjectPath, *, start: int = 0, expected_etag: str | None = None) -> GetResult:
        change = self._our_write(where)
        if change is not None and start == 0 and expected_etag is None:
            current = self.recent.wait_until(change.at, lambda: self._get_version(where, change.write_id))
            if current is not None:
                return current
        return self.inner.get(where, start=start, expected_etag=expected_etag)

    def _get_version(self, where: ObjectPath, write_id: str | None) -> GetResult | None:
        """The object if the store shows the version with ``write_id``; None if absent or stale."""
        try:
            result = self.inner.get(where)
        except PathNotFoundError:
            return None
        if result.write_id != write_id:
            result.body.close()
            return None
        return result

    def checksum(self, data: bytes) -> str:
        return self.inner.checksum(data)

    def head(self, where: ObjectPath) -> ObjectMeta:
        change = self._our_write(where)
        try:
            return self.inner.head(where)
        except PathNotFoundError:
            if change is None:
                raise
            found = self.recent.wait_until(change.at, lambda: self._head_or_none(where))
            if found is None:
                raise
            return found

    def _head_or_none(self, where: ObjectPath) -> ObjectMeta | None:
        try:
            return self.inner.head(where)
        except PathNotFoundError:
            return None

    def head_bucket(self, where: ObjectPath) -> None:
        self.inner.head_bucket(where)

    def list_pages(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000
                   ) -> Iterator[ListResult]:
        changes = self.recent.under(where.bucket, where.key)
        if not changes:
            yield from self.inner.list_pages(where, delimiter=delimiter, page_size=page_size)
        elif delimiter:
            yield self._settled(where, delimiter, page_size, changes)
        else:
            yield self._merged(where, page_size, changes)

    def _merged(self, where: ObjectPath, page_size: int, changes: dict[str, Change]) -> ListResult:
        """Every key under the prefix: what the store shows, less what we deleted, plus what we wrote."""
        listing = self.inner.list(where, page_size=max(page_size, _WHOLE_PAGE))
        deleted = {k for k, c in changes.items() if c.write_id is None}
        objects = [o for o in listing.objects if o.key not in deleted]
        shown = {o.key for o in objects}
        objects += [ObjectMeta(k, 0, _UNKNOWN_TIME) for k, c in sorted(changes.items())
                    if c.write_id is not None and k not in shown]
        return ListResult(objects, [])

    def _settled(self, where: ObjectPath, delimiter: str, page_size: int, changes: dict[str, Change]) -> ListResult:
        """A listing that shows our recent changes under the prefix: files we wrote are waited for (within the
        window), files we deleted are left out, and so are sub-directories in which we deleted keys and nothing else
        is left."""
        prefix = where.key

        def child(key: str) -> str:
            return key[len(prefix):].split(delimiter, 1)[0]

        written = {child(k) for k, c in changes.items() if c.write_id is not None}
        deleted = {k for k, c in changes.items() if c.write_id is None}
        deleted_files = {k for k in deleted if delimiter not in k[len(prefix):]}
        emptied = {child(k) for k in deleted if delimiter in k[len(prefix):]} - written

        def live(listing: ListResult) -> ListResult:
            objects = [o for o in listing.objects if o.key not in deleted_files]
            prefixes = [p for p in listing.prefixes
                        if child(p) not in emptied or self.list(where.at(p), page_size=page_size).objects]
            return ListResult(objects, prefixes)

        def settled() -> ListResult | None:
            listing = live(self.inner.list(where, delimiter=delimiter, page_size=page_size))
            names = {child(o.key) for o in listing.objects} | {child(p) for p in listing.prefixes}
            return listing if written <= names else None

        result = self.recent.wait_until(max(c.at for c in changes.values()), settled)
        if result is None:
            log.warning("%s: the listing still misses files written %.1f s ago", where.uri, self.recent.window_s)
            result = live(self.inner.list(where, delimiter=delimiter, page_size=page_size))
        return result
