"""How S3 failures are classified (retry or not, possibly applied or not) and translated into the contract's
error kinds. Messages name the path and the cause and never carry credentials."""

from __future__ import annotations

import re

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    PartialCredentialsError,
    ResponseStreamingError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from ..errors import (
    AccessDeniedError,
    BucketNotFoundError,
    CheckpointFsError,
    FileAlreadyExistsError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
)

THROTTLE_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                            "TooManyRequestsException", "ServiceUnavailable", "503"})
SERVER_ERROR_CODES = frozenset({"InternalError", "500", "502", "504", "RequestTimeout", "RequestTimeTooSkewed"})
CONFLICT_CODES = frozenset({"ConditionalRequestConflict", "OperationAborted", "409"})
PRECONDITION_CODES = frozenset({"PreconditionFailed", "412"})
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
AUTH_CODES = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "Forbidden",
                        "InvalidToken", "ExpiredToken", "AllAccessDisabled"})
_TRANSPORT_ERRORS = (BotoConnectionError, HTTPClientError, IncompleteReadError, ResponseStreamingError)
_URL_USERINFO = re.compile(r"(//)[^/@\s]+@")


def error_code(error: BaseException) -> str:
    """The S3 error code of a ClientError (``"412"``-style status text when the body had none), else ``""``."""
    if not isinstance(error, ClientError):
        return ""
    code = str(error.response.get("Error", {}).get("Code") or "")
    return code or str(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def http_status(error: BaseException) -> int:
    """The HTTP status of a ClientError, else 0."""
    if not isinstance(error, ClientError):
        return 0
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def is_precondition_failed(error: BaseException) -> bool:
    """A 412: the conditional write found the key taken."""
    return error_code(error) in PRECONDITION_CODES or http_status(error) == 412


def is_not_found(error: BaseException) -> bool:
    """A 404 for the key (not for the bucket)."""
    return error_code(error) in NOT_FOUND_CODES or (http_status(error) == 404 and error_code(error) != "NoSuchBucket")


def is_retryable(error: BaseException) -> bool:
    """Throttling, server errors, conflicts of concurrent conditional requests, and transport failures."""
    if isinstance(error, ClientError):
        code, status = error_code(error), http_status(error)
        return code in THROTTLE_CODES | SERVER_ERROR_CODES | CONFLICT_CODES or status in (409, 500, 502, 503, 504)
    return isinstance(error, _TRANSPORT_ERRORS)


def may_have_been_applied(error: BaseException) -> bool:
    """Whether the failed request may still have taken effect at the store. Throttling and conflicts are
    refusals, and a connection that was never opened carried nothing; anything else may have been applied
    (a 500, a reset or a timeout after the request was sent: the answer was lost, not the request)."""
    if isinstance(error, (EndpointConnectionError, ConnectTimeoutError)):
        return False
    if isinstance(error, ClientError):
        code, status = error_code(error), http_status(error)
        # a 4xx is the store's refusal, a 503 or a throttling code its push-back, a 501 a feature the store lacks
        # (MinIO without a KMS answers SSE with 501 NotImplemented): none applied anything
        return status >= 500 and status not in (501, 503) and code not in THROTTLE_CODES | CONFLICT_CODES
    return True


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every given secret and any user-info of URLs removed."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<redacted>")
    return _URL_USERINFO.sub(r"\1<redacted>@", text)


def translate(error: BaseException, path: str, operation: str, secrets: tuple[str, ...] = ()) -> CheckpointFsError:
    """The contract's error kind for a botocore failure of ``operation`` on ``path``."""
    if isinstance(error, CheckpointFsError):
        return error
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return AccessDeniedError(path, f"{operation}: no usable AWS credentials were found (standard boto3 chain)")
    if isinstance(error, ClientError):
        code, status = error_code(error), http_status(error)
        message = redact(str(error.response.get("Error", {}).get("Message") or ""), secrets)
        detail = (f"HTTP {status}" if code == str(status) else f"{code} (HTTP {status})") + (
            f": {message}" if message else "")
        if code == "NoSuchBucket":
            bucket = path.split("://", 1)[-1].split("/", 1)[0]
            return BucketNotFoundError(path, f"{operation}: bucket {bucket!r} does not exist")
        if code in AUTH_CODES or status == 403:
            return AccessDeniedError(path, f"{operation}: the store refused the request, check credentials and "
                                           f"permissions: {detail}")
        if is_precondition_failed(error):
            return FileAlreadyExistsError(path, f"{operation}: file already exists and overwrite was not allowed")
        if is_not_found(error):
            return PathNotFoundError(path, f"{operation}: no such file")
        if is_retryable(error):
            return StoreUnavailableError(path, f"{operation}: the store kept failing after retries: {detail}")
        return StoreError(path, f"{operation} failed: {detail}")
    if isinstance(error, EndpointConnectionError):
        return StoreUnavailableError(path, f"{operation}: cannot reach the S3 endpoint "
                                           f"{redact(str(error.kwargs.get('endpoint_url', '')), secrets)}")
    if isinstance(error, (*_TRANSPORT_ERRORS, ConnectTimeoutError)):
        return StoreUnavailableError(path, f"{operation}: connection failed after retries: "
                                           f"{type(error).__name__}")
    if isinstance(error, BotoCoreError):
        return StoreError(path, f"{operation} failed: {redact(str(error), secrets)}")
    return StoreError(path, f"{operation} failed: {type(error).__name__}: {redact(str(error), secrets)}")
