"""The tools' errors are checkpointfs.errors types (store_error, the S3 client's translate), the CLI's line and
exit status are derived from the type, and doctor judges a conditional write's refusal by the protocol's table."""

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
from checkpointfs.tools import doctor, store_error
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
    (PermissionError("no"), AccessDeniedError),
    (TimeoutError("slow"), StoreUnavailableError),
])
def test_store_error_is_a_checkpointfs_error_type(error: BaseException, kind: type[StoreError]) -> None:
    mapped = store_error(error, PATH, "list_objects_v2")
    assert type(mapped) is kind and mapped.path == PATH
    assert "hunter22" not in mapped.cause


def test_store_error_leaves_others_alone() -> None:
    corrupt = CorruptLogError(PATH, "torn")
    assert store_error(corrupt, PATH, "list") is corrupt
    assert store_error(KeyError("bug"), PATH, "list") is None


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


def test_doctor_judges_the_refusal_by_the_protocol() -> None:
    assert doctor.refused(client_error(412, "PreconditionFailed"))
    assert doctor.refused(client_error(412))
    assert not doctor.refused(client_error(409, "ConditionalRequestConflict"))  # class retry: re-sent
    assert not doctor.refused(client_error(500, "InternalError"))
    assert doctor.answer_class(client_error(404)).name == "not-found"


def test_doctor_resends_retry_answers_then_judges_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor.time, "sleep", lambda s: None)
    answers = [client_error(409, "ConditionalRequestConflict"), client_error(503, "SlowDown"),
               client_error(412, "PreconditionFailed")]

    def call() -> None:
        raise answers.pop(0)

    with pytest.raises(ClientError) as raised:
        doctor._conditional(call)
    assert doctor.refused(raised.value) and answers == []
    sent = []

    def server_error() -> None:
        sent.append(1)
        raise client_error(500, "InternalError")  # may have been applied: not re-sent blindly

    with pytest.raises(ClientError):
        doctor._conditional(server_error)
    assert sent == [1]
