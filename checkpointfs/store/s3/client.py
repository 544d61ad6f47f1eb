"""What a botocore failure means, in the protocol's terms and the contract's: :func:`answer_of` reads the store's
answer (HTTP status, error code, transport failure kind) off the exception, :func:`checkpointfs.protocol.classify`
sorts it, and :func:`translate` turns it into the error kind of :mod:`checkpointfs.errors` the table names
(:func:`checkpointfs.store.errors.error_for`), carrying the class. Messages name the path and the cause and never
carry credentials (:func:`checkpointfs.redact.redact`)."""

from __future__ import annotations

from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, PartialCredentialsError

from ... import protocol
from ...errors import AccessDeniedError, CheckpointFsError, StoreError, StoreUnavailableError
from ...redact import redact
from ..errors import class_names, error_for

__all__ = ["answer_of", "hides_credentials", "translate"]



def answer_of(error: BaseException) -> protocol.Answer:
    """The store's answer a botocore (or urllib3, or OS) failure stands for."""
    names = class_names(error)
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code") or "")
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return protocol.Answer(status=status, code=code, python_classes=names)
    return protocol.Answer(transport=protocol.RULES.transport_of(names), python_classes=names)


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
    result.answer, result.answer_class = answer, final
    return result


def hides_credentials(error: CheckpointFsError) -> bool:
    """Auth failures are raised without their botocore cause, so no credential detail can travel with them."""
    return isinstance(error, AccessDeniedError)
