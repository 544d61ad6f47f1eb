"""The S3 side of DirectWriteManager in one place, used by the manager, its output stream and its reader: the boto3
client and the requests sent through it (:class:`S3Client`), the retry policy, how failures are classified (retry
or not, possibly applied or not) and translated into the contract's error kinds, the arguments every
object-creating request carries, and :data:`WRITE_ID_KEY`. Messages name the path and the cause and never carry
credentials."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

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
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
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
from ..metrics import RequestMetrics
from ..redact import redact

log = logging.getLogger(__name__)

WRITE_ID_KEY = "checkpointfs-write-id"
"""User-metadata key (``x-amz-meta-checkpointfs-write-id``) holding the unique id of the create that wrote an object."""

# -- classifying failures --------------------------------------------------------------------------------------------
THROTTLE_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                            "TooManyRequestsException", "ServiceUnavailable", "503"})
SERVER_ERROR_CODES = frozenset({"InternalError", "500", "502", "504", "RequestTimeout", "RequestTimeTooSkewed"})
CONFLICT_CODES = frozenset({"ConditionalRequestConflict", "OperationAborted", "409"})
PRECONDITION_CODES = frozenset({"PreconditionFailed", "412"})
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
AUTH_CODES = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "Forbidden",
                        "InvalidToken", "ExpiredToken", "AllAccessDisabled"})
_TRANSPORT_ERRORS = (BotoConnectionError, HTTPClientError, IncompleteReadError, ResponseStreamingError)


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
            return BucketNotFoundError(path, f"{operation}: bucket {bucket!r} does not exist", code=code, status=status)
        if code in AUTH_CODES or status == 403:
            return AccessDeniedError(path, f"{operation}: the store refused the request, check credentials and "
                                           f"permissions: {detail}", code=code, status=status)
        if is_precondition_failed(error):
            return FileAlreadyExistsError(path, f"{operation}: file already exists and overwrite was not allowed")
        if is_not_found(error):
            return PathNotFoundError(path, f"{operation}: no such file")
        if is_retryable(error):
            return StoreUnavailableError(path, f"{operation}: the store kept failing after retries: {detail}",
                                         code=code, status=status)
        return StoreError(path, f"{operation} failed: {detail}", code=code, status=status)
    if isinstance(error, EndpointConnectionError):
        return StoreUnavailableError(path, f"{operation}: cannot reach the S3 endpoint "
                                           f"{redact(str(error.kwargs.get('endpoint_url', '')), secrets)}")
    if isinstance(error, (*_TRANSPORT_ERRORS, ConnectTimeoutError)):
        return StoreUnavailableError(path, f"{operation}: connection failed after retries: "
                                           f"{type(error).__name__}")
    if isinstance(error, BotoCoreError):
        return StoreError(path, f"{operation} failed: {redact(str(error), secrets)}")
    return StoreError(path, f"{operation} failed: {type(error).__name__}: {redact(str(error), secrets)}")


# -- retrying --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry one request: at most ``max_attempts`` attempts and ``max_elapsed_s``
    seconds, sleeping a random time up to ``initial_backoff_s * 2**n`` (capped at ``max_backoff_s``) between them."""

    max_attempts: int = 10
    initial_backoff_s: float = 0.05
    max_backoff_s: float = 5.0
    max_elapsed_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}")
        if self.initial_backoff_s < 0 or self.max_backoff_s < 0 or self.max_elapsed_s < 0:
            raise ValueError("RetryPolicy durations must not be negative")

    def retrying(self, retry_on: Callable[[BaseException], bool] = is_retryable, what: str = "",
                 sleep: Callable[[float], None] = time.sleep) -> Retrying:
        """A tenacity ``Retrying`` for this policy that retries the exceptions ``retry_on`` accepts and re-raises
        the last one when the budget is spent; ``sleep`` waits out the backoff."""

        def before_sleep(state: RetryCallState) -> None:
            outcome = state.outcome
            error = outcome.exception() if outcome is not None else None
            log.info("%s: attempt %d failed (%s); retrying", what, state.attempt_number, type(error).__name__)

        return Retrying(
            stop=stop_after_attempt(self.max_attempts) | stop_after_delay(self.max_elapsed_s),
            wait=wait_random_exponential(multiplier=self.initial_backoff_s, max=self.max_backoff_s),
            retry=retry_if_exception(retry_on),
            reraise=True,
            before_sleep=before_sleep,
            sleep=sleep,
        )


# -- the client ------------------------------------------------------------------------------------------------------
class Abandoned(Exception):
    """Raised by :meth:`S3Client.call` instead of sending another attempt once its ``abandon`` event is set."""


@dataclass(frozen=True)
class Encryption:
    """Server-side encryption applied to every write: ``"AES256"`` (SSE-S3) or ``"aws:kms"`` with an optional key."""

    algorithm: Literal["AES256", "aws:kms"]
    kms_key_id: str | None = None

    def request_args(self) -> dict[str, str]:
        """The PutObject / CreateMultipartUpload arguments for this setting."""
        args: dict[str, str] = {"ServerSideEncryption": self.algorithm}
        if self.kms_key_id:
            args["SSEKMSKeyId"] = self.kms_key_id
        return args


class S3Client:
    """A boto3 S3 client with the manager's policies: every request counted in :attr:`metrics`, retried per
    :attr:`retry` (deletes per :attr:`delete_retry`), and its failures translated into the contract's errors with
    ``secrets`` (the credentials in use) redacted."""

    def __init__(self, client: Any, *, retry: RetryPolicy, delete_retry: RetryPolicy,
                 encryption: Encryption | None = None, secrets: tuple[str, ...] = ()) -> None:
        self.boto = client
        """The boto3 client itself, for requests whose retries the caller drives (:meth:`send`)."""
        self.retry = retry
        self.delete_retry = delete_retry
        self.encryption = encryption
        self.metrics = RequestMetrics()
        self._secrets = tuple(s for s in secrets if s)
        client.meta.events.register("before-send.s3", self._count_request)

    def _count_request(self, event_name: str, **_: Any) -> None:
        self.metrics.record(event_name.rsplit(".", 1)[-1])

    def close(self) -> None:
        """Release the connections."""
        self.boto.close()

    def send(self, operation: str, **kwargs: Any) -> Any:
        """Send one S3 ``operation`` (the boto3 method name) once, untranslated: for callers that drive retries."""
        return getattr(self.boto, operation)(**kwargs)

    def call(self, path: str, operation: str, policy: RetryPolicy | None = None,
             abandon: threading.Event | None = None, **kwargs: Any) -> Any:
        """Send one S3 ``operation`` with retries; failures come out translated. Once ``abandon`` is set, no
        further attempt is sent and the backoff is cut short: :class:`Abandoned` is raised instead."""
        method = getattr(self.boto, operation)
        retrying = (policy or self.retry).retrying(what=f"{operation} {path}",
                                                  sleep=_sleep_until(abandon) if abandon else time.sleep)
        try:
            for attempt in retrying:
                with attempt:
                    if abandon is not None and abandon.is_set():
                        raise Abandoned(f"{operation} {path}")
                    return method(**kwargs)
        except (ClientError, BotoCoreError) as e:
            raise self.translate(e, path, operation) from (None if _hides_credentials(e) else e)
        raise AssertionError("unreachable: tenacity either returns or raises")

    def translate(self, error: BaseException, path: str, operation: str) -> CheckpointFsError:
        """The contract's error for ``error``, credentials redacted."""
        return translate(error, path, operation, self._secrets)

    def write_args(self, write_id: str) -> dict[str, Any]:
        """Arguments every object-creating request carries: the write id and the encryption setting."""
        args: dict[str, Any] = {"Metadata": {WRITE_ID_KEY: write_id}}
        if self.encryption:
            args.update(self.encryption.request_args())
        return args

    def head_write_id(self, path: str, bucket: str, key: str) -> str | None:
        """The write id stamped on the object at ``key`` (``""`` if it has none); None when the object is absent.
        Transient failures are retried; a failure beyond the budget raises."""
        try:
            answer = self.call(path, "head_object", Bucket=bucket, Key=key)
        except PathNotFoundError:
            return None
        return write_id_of(answer)


def _sleep_until(event: threading.Event) -> Callable[[float], None]:
    """A backoff sleep that ends early when ``event`` is set."""

    def sleep(seconds: float) -> None:
        event.wait(seconds)

    return sleep


def write_id_of(answer: dict[str, Any]) -> str:
    """The write id in a HeadObject or GetObject answer's user metadata (``""`` if it has none)."""
    return cast(str, answer.get("Metadata", {}).get(WRITE_ID_KEY, ""))


def _hides_credentials(error: BaseException) -> bool:
    """Auth failures are re-raised without their botocore cause, so no credential detail can travel with them."""
    return error_code(error) in AUTH_CODES or http_status(error) == 403
