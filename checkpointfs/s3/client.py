"""What a botocore failure means, in the protocol's terms and the contract's: :func:`answer_of` reads the store's
answer (HTTP status, error code, transport failure kind) off the exception, :func:`checkpointfs.protocol.classify`
sorts it, and :func:`translate` turns it into the error kind of :mod:`checkpointfs.errors` the table names, carrying
the class. Messages name the path and the cause and never carry credentials (:func:`redact`)."""

from __future__ import annotations

from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, PartialCredentialsError

from .. import protocol
from ..errors import (
    AccessDeniedError,
    BucketNotFoundError,
    CheckpointFsError,
    FileAlreadyExistsError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from ..redact import redact

__all__ = ["answer_of", "error_for", "redact", "translate"]



def class_names(error: BaseException) -> tuple[str, ...]:
    """The names of ``error``'s class and its superclasses, for the table's rules that name them."""
    return tuple(kind.__name__ for kind in type(error).__mro__)


def answer_of(error: BaseException) -> protocol.Answer:
    """The store's answer a botocore (or urllib3, or OS) failure stands for."""
    names = class_names(error)
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code") or "")
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return protocol.Answer(status=status, code=code, python_classes=names)
    return protocol.Answer(transport=protocol.RULES.transport_of(names), python_classes=names)


def error_for(answer: protocol.Answer, path: str, operation: str, message: str = "") -> CheckpointFsError:
    """The contract's error for a store's ``answer`` to ``operation`` on ``path`` (``message``: the store's own
    words, already redacted), carrying the answer's class."""
    final = protocol.classify(answer)
    code = answer.code or (str(answer.status) if answer.status else "")
    status = answer.status
    detail = ((f"HTTP {status}" if code == str(status) else f"{code} (HTTP {status})")
              + (f": {message}" if message else ""))
    error: CheckpointFsError
    if final.error == "BucketNotFoundError":
        bucket = path.split("://", 1)[-1].split("/", 1)[0]
        error = BucketNotFoundError(path, f"{operation}: bucket {bucket!r} does not exist", code=code, status=status)
    elif final.error == "AccessDeniedError":
        error = AccessDeniedError(path, f"{operation}: the store refused the request, check credentials and "
                                        f"permissions: {detail}", code=code, status=status)
    elif final.error == "FileAlreadyExistsError":
        error = FileAlreadyExistsError(path, f"{operation}: file already exists and overwrite was not allowed")
    elif final.error == "PathNotFoundError":
        error = PathNotFoundError(path, f"{operation}: no such file")
    elif final.error == "StoreUnavailableError":
        error = StoreUnavailableError(path, f"{operation}: the store kept failing after retries: {detail}",
                                      code=code, status=status)
    else:
        error = StoreError(path, f"{operation} failed: {detail}", code=code, status=status)
    error.answer_class = final
    return error


def translate(error: BaseException, path: str, operation: str, secrets: tuple[str, ...] = ()) -> CheckpointFsError:
    """The contract's error kind for a botocore failure of ``operation`` on ``path``, classified by the protocol
    table (its class in ``answer_class``); ``secrets`` are redacted from the message."""
    if isinstance(error, CheckpointFsError):
        return error
    answer = answer_of(error)
    if isinstance(error, ClientError):
        message = redact(str(error.response.get("Error", {}).get("Message") or ""), secrets)
        return error_for(answer, path, operation, message)
    final = protocol.classify(answer)
    result: CheckpointFsError
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        result = AccessDeniedError(path, f"{operation}: no usable AWS credentials were found (standard boto3 chain)")
    elif isinstance(error, EndpointConnectionError):
        result = StoreUnavailableError(path, f"{operation}: cannot reach the S3 endpoint "
                                             f"{redact(str(error.kwargs.get('endpoint_url', '')), secrets)}")
    elif final.error == "StoreUnavailableError":
        result = StoreUnavailableError(path, f"{operation}: connection failed after retries: {type(error).__name__}")
    else:
        result = StoreError(path, f"{operation} failed: {type(error).__name__}: {redact(str(error), secrets)}")
    result.answer_class = final
    return result


def hides_credentials(error: CheckpointFsError) -> bool:
    """Auth failures are raised without their botocore cause, so no credential detail can travel with them."""
    return isinstance(error, AccessDeniedError)
