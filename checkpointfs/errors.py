"""Error kinds of the checkpointfs contract.

Every error names the path it concerns and the cause. The kinds are precise, so callers branch on types,
never on message text:

- :class:`FileAlreadyExistsError` (a :class:`FileExistsError`): a create with ``overwrite_if_possible=False``
  found the path taken. The existing file is unchanged.
- :class:`PathNotFoundError` (a :class:`FileNotFoundError`): the path does not exist.
- :class:`AbortFailedError`: a cancel could not be completed; partial data may be visible. Fatal.
- :class:`WriteOutcomeUnknownError`: a write whose outcome cannot be decided; never taken as success or conflict.
- :class:`InvalidPathError` (a :class:`ValueError`): a malformed URI or an unsupported scheme.
- :class:`BucketNotFoundError`: the bucket of an ``s3://`` path does not exist (a configuration error,
  deliberately *not* a :class:`FileNotFoundError`, so it is never mistaken for an absent file).
- :class:`AccessDeniedError` (a :class:`PermissionError`): the store refused the credentials or the access.
- :class:`StoreUnavailableError` (a :class:`ConnectionError`): the store could not be reached, or kept failing,
  within the retry budget. Nothing was written by the failed call unless a more specific error says otherwise.
- :class:`CorruptLogError` (a :class:`ValueError`): a log file (offsets, commits, a sink or source manifest, the
  checkpoint ``metadata``) that cannot be read: empty, truncated, malformed version line or JSON, a field of the wrong
  type, or a batch the log needs that is missing. Reading never changes the log.
- :class:`UnsupportedLogVersionError` (a :class:`CorruptLogError`): a log file written in a version newer than the
  reader supports (for example by a newer Spark).
- :class:`InvalidConfigError` (a :class:`ValueError`): a settings file a tool was given (``checkpointfs doctor
  --spark-conf``) is malformed; the message names the file, the line and the problem.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .protocol import Answer, AnswerClass

__all__ = [
    "AbortFailedError",
    "AccessDeniedError",
    "BucketNotFoundError",
    "CheckpointFsError",
    "CorruptLogError",
    "FileAlreadyExistsError",
    "InvalidPathError",
    "PathNotFoundError",
    "StoreError",
    "StoreUnavailableError",
    "UnsafeStoreError",
    "UnsupportedLogVersionError",
    "WriteOutcomeUnknownError",
    "error_type",
    "said_of",
]


E = TypeVar("E", bound="CheckpointFsError")


class CheckpointFsError(Exception):
    """Base of every checkpointfs error: carries the ``path`` and a ``cause`` in words."""

    answer: Answer | None = None
    """For an error that is a store's answer: the answer itself (HTTP status, the store's error code, or the
    transport failure), as the store layer read it (checkpointfs.store.errors)."""
    answer_class: AnswerClass | None = None
    """For an error that is a store's answer: its class in :mod:`checkpointfs.protocol`'s table (whether it is
    retried, whether the request may have been applied). None otherwise."""
    maybe_applied: bool = False
    """For an error that is a store's answer: whether any attempt of the failed request may have been applied."""

    def __init__(self, path: str, cause: str) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"{path}: {cause}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.cause))


class FileAlreadyExistsError(CheckpointFsError, FileExistsError):
    """A create with ``overwrite_if_possible=False`` found the path taken; the existing file is unchanged."""


class PathNotFoundError(CheckpointFsError, FileNotFoundError):
    """The path does not exist."""


class AbortFailedError(CheckpointFsError):
    """A cancel could not be completed: partial data may be visible at the path. Treat as fatal."""


class WriteOutcomeUnknownError(CheckpointFsError):
    """A write whose outcome could not be decided: it may or may not be visible. Never success, never conflict."""


class InvalidPathError(CheckpointFsError, ValueError):
    """A malformed URI, or a scheme no manager supports."""


class StoreError(CheckpointFsError):
    """The store answered with an error that has no more precise kind here. ``code`` is the store's error code
    (S3's ``Error/Code``, such as ``"NoSuchUpload"``; ``""`` when there was no answer) and ``status`` the HTTP status
    (0 when there was no answer), so callers branch on them, never on the message."""

    def __init__(self, path: str, cause: str, *, code: str = "", status: int = 0) -> None:
        super().__init__(path, cause)
        self.code = code
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_store_error, (type(self), self.path, self.cause, self.code, self.status))


def said_of(error: E, path: str, cause: str) -> E:
    """``error`` again (its type, code, status and answer class), said of ``path`` with ``cause``."""
    again = (type(error)(path, cause, code=error.code, status=error.status) if isinstance(error, StoreError)
             else type(error)(path, cause))
    again.answer = error.answer
    again.answer_class = error.answer_class
    again.maybe_applied = error.maybe_applied
    return again


def _rebuild_store_error(kind: type[StoreError], path: str, cause: str, code: str, status: int) -> StoreError:
    return kind(path, cause, code=code, status=status)


class BucketNotFoundError(StoreError):
    """The bucket named in the path does not exist."""


class AccessDeniedError(StoreError, PermissionError):
    """The store refused the request: wrong credentials or no permission."""


class StoreUnavailableError(StoreError, ConnectionError):
    """The store could not be reached, or kept throttling or failing, within the retry budget."""


class UnsafeStoreError(CheckpointFsError):
    """The store accepted a second put-if-absent of the same key (it ignores conditional writes), so checkpointfs
    refuses to write there: two writers of one checkpoint would both succeed. Nothing was written."""


class CorruptLogError(CheckpointFsError, ValueError):
    """A log file cannot be read: empty, truncated, malformed, or a batch the log needs is missing."""


class UnsupportedLogVersionError(CorruptLogError):
    """A log file was written in a version newer than this reader supports."""


class InvalidConfigError(CheckpointFsError, ValueError):
    """A settings file (a ``spark-defaults.conf``) cannot be used: ``path`` is the file, ``cause`` names the line and
    the problem (never a secret value)."""


def error_type(name: str) -> type[CheckpointFsError]:
    """The error type of this module called ``name`` (the answer classes of ``checkpointfs/protocol/protocol.json``
    name theirs); ValueError for any other name."""
    found = globals().get(name)
    if not (isinstance(found, type) and issubclass(found, CheckpointFsError)):
        raise ValueError(f"{name!r} is not a checkpointfs.errors type")
    return found
