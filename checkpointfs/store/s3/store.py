""":class:`S3Store`: the object store interface on boto3, typed with the ``mypy_boto3_s3`` stubs (a misspelt
operation or field fails mypy). Every request is counted in :attr:`S3Store.requests` by its S3 API name; a failed
request is retried while the protocol table says its answer is retried (for the call in progress, each request sent
again counts in the metric ``retries``, each answer that asks to slow down in ``throttled``: checkpointfs.metrics);
failures come out as the contract's errors (:func:`checkpointfs.store.s3.client.translate`), carrying their class,
with the credentials in use redacted."""

from __future__ import annotations

import base64
import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import urllib3.exceptions
from botocore.exceptions import BotoCoreError, ClientError

from ... import paths, protocol
from ...errors import CheckpointFsError, StoreError
from ...metrics import RequestMetrics
from ...redact import redact
from ..attempts import Attempts, run_attempts
from ..base import (
    GetResult,
    ListResult,
    MultipartUpload,
    ObjectMeta,
    ObjectPath,
    ObjectStore,
    OpenUpload,
    Part,
    PutMode,
)
from ..errors import error_for
from ..retry import RetryPolicy
from .client import answer_of, translate

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_s3.type_defs import (
        CompleteMultipartUploadRequestTypeDef,
        CreateMultipartUploadRequestTypeDef,
        GetObjectRequestTypeDef,
        ListObjectsV2RequestTypeDef,
        PutObjectRequestTypeDef,
    )

log = logging.getLogger(__name__)

__all__ = ["Encryption", "S3Store"]
T = TypeVar("T")


@dataclass(frozen=True)
class Encryption:
    """Server-side encryption applied to every write: ``"AES256"`` (SSE-S3) or ``"aws:kms"`` with an optional key."""

    algorithm: Literal["AES256", "aws:kms"]
    kms_key_id: str | None = None


class S3Store(ObjectStore):
    """The store on a boto3 S3 ``client``: requests retried per ``retry`` (deletes per ``delete_retry``), writes
    stamped with the write id under :data:`checkpointfs.protocol.WRITE_ID_KEY` and encrypted per ``encryption``.
    A PutObject carries its body's SHA-256 (``x-amz-checksum-sha256``, never Content-MD5, which directory buckets
    refuse), which S3 keeps and a head reads back: the evidence a lost answer is settled by where the store keeps no
    user metadata (:func:`checkpointfs.protocol.owner_of_object`)."""

    def __init__(self, client: S3Client, *, retry: RetryPolicy, delete_retry: RetryPolicy | None = None,
                 encryption: Encryption | None = None, secrets: tuple[str, ...] = ()) -> None:
        self.boto = client
        """The boto3 client itself (for tests and tools that need raw requests to the same endpoint)."""
        self.retry = retry
        self.delete_retry = delete_retry or retry
        self.encryption = encryption
        self.requests = RequestMetrics()
        """Every request sent, by S3 API name, retries included."""
        self._secrets = tuple(s for s in secrets if s)
        client.meta.events.register("before-send.s3", self._count_request)

    def _count_request(self, event_name: str, **_: Any) -> None:
        self.requests.record(event_name.rsplit(".", 1)[-1])

    def close(self) -> None:
        self.boto.close()

    # -- sending -----------------------------------------------------------------------------------------------
    def _run(self, where: ObjectPath, operation: str, send: Callable[[], T], *, policy: RetryPolicy | None = None,
             abandon: threading.Event | None = None, attempts: Attempts | None = None) -> T:
        """``send`` with retries while the answer's class is retried (checkpointfs.store.attempts)."""
        return run_attempts(policy or self.retry, f"{operation} {where.uri}", send,
                            lambda e: self._failure(e, where, operation), abandon=abandon, attempts=attempts)

    def _failure(self, error: Exception, where: ObjectPath, operation: str) -> tuple[CheckpointFsError, bool] | None:
        """A botocore failure as the checkpointfs error it stands for, and whether S3 asked to slow down."""
        if not isinstance(error, (ClientError, BotoCoreError)):
            return None
        throttled = isinstance(error, ClientError) and protocol.is_throttle(answer_of(error))
        return translate(error, where.uri, operation, self._secrets), throttled

    def _metadata(self, write_id: str) -> dict[str, str]:
        return {protocol.WRITE_ID_KEY: write_id}

    # -- writing -----------------------------------------------------------------------------------------------
    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        args: PutObjectRequestTypeDef = {"Bucket": where.bucket, "Key": where.key, "Body": data,
                                         "Metadata": self._metadata(write_id), "ChecksumAlgorithm": "SHA256",
                                         "ChecksumSHA256": _sha256(data)}
        if mode is PutMode.CREATE:
            args["IfNoneMatch"] = "*"
        if self.encryption is not None:
            args["ServerSideEncryption"] = self.encryption.algorithm
            if self.encryption.kms_key_id:
                args["SSEKMSKeyId"] = self.encryption.kms_key_id
        self._run(where, "put_object", lambda: self.boto.put_object(**args))

    def checksum(self, data: bytes) -> str:
        return "sha256:" + _sha256(data)

    def create_multipart(self, where: ObjectPath, *, mode: PutMode, write_id: str) -> MultipartUpload:
        args: CreateMultipartUploadRequestTypeDef = {"Bucket": where.bucket, "Key": where.key,
                                                     "Metadata": self._metadata(write_id)}
        if self.encryption is not None:
            args["ServerSideEncryption"] = self.encryption.algorithm
            if self.encryption.kms_key_id:
                args["SSEKMSKeyId"] = self.encryption.kms_key_id
        attempts = Attempts()
        try:
            answer = self._run(where, "create_multipart_upload", lambda: self.boto.create_multipart_upload(**args),
                               attempts=attempts)
        except CheckpointFsError as e:
            e.maybe_applied = attempts.maybe_applied
            raise
        return MultipartUpload(answer["UploadId"], lost_attempts=attempts.maybe_applied)

    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        answer = self._run(where, "upload_part", lambda: self.boto.upload_part(
            Bucket=where.bucket, Key=where.key, UploadId=upload_id, PartNumber=number,
            Body=cast(bytes, data)),  # boto3 sends a bytearray as it is: no copy of the part
            abandon=abandon)
        return Part(number, answer["ETag"])

    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode,
                           tail: bytes = b"") -> None:
        if tail:
            raise ValueError("S3 sends every part before the completion: no tail")
        args: CompleteMultipartUploadRequestTypeDef = {
            "Bucket": where.bucket, "Key": where.key, "UploadId": upload_id,
            "MultipartUpload": {"Parts": [{"PartNumber": p.number, "ETag": p.etag} for p in parts]}}
        if mode is PutMode.CREATE:
            args["IfNoneMatch"] = "*"
        self._run(where, "complete_multipart_upload", lambda: self.boto.complete_multipart_upload(**args))

    def abort_multipart(self, where: ObjectPath, upload_id: str) -> None:
        self._run(where, "abort_multipart_upload", lambda: self.boto.abort_multipart_upload(
            Bucket=where.bucket, Key=where.key, UploadId=upload_id))

    def list_uploads(self, where: ObjectPath) -> list[OpenUpload]:
        prefix = uploads_prefix(where.bucket, where.key)
        answer = self._run(where, "list_multipart_uploads", lambda: self.boto.list_multipart_uploads(
            Bucket=where.bucket, Prefix=prefix))
        return [OpenUpload(u.get("Key", ""), u.get("UploadId", ""), u["Initiated"])
                for u in answer.get("Uploads", []) if "Initiated" in u and u.get("Key", "").startswith(where.key)]

    # -- reading -----------------------------------------------------------------------------------------------
    def get(self, where: ObjectPath, *, start: int = 0, expected_etag: str | None = None) -> GetResult:
        args: GetObjectRequestTypeDef = {"Bucket": where.bucket, "Key": where.key}
        if start:
            args["Range"] = f"bytes={start}-"
        if expected_etag is not None:
            args["IfMatch"] = expected_etag

        def send() -> Any:
            try:
                return self.boto.get_object(**args)
            except ClientError as e:
                answer = answer_of(e)
                final = protocol.classify(answer)
                if expected_etag is None or final.name != "conflict":
                    raise
                error = StoreError(where.uri, "the object was replaced while it was being read",
                                   code=answer.code, status=answer.status)
                error.answer_class = final
                raise error from None

        answer = self._run(where, "get_object", send)
        return GetResult(_S3Body(answer["Body"], where.uri, self._secrets), str(answer.get("ETag", "")),
                         start + int(answer.get("ContentLength", 0)),
                         str(answer.get("Metadata", {}).get(protocol.WRITE_ID_KEY, "")))

    def head(self, where: ObjectPath) -> ObjectMeta:
        answer = self._run(where, "head_object", lambda: self.boto.head_object(
            Bucket=where.bucket, Key=where.key, ChecksumMode="ENABLED"))
        kept = next(((name, str(answer.get(field))) for name, field in _CHECKSUMS if answer.get(field)), None)
        return ObjectMeta(where.key, int(answer.get("ContentLength", 0)), answer["LastModified"],
                          answer.get("ETag", ""), answer.get("Metadata", {}).get(protocol.WRITE_ID_KEY, ""),
                          f"{kept[0]}:{kept[1]}" if kept else "")

    def head_bucket(self, where: ObjectPath) -> None:
        self._run(where, "head_bucket", lambda: self.boto.head_bucket(Bucket=where.bucket))

    def list_pages(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000
                   ) -> Iterator[ListResult]:
        args: ListObjectsV2RequestTypeDef = {"Bucket": where.bucket, "Prefix": where.key, "MaxKeys": page_size}
        if delimiter:
            args["Delimiter"] = delimiter
        while True:
            page = self._run(where, "list_objects_v2", lambda: self.boto.list_objects_v2(**args))
            yield ListResult(
                [ObjectMeta(o["Key"], int(o.get("Size", 0)), o["LastModified"], o.get("ETag", ""))
                 for o in page.get("Contents", []) if "Key" in o and "LastModified" in o],
                [p["Prefix"] for p in page.get("CommonPrefixes", []) if "Prefix" in p])
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            args["ContinuationToken"] = token

    # -- deleting ----------------------------------------------------------------------------------------------
    def delete(self, where: ObjectPath) -> None:
        self._run(where, "delete_object", lambda: self.boto.delete_object(Bucket=where.bucket, Key=where.key),
                  policy=self.delete_retry)

    def delete_many(self, where: ObjectPath, keys: Sequence[str]) -> None:
        answer = self._run(where, "delete_objects", lambda: self.boto.delete_objects(
            Bucket=where.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}),
            policy=self.delete_retry)
        errors = answer.get("Errors") or []
        if errors:
            first = errors[0]
            refused = protocol.Answer(code=first.get("Code", ""))
            raise error_for(refused, where.at(first.get("Key", "")).uri, "delete_objects",
                            redact(first.get("Message", ""), self._secrets))


_CHECKSUMS = (("sha256", "ChecksumSHA256"), ("crc32c", "ChecksumCRC32C"), ("crc32", "ChecksumCRC32"),
              ("sha1", "ChecksumSHA1"), ("crc64nvme", "ChecksumCRC64NVME"))
"""The checksums a head may carry, as :attr:`ObjectMeta.checksum` names their algorithms."""


def _sha256(data: bytes) -> str:
    """The base64 SHA-256 of ``data``, as ``x-amz-checksum-sha256`` carries it."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


class _S3Body:
    """A GetObject body whose read failures come out as the contract's errors, carrying their class."""

    def __init__(self, body: Any, path: str, secrets: tuple[str, ...]) -> None:
        self._body = body
        self._path = path
        self._secrets = secrets

    def read(self, size: int) -> bytes:
        try:
            data: bytes = self._body.read(size)
        except (BotoCoreError, ClientError, OSError, urllib3.exceptions.HTTPError) as e:
            if isinstance(e, CheckpointFsError):
                raise
            raise translate(e, self._path, "get_object", self._secrets) from e
        return data

    def close(self) -> None:
        try:
            self._body.close()
        except Exception:  # noqa: BLE001 - a broken body is dropped either way
            log.debug("%s: closing a broken body failed", self._path)


def uploads_prefix(bucket: str, key: str) -> str:
    """The prefix the open uploads of ``key`` are listed by (then filtered to the key): the key itself, since MinIO
    lists the uploads of an exact object name only; its directory, ending in ``/`` ("" at the root), in a directory
    bucket, which takes only such prefixes. The shim's twin: ``MultipartUploader.uploadsPrefix``."""
    if not paths.is_directory_bucket(bucket):
        return key
    return key.rpartition("/")[0] + "/" if "/" in key else ""
