""":class:`DirectWriteOptions`: every setting of a DirectWriteManager in one typed, validated object."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from .. import protocol
from ..store.registry import Connection
from ..store.retry import RetryPolicy
from .probes import ProbeMode

__all__ = ["AbortStrategy", "DirectWriteOptions"]

AbortStrategy = Literal["abort", "close-then-delete"]
"""How a cancel drops a multipart upload: abort it, or (for stores that cannot abort) complete it, then delete."""


@dataclass(frozen=True)
class DirectWriteOptions:
    """The settings of a :class:`~checkpointfs.direct.manager.DirectWriteManager` that hold on every store, validated
    at construction (a ValueError names the option). Each store's own settings (credentials, region, encryption, an
    Azure account) are keywords of its ``connect`` (:func:`checkpointfs.store.connect`), which DirectWriteManager and
    ``manager_for`` take beside these.

    Attributes:
        endpoint_url: the store's endpoint. S3: None is AWS (or ``AWS_ENDPOINT_URL_S3``); set, it selects
            path-style addressing. ``gs://``: the JSON API's endpoint (None: ``$STORAGE_EMULATOR_HOST``, else
            Google's), such as an emulator's ``http://127.0.0.1:4443``. Azure: the account's Blob endpoint (None:
            from the path's host), such as Azurite's ``http://127.0.0.1:10000/devstoreaccount1``.
        part_size: files up to it are one PutObject; larger ones stream as multipart parts of this size
            (default: the protocol's ``PART_SIZE_BYTES``). On ``gs://``, a multiple of 256 KiB: the chunks of a
            resumable upload, sent one at a time.
        max_inflight_parts: parts of one file uploaded at once; ``write`` blocks while that many are in flight, so
            a stream holds at most ``(max_inflight_parts + 1) * part_size`` bytes (default: ``PARTS_IN_FLIGHT``).
        abort_strategy: ``"abort"`` (cancel aborts the multipart upload) or ``"close-then-delete"`` (for stores that
            cannot abort: cancel completes the upload, then deletes the object, retrying per ``delete_retry``, and
            raises AbortFailedError if it cannot).
        retry: the RetryPolicy of every request (None: ``RetryPolicy()``).
        delete_retry: the RetryPolicy of deletes (None: ``retry``).
        connect_timeout_s: seconds to open a connection before the attempt fails (and is retried).
        read_timeout_s: seconds to wait for an answer before the attempt fails (and is retried).
        max_pool_connections: connections kept open to the endpoint.
        list_page_size: keys per ListObjectsV2 page, 1 to 1000.
        consistency_window_s: for stores that lag: for this long after its own write or delete of a key, the
            manager waits out a read of that key, or a listing of its directory, that does not show the change yet.
            0, the default, trusts the store, as S3 is strongly consistent.
        root: the checkpoint directory the manager serves (``manager_for`` passes its URI). ``exists`` of a path
            strictly below it, named as Spark names only files, is one HeadObject, with no directory listing
            (docs/contract.md, "exists: the probe rule"). None: no path is below the root.
        exists_probe: ``"log-order"`` (default: the rule above, and the batch after a metadata-log batch this
            manager published beside it is absent with no request while ``store_check`` is on),
            ``"file-names"`` (the rule above; a HeadObject for that batch too) or ``"full"``: every ``exists``
            sends a HeadObject and, when that finds no file, a ListObjectsV2, and nothing is answered from what the
            manager knows.
        store_check: check, before the process's first create-if-absent to a bucket, that the store refuses a second
            one of the same key (:mod:`checkpointfs.store.check`); an UnsafeStoreError refuses a store that does
            not. False skips the check, with a WARN each time a manager is made.
    """

    endpoint_url: str | None = None
    part_size: int = protocol.PART_SIZE_BYTES
    max_inflight_parts: int = protocol.PARTS_IN_FLIGHT
    abort_strategy: AbortStrategy = "abort"
    retry: RetryPolicy | None = None
    delete_retry: RetryPolicy | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    max_pool_connections: int = 32
    list_page_size: int = 1000
    consistency_window_s: float = 0.0
    root: str | None = None
    exists_probe: ProbeMode = "log-order"
    store_check: bool = True

    def __post_init__(self) -> None:
        def refuse(name: str, expected: str) -> None:
            raise ValueError(f"{name} must be {expected}, got {getattr(self, name)!r}")

        if self.abort_strategy not in ("abort", "close-then-delete"):
            refuse("abort_strategy", "'abort' or 'close-then-delete'")
        if self.part_size < 1:
            refuse("part_size", "positive")
        if self.max_inflight_parts < 1:
            refuse("max_inflight_parts", "at least 1")
        if self.exists_probe not in ("log-order", "file-names", "full"):
            refuse("exists_probe", "'log-order', 'file-names' or 'full'")
        if self.consistency_window_s < 0:
            refuse("consistency_window_s", "0 or more")
        if not 1 <= self.list_page_size <= 1000:
            refuse("list_page_size", "between 1 and 1000")
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            refuse("connect_timeout_s" if self.connect_timeout_s <= 0 else "read_timeout_s", "positive")
        if self.max_pool_connections < 1:
            refuse("max_pool_connections", "at least 1")
        for name in ("retry", "delete_retry"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), RetryPolicy):
                refuse(name, "a RetryPolicy or None")

    @classmethod
    def fields(cls) -> frozenset[str]:
        """The names of these settings."""
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def of(cls, **keywords: Any) -> DirectWriteOptions:
        """Options from keywords; an unknown keyword is a TypeError naming it."""
        unknown = sorted(set(keywords) - cls.fields())
        if unknown:
            raise TypeError(f"unknown DirectWriteManager option(s): {', '.join(unknown)}")
        return cls(**keywords)

    @property
    def retry_policy(self) -> RetryPolicy:
        """The RetryPolicy of every request."""
        return self.retry or RetryPolicy()

    @property
    def delete_retry_policy(self) -> RetryPolicy:
        """The RetryPolicy of deletes."""
        return self.delete_retry or self.retry_policy

    def connection(self) -> Connection:
        """What the store is reached with (:func:`checkpointfs.store.connect`)."""
        return Connection(endpoint_url=self.endpoint_url, retry=self.retry_policy, delete_retry=self.delete_retry,
                          connect_timeout_s=self.connect_timeout_s, read_timeout_s=self.read_timeout_s,
                          max_pool_connections=self.max_pool_connections, part_size=self.part_size,
                          root=self.root or "")
