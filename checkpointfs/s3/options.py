""":class:`DirectWriteOptions`: every setting of a DirectWriteManager in one typed, validated object."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .. import protocol
from ..store.retry import RetryPolicy
from .probes import ProbeMode

if TYPE_CHECKING:
    import boto3

__all__ = ["AbortStrategy", "DirectWriteOptions"]

AbortStrategy = Literal["abort", "close-then-delete"]
"""How a cancel drops a multipart upload: abort it, or (for stores that cannot abort) complete it, then delete."""


@dataclass(frozen=True)
class DirectWriteOptions:
    """The settings of a :class:`~checkpointfs.s3.manager.DirectWriteManager`, validated at construction (a
    ValueError names the option).

    Attributes:
        endpoint_url: the S3 endpoint (None: AWS, or ``AWS_ENDPOINT_URL_S3``); set, it selects path-style addressing.
            For ``gs://``: the JSON API's endpoint (None: ``$STORAGE_EMULATOR_HOST``, else Google's), such as an
            emulator's ``http://127.0.0.1:4443``.
        region: the region to sign for (None: the session's, else ``us-east-1``).
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
        sse: server-side encryption of every write, ``"AES256"`` or ``"aws:kms"`` (None: the bucket's default).
        sse_kms_key_id: the KMS key of ``sse="aws:kms"`` (None: the account's default key).
        aws_access_key_id: credentials; None uses the standard boto3 chain.
        aws_secret_access_key: the secret key that goes with ``aws_access_key_id``.
        aws_session_token: the session token of temporary credentials.
        session: a ready ``boto3.Session`` to take credentials and region from (instead of the three above).
        gcs_credentials: for ``gs://``: a ``google.auth.credentials.Credentials`` to send requests with (None:
            ``gcs_token``, else anonymous when ``endpoint_url`` names an emulator, else Application Default
            Credentials).
        gcs_token: for ``gs://``: an OAuth2 access token to send requests with (it is not refreshed).
        connect_timeout_s: seconds to open a connection before the attempt fails (and is retried).
        read_timeout_s: seconds to wait for an answer before the attempt fails (and is retried).
        max_pool_connections: connections kept open to the endpoint.
        list_page_size: keys per ListObjectsV2 page, 1 to 1000.
        consistency_window_s: for stores that lag: for this long after its own write or delete of a key, the
            manager waits out a read of that key, or a listing of its directory, that does not show the change yet.
            0, the default, trusts the store, as S3 is strongly consistent.
        client: a prepared boto3 S3 client, for tests and advanced use (its credentials are then not known to the
            manager, which redacts the explicit ones given here only).
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
    region: str | None = None
    part_size: int = protocol.PART_SIZE_BYTES
    max_inflight_parts: int = protocol.PARTS_IN_FLIGHT
    abort_strategy: AbortStrategy = "abort"
    retry: RetryPolicy | None = None
    delete_retry: RetryPolicy | None = None
    sse: Literal["AES256", "aws:kms"] | None = None
    sse_kms_key_id: str | None = None
    aws_access_key_id: str | None = field(default=None, repr=False)
    aws_secret_access_key: str | None = field(default=None, repr=False)
    aws_session_token: str | None = field(default=None, repr=False)
    session: boto3.Session | None = field(default=None, repr=False)
    gcs_credentials: Any = field(default=None, repr=False)
    gcs_token: str | None = field(default=None, repr=False)
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    max_pool_connections: int = 32
    list_page_size: int = 1000
    consistency_window_s: float = 0.0
    client: Any = field(default=None, repr=False)
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
        if self.sse not in (None, "AES256", "aws:kms"):
            refuse("sse", "None, 'AES256' or 'aws:kms'")
        if self.sse_kms_key_id and self.sse != "aws:kms":
            raise ValueError("sse_kms_key_id needs sse='aws:kms'")
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
    def of(cls, **keywords: Any) -> DirectWriteOptions:
        """Options from keywords; an unknown keyword is a TypeError naming it."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(keywords) - known)
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
