"""Azurite behind a recording proxy, seen as the conformance suite sees a store: :class:`LoggedAzurite`.

The proxy names each request by the Blob service's operation (checkpointfs.store.azure.client.classify); the suite,
written for S3, counts by S3's names, so :attr:`LoggedAzurite.requests` gives each Azure operation the name of the S3
one it stands in for (:data:`S3_NAMES`: PutBlob is the put, GetBlobProperties the head...). ``open_uploads`` are the
names that have uncommitted blocks and no committed blob: what a cancel on Azure can leave behind."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from checkpointfs.store.azure.client import classify
from checkpointfs.testing.faults import FaultPlan
from checkpointfs.testing.requests import Request, RequestLog
from checkpointfs.testing.server import TestServer
from harness.servers.recording_proxy import RecordingProxy

if TYPE_CHECKING:
    from typing_extensions import Self

    from harness.servers.azurite import AzuriteServer

S3_NAMES = {"PutBlob": "PutObject", "GetBlobProperties": "HeadObject", "GetBlob": "GetObject",
            "ListBlobs": "ListObjectsV2", "DeleteBlob": "DeleteObject", "PutBlock": "UploadPart",
            "PutBlockList": "CompleteMultipartUpload", "BlobBatch": "DeleteObjects",
            "GetContainerProperties": "HeadBucket"}
"""The S3 operation each Blob service operation stands in for, in the suite's counts."""


class S3NamedLog:
    """A view of a :class:`RequestLog` of Azure operations under S3's names (others keep their own)."""

    def __init__(self, log: RequestLog) -> None:
        self.log = log

    @staticmethod
    def _named(request: Request) -> Request:
        return dataclasses.replace(request, operation=S3_NAMES.get(request.operation, request.operation))

    def all(self) -> list[Request]:
        """Every request so far, in order, under S3's names."""
        return [self._named(r) for r in self.log.all()]

    def counts(self) -> dict[str, int]:
        """Requests by S3 operation name."""
        counts: dict[str, int] = {}
        for request in self.all():
            counts[request.operation] = counts.get(request.operation, 0) + 1
        return counts

    def clear(self) -> None:
        """Forget everything recorded."""
        self.log.clear()

    def __len__(self) -> int:
        return len(self.log)


class _AdminClient:
    """The two calls of a boto3 client the suite makes as "another writer", on Azurite directly (not recorded)."""

    def __init__(self, azurite: AzuriteServer) -> None:
        self._azurite = azurite

    def put_object(self, *, Bucket: str, Key: str, Body: bytes) -> None:
        self._azurite.put(Key, Body, container=Bucket)

    def delete_object(self, *, Bucket: str, Key: str) -> None:
        self._azurite.delete(Key, container=Bucket)


class LoggedAzurite(TestServer):
    """A running :class:`~harness.servers.azurite.AzuriteServer` behind a :class:`RecordingProxy` with the Blob
    service's classifier. Managers reach Azurite through the proxy (:meth:`manager_options`); the test's own calls
    (``client(admin=True)``, :meth:`keys`, :meth:`open_uploads`) go to Azurite directly, unrecorded. :meth:`stop`
    stops the proxy only."""

    def __init__(self, azurite: AzuriteServer) -> None:
        self.azurite = azurite
        self.raw_requests = RequestLog()
        """The log under Azure's own operation names."""
        self.requests = S3NamedLog(self.raw_requests)
        self._proxy = RecordingProxy(lambda: f"http://127.0.0.1:{azurite.port}", self.raw_requests,
                                     classifier=lambda m, p, q, h: classify(m, p, q, h, account_in_path=True),
                                     dialect="azure", plan_name=lambda operation: S3_NAMES.get(operation, operation))

    def start(self) -> Self:
        self._proxy.start()
        return self

    def set_faults(self, plan: FaultPlan | None, codes: dict[str, tuple[int, str]] | None = None) -> None:
        """Inject ``plan``'s faults (named by S3 operations, as every profile is) from the next request on, answered
        with Azure's codes (``codes`` overrides some); None: none."""
        self._proxy.error_codes = dict(codes or {})
        self._proxy.faults = plan

    def stop(self) -> None:
        self._proxy.stop()

    @property
    def endpoint_url(self) -> str:
        """The account's Blob endpoint through the proxy."""
        return f"{self._proxy.endpoint_url}/{self.azurite.account_name}"

    def manager_options(self) -> dict[str, Any]:
        """Options for ``manager_for("az://...")`` through the proxy."""
        return self.azurite.manager_options(self.endpoint_url)

    def uri(self, key: str = "") -> str:
        return self.azurite.uri(key)

    def client(self, admin: bool = False) -> _AdminClient:
        """The suite's "another writer": on Azurite directly, unrecorded (``admin`` or not)."""
        del admin
        return _AdminClient(self.azurite)

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Committed blobs under ``prefix`` (asked of Azurite directly)."""
        return self.azurite.keys(prefix, bucket)

    def open_uploads(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Names under ``prefix`` with uncommitted blocks and no committed blob."""
        committed = set(self.azurite.keys(prefix, bucket))
        return [k for k in self.azurite.keys(prefix, bucket, uncommitted=True) if k not in committed]

    def scoped(self, prefix: str) -> ScopedAzurite:
        """This server as one conformance case sees it: open uploads looked up under ``prefix`` only (the server is
        shared by the session's tests)."""
        return ScopedAzurite(self, prefix)


class ScopedAzurite:
    """A :class:`LoggedAzurite` whose :meth:`open_uploads` looks under one case's prefix."""

    def __init__(self, logged: LoggedAzurite, prefix: str) -> None:
        self.logged = logged
        self.prefix = prefix
        self.requests = logged.requests

    @property
    def endpoint_url(self) -> str:
        return self.logged.endpoint_url

    def client(self, admin: bool = False) -> _AdminClient:
        return self.logged.client(admin)

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        return self.logged.keys(prefix, bucket)

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        return self.logged.open_uploads(self.prefix)
