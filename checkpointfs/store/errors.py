"""The contract's errors for a store's answers, whatever the store: :func:`error_for` turns an answer
(:class:`checkpointfs.protocol.Answer`, read off a client's failure by the store's own ``client`` module) into the
error kind of :mod:`checkpointfs.errors` that ``protocol.json``'s table names, carrying the class. Messages name the
path and the cause; the store's words reach here already redacted."""

from __future__ import annotations

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
from ..protocol import permissions

__all__ = ["class_names", "error_for"]


def class_names(error: BaseException) -> tuple[str, ...]:
    """The names of ``error``'s class and its superclasses, for the table's rules that name them."""
    return tuple(kind.__name__ for kind in type(error).__mro__)


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
        grant = _grant(path, operation)
        error = AccessDeniedError(path, f"{operation}: the store refused the request, check credentials and "
                                        f"permissions{grant}: {detail}", code=code, status=status)
    elif final.error == "FileAlreadyExistsError":
        error = FileAlreadyExistsError(path, f"{operation}: file already exists and overwrite was not allowed")
    elif final.error == "PathNotFoundError":
        error = PathNotFoundError(path, f"{operation}: no such file")
    elif final.error == "StoreUnavailableError":
        error = StoreUnavailableError(path, f"{operation}: the store kept failing after retries: {detail}",
                                      code=code, status=status)
    else:
        error = StoreError(path, f"{operation} failed: {detail}", code=code, status=status)
    error.answer = answer
    error.answer_class = final
    return error


def _grant(path: str, operation: str) -> str:
    """`` (grant ... on bucket 'b')`` for a refused ``operation`` on ``path``, when the permissions table names
    what it needs; else ``""``."""
    family = permissions.family_of(path)
    request = permissions.OPERATIONS.get(operation)
    if family is None or request is None:
        return ""
    bucket = path.split("://", 1)[-1].split("/", 1)[0]
    text = permissions.needs(family, request, bucket)
    return f" ({text})" if text else ""
