"""The tools' errors are checkpointfs.errors types (the store layer's, which the tools read every object store
through, and store_error's for file systems), and the CLI's line and exit status are derived from the type."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from checkpointfs.errors import (
    AccessDeniedError,
    BucketNotFoundError,
    CorruptLogError,
    InvalidPathError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from checkpointfs.store.s3.client import translate
from checkpointfs.tools import store_error
from checkpointfs.tools.commands import describe

PATH = "s3://bucket/ck"


def client_error(status: int, code: str = "") -> ClientError:
    response: Any = {"Error": {"Code": code or str(status), "Message": "refused"},
                     "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "PutObject")


@pytest.mark.parametrize(("error", "kind"), [
    (client_error(403, "AccessDenied"), AccessDeniedError),
    (client_error(404, "NoSuchBucket"), BucketNotFoundError),
    (client_error(503, "SlowDown"), StoreUnavailableError),
    (client_error(400, "InvalidArgument"), StoreError),
    (NoCredentialsError(), AccessDeniedError),
    (EndpointConnectionError(endpoint_url="http://user:hunter22@127.0.0.1:9"), StoreUnavailableError),
])
def test_the_s3_stores_errors_are_checkpointfs_error_types(error: BaseException, kind: type[StoreError]) -> None:
    """What the tools raise on S3: the S3 store's translation, as the managers raise it; the tools pass it on."""
    mapped = translate(error, PATH, "list_objects_v2")
    assert type(mapped) is kind and mapped.path == PATH
    assert "hunter22" not in mapped.cause
    assert store_error(mapped, PATH, "list") is mapped


@pytest.mark.parametrize(("error", "kind"), [
    (PermissionError("no"), AccessDeniedError),
    (TimeoutError("slow"), StoreUnavailableError),
])
def test_store_error_is_a_checkpointfs_error_type(error: BaseException, kind: type[StoreError]) -> None:
    mapped = store_error(error, PATH, "list")
    assert type(mapped) is kind and mapped.path == PATH


def test_store_error_leaves_others_alone() -> None:
    corrupt = CorruptLogError(PATH, "torn")
    assert store_error(corrupt, PATH, "list") is corrupt
    assert store_error(KeyError("bug"), PATH, "list") is None
    assert store_error(client_error(403, "AccessDenied"), PATH, "list") is None  # the store translates its own


@pytest.mark.parametrize(("error", "line"), [
    (AccessDeniedError(PATH, "list: AccessDenied"), f"cannot read {PATH}: access denied: list: AccessDenied"),
    (BucketNotFoundError(PATH, "gone"), f"cannot read {PATH}: the bucket does not exist: gone"),
    (StoreUnavailableError(PATH, "no route"), f"cannot read {PATH}: the store cannot be reached: no route"),
    (StoreError(PATH, "400"), f"cannot read {PATH}: the store refused the request: 400"),
    (PathNotFoundError(PATH, "no checkpoint here"), f"cannot read {PATH}: no checkpoint here"),
    (InvalidPathError("gopher://h/ck", "unsupported"), "cannot read gopher://h/ck: unsupported"),
    (CorruptLogError(PATH, "torn"), f"{PATH}: torn"),
])
def test_cli_line_from_the_error_type(error: Any, line: str) -> None:
    assert describe("verify", error) == f"checkpointfs verify: {line}"


def test_cli_line_redacts() -> None:
    error = StoreUnavailableError("s3://b/ck", "cannot reach http://me:hunter22@host:9")
    assert "hunter22" not in describe("inspect", error)
