"""Small adapters that let the shared test helpers (conformance ``Case``, sink ``Target``) check a real store."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from checkpointfs.spark.config import s3a_settings
from harness.servers.minio import MinioServer


@dataclass(frozen=True)
class SentRequest:
    """One request a client sent: its S3 operation and the key it named ("" for a bucket-level request)."""

    operation: str
    key: str


class SentRequests:
    """The requests a boto3 client sent, by S3 operation (retries included): the request log of a store that keeps
    none here, counted at the client instead of at the server. ``bucket`` is stripped from path-style URLs."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._sent_requests: list[SentRequest] = []
        self._bucket = bucket
        client.meta.events.register("before-send.s3", self._sent)

    def _sent(self, event_name: str, request: Any = None, **_: Any) -> None:
        path = unquote(urlsplit(request.url).path).lstrip("/") if request is not None else ""
        if path == self._bucket or path.startswith(self._bucket + "/"):
            path = path[len(self._bucket):].lstrip("/")
        self._sent_requests.append(SentRequest(event_name.rsplit(".", 1)[-1], path))

    def all(self) -> list[SentRequest]:
        """Requests sent since the last :meth:`clear`, in order."""
        return list(self._sent_requests)

    def counts(self) -> dict[str, int]:
        """Requests sent since the last :meth:`clear`, by operation."""
        return dict(Counter(r.operation for r in self._sent_requests))

    def clear(self) -> None:
        """Forget the requests counted so far."""
        self._sent_requests.clear()


class ClientSide:
    """What the conformance ``Case`` reads from its ``server``, for a Python manager on MinIO: the requests the
    manager's own client sent, and the uploads left open under the case's prefix."""

    def __init__(self, server: MinioServer, prefix: str, client: Any) -> None:
        self.requests = SentRequests(client, server.buckets[0])
        self._uploads = UploadsOf(server, prefix)

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        """Keys of uploads neither completed nor aborted under the prefix."""
        return self._uploads.open_uploads()


class UploadsOf:
    """``open_uploads()`` of one test on MinIO: the multipart uploads left open under that test's own prefix."""

    def __init__(self, server: MinioServer, prefix: str) -> None:
        self._server = server
        self._prefix = prefix

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        """Keys of uploads neither completed nor aborted under the prefix."""
        return self._server.open_uploads(self._prefix)


def minio_s3a_conf(server: MinioServer, **overrides: str) -> dict[str, str]:
    """The ``fs.s3a.*`` settings that reach ``server``, with the shim's defaults and quick retries of a local
    endpoint. MinIO's bucket is not the Spark session's, and S3A caches one file system per bucket: the first
    manager on that bucket configures it with these settings."""
    return {**s3a_settings(server), **overrides}


def bucket_conf(server: MinioServer) -> dict[str, Any]:
    """Per-bucket S3A settings (``fs.s3a.bucket.<bucket>.*``) for reaching ``server`` from a session configured for
    another endpoint: set them on the session's Hadoop configuration before the bucket is first used."""
    bucket = server.buckets[0]
    return {key.replace("fs.s3a.", f"fs.s3a.bucket.{bucket}.", 1): value
            for key, value in server.hadoop_conf().items() if key != "fs.s3a.aws.credentials.provider"}
