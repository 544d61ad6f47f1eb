"""RenameBasedManager: temp file + atomic rename, for file systems whose rename is atomic (local, HDFS).

A create writes ``.<name>.<uuid>.tmp`` in the target directory; close renames it onto the target, cancel deletes
it. ``overwrite_if_possible=False`` never replaces an existing file, even under a race: the publish step is an
atomic no-replace primitive of the file system, never a check followed by a rename.

Which fsspec file systems qualify (see :data:`NO_REPLACE_PROTOCOLS`):

- ``file`` (LocalFileSystem): ``link(tmp, target)`` then ``unlink(tmp)``; ``link`` fails atomically with EEXIST.
  Where hard links are not supported, Linux ``renameat2(RENAME_NOREPLACE)``. Data and directory are fsynced.
- ``memory`` (MemoryFileSystem): one process-wide lock around check-and-move (the store lives in this process).
- ``webhdfs``: WebHDFS ``RENAME`` (HDFS ``rename``) refuses an existing target and answers ``{"boolean": false}``,
  which is the no-replace primitive; fsspec's ``mv`` ignores that answer, so this manager sends the request itself.
  An overwrite is ``RENAME`` with ``renameoptions=OVERWRITE`` (HDFS ``rename2``): atomic replace, no delete first.
  Tested on Hadoop's MiniDFSCluster (tests marked ``hdfs``).
- ``hdfs``/``viewfs`` (pyarrow): HDFS ``rename`` refuses an existing target. Not exercised by this repository's
  tests (pyarrow's libhdfs needs a Hadoop installation).

Any other file system (s3fs, gcsfs, ...) has no atomic rename and is refused; use DirectWriteManager on S3.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import ctypes.util
import errno
import io
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from . import events, paths
from .contract import CancellableOutputStream, CheckpointFileManager, FileStatus, PathFilter
from .errors import (
    AccessDeniedError,
    CheckpointFsError,
    FileAlreadyExistsError,
    InvalidPathError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from .metrics import CheckpointMetrics, MeasuredReader, OperationCall, RequestMetrics

log = logging.getLogger(__name__)

LOCAL_PROTOCOLS = frozenset({"", "file", "local"})
HDFS_PROTOCOLS = frozenset({"hdfs", "viewfs", "webhdfs"})
NO_REPLACE_PROTOCOLS = LOCAL_PROTOCOLS | {"memory"} | HDFS_PROTOCOLS
"""URI schemes whose fsspec file system has an atomic rename this manager can rely on."""

_MEMORY_LOCK = threading.Lock()
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def temp_name(name: str, write_id: str | None = None) -> str:
    """The temp file name used for target ``name`` by the write ``write_id`` (None: a new one): hidden, unique, in the
    same directory."""
    return f".{name}.{write_id or uuid.uuid4()}.tmp"


def translate(error: BaseException, path: str, operation: str) -> CheckpointFsError:
    """The contract's error kind for a failure of a remote file system (WebHDFS through fsspec and ``requests``):
    refused access, an unreachable or dropped server, a missing file, anything else. The message names the
    operation and the error's type; fsspec's messages carry the server's reason, never credentials."""
    if isinstance(error, CheckpointFsError):
        return error
    detail = f"{operation}: {type(error).__name__}: {error}"
    if isinstance(error, PermissionError):
        return AccessDeniedError(path, f"{detail} (the file system refused this user the access)")
    if isinstance(error, FileNotFoundError):
        return PathNotFoundError(path, detail)
    if _is_transport_error(error):
        return StoreUnavailableError(path, f"{operation}: cannot reach the file system: {type(error).__name__}")
    return StoreError(path, detail)


def _is_transport_error(error: BaseException) -> bool:
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    try:
        import requests
    except ImportError:  # pragma: no cover - fsspec's HTTP file systems need requests
        return False
    return isinstance(error, requests.ConnectionError | requests.Timeout)


class RenameBasedManager(CheckpointFileManager):
    """Temp file + atomic rename over an fsspec file system. See the module doc for the qualifying systems."""

    def __init__(self, protocol: str = "file", **storage_options: Any) -> None:
        protocol = protocol.lower()
        if protocol not in NO_REPLACE_PROTOCOLS:
            raise InvalidPathError(
                f"{protocol}://", "this file system has no atomic no-replace rename; RenameBasedManager supports "
                + ", ".join(sorted(p for p in NO_REPLACE_PROTOCOLS if p)) + " (use DirectWriteManager for s3)"
            )
        self.protocol = "file" if protocol in LOCAL_PROTOCOLS else protocol
        self.fs: fsspec.AbstractFileSystem = fsspec.filesystem(self.protocol, **storage_options)
        self.requests = RequestMetrics()
        """File-system operations performed, by name (``create``, ``rename``, ``open``, ``list``, ``exists``,
        ``delete``, ``mkdirs``)."""
        self.metrics = CheckpointMetrics()
        """This manager's metrics, by the names of ``protocol.json``'s table (checkpointfs.metrics): its requests
        are the file-system operations of :attr:`requests` (``mkdirs``, not an operation of the table, belongs to
        none)."""

    # -- paths --------------------------------------------------------------------------------------------------
    def _fs_path(self, path: str) -> str:
        parsed = paths.parse(path)
        scheme = parsed.scheme or "file"
        if scheme != self.protocol and not (scheme in LOCAL_PROTOCOLS and self.protocol == "file"):
            raise InvalidPathError(path, f"scheme {scheme!r} does not belong to this {self.protocol!r} manager")
        if self.protocol == "file":
            if parsed.scheme and parsed.authority not in ("", "localhost"):
                raise InvalidPathError(path, "a file:// URI must have an empty host (file:///dir/file)")
            return os.path.abspath(parsed.path if parsed.scheme else path)
        return cast(str, self.fs._strip_protocol(path))

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @contextlib.contextmanager
    def _remote_errors(self, path: str, operation: str) -> Iterator[None]:
        """Failures of a remote file system (WebHDFS) come out as the contract's error kinds naming ``path``; local
        file systems raise their own OSErrors, as before."""
        try:
            yield
        except CheckpointFsError:
            raise
        except Exception as e:
            if isinstance(self.fs, LocalFileSystem | MemoryFileSystem):
                raise
            raise translate(e, path, operation) from None

    def qualify(self, path: str) -> str:
        if self.protocol == "file":
            return "file://" + self._fs_path(path)
        return path

    # -- writing ------------------------------------------------------------------------------------------------
    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        operation = "createOverwrite" if overwrite_if_possible else "createIfAbsent"
        with self.metrics.call(operation, until_closed=True) as call:
            target = self._fs_path(path)
            directory, name = target.rsplit("/", 1)
            if not name:
                raise InvalidPathError(path, "a file path must not end with '/'")
            events.announce_root(log, path, f"files written through a temp file and an atomic rename "
                                            f"(RenameBasedManager, {self.protocol})")
            write_id = str(uuid.uuid4())
            temp = f"{directory}/{temp_name(name, write_id)}"
            with self._remote_errors(path, "create"):
                self.fs.makedirs(directory or "/", exist_ok=True)
                self.requests.record("create")
                return _RenameStream(self, path, target, temp, overwrite_if_possible, call, write_id)

    def _publish(self, path: str, temp: str, target: str, overwrite: bool) -> None:
        """Move ``temp`` onto ``target``; with ``overwrite`` False, atomically refuse an existing target."""
        self.requests.record("rename")
        if isinstance(self.fs, LocalFileSystem):
            _publish_local(path, temp, target, overwrite)
        elif isinstance(self.fs, MemoryFileSystem):
            with _MEMORY_LOCK:
                if not overwrite and self.fs.exists(target):
                    raise FileAlreadyExistsError(path, "file already exists and overwrite was not allowed")
                self.fs.mv(temp, target)
        elif self.protocol == "webhdfs":
            _publish_webhdfs(self.fs, path, temp, target, overwrite)
        else:  # HDFS-like: rename never replaces.
            try:
                self.fs.mv(temp, target)
            except OSError:  # FileExistsError among them
                if not self.fs.exists(target):
                    raise
                if not overwrite:
                    raise FileAlreadyExistsError(path, "file already exists and overwrite was not allowed") from None
                self.fs.rm(target)
                self.fs.mv(temp, target)

    def _remove_temp(self, temp: str) -> None:
        self.requests.record("delete")
        try:
            self.fs.rm(temp)
        except FileNotFoundError:
            pass

    # -- reading and housekeeping -------------------------------------------------------------------------------
    def open(self, path: str) -> BinaryIO:
        with self.metrics.call("open", until_closed=True) as call:
            self.requests.record("open")
            fs_path = self._fs_path(path)
            with self._remote_errors(path, "open"):
                try:
                    file = self.fs.open(fs_path, "rb")
                except FileNotFoundError:
                    raise PathNotFoundError(path, "no such file") from None
                except IsADirectoryError:
                    raise PathNotFoundError(path, "is a directory, not a file") from None
            return cast(BinaryIO, io.BufferedReader(MeasuredReader(file, call)))

    def list(self, path: str, filter: PathFilter | None = None) -> list[FileStatus]:
        with self.metrics.call("list"):
            return self._list(path, filter)

    def _list(self, path: str, filter: PathFilter | None) -> builtins.list[FileStatus]:
        self.requests.record("list")
        fs_dir = self._fs_path(path)
        with self._remote_errors(path, "list"):
            try:
                if not self.fs.isdir(fs_dir):
                    return []
                entries = self.fs.ls(fs_dir, detail=True)
            except FileNotFoundError:
                return []
        result = []
        for entry in entries:
            child = paths.join(path, paths.basename(entry["name"]))
            if filter is not None and not filter(child):
                continue
            result.append(
                FileStatus(child, int(entry.get("size") or 0), entry.get("type") == "directory", _mtime_ms(entry))
            )
        return sorted(result, key=lambda status: status.path)

    def mkdirs(self, path: str) -> None:
        self.requests.record("mkdirs")
        fs_path = self._fs_path(path)
        with self._remote_errors(path, "mkdirs"):
            self.fs.makedirs(fs_path, exist_ok=True)

    def exists(self, path: str) -> bool:
        with self.metrics.call("exists"):
            return self._exists(path)

    def _exists(self, path: str) -> bool:
        self.requests.record("exists")
        fs_path = self._fs_path(path)
        with self._remote_errors(path, "exists"):
            return bool(self.fs.exists(fs_path))

    def delete(self, path: str) -> None:
        with self.metrics.call("delete"):
            self._delete(path)

    def _delete(self, path: str) -> None:
        self.requests.record("delete")
        fs_path = self._fs_path(path)
        with self._remote_errors(path, "delete"):
            try:
                self.fs.rm(fs_path, recursive=True)
            except FileNotFoundError:
                pass


class _RenameStream(CancellableOutputStream):
    """Writes the temp file; close publishes it by rename, cancel deletes it."""

    def __init__(self, manager: RenameBasedManager, path: str, target: str, temp: str, overwrite: bool,
                 call: OperationCall | None = None, write_id: str = "") -> None:
        super().__init__(path, call)
        self.write_id = write_id
        self._manager = manager
        self._target = target
        self._temp = temp
        self._overwrite = overwrite
        self._file: Any = manager.fs.open(temp, "xb") if manager.is_local else manager.fs.open(temp, "wb")

    def _write(self, data: memoryview) -> None:
        with self._manager._remote_errors(self.path, "write"):
            self._file.write(data)

    def _publish(self) -> None:
        try:
            with self._manager._remote_errors(self.path, "close"):
                self._file.flush()
                if self._manager.is_local:
                    os.fsync(self._file.fileno())
                self._file.close()
                self._manager._publish(self.path, self._temp, self._target, self._overwrite)
        except BaseException:
            self._drop_temp()
            raise

    def _discard(self) -> None:
        self._drop_temp()

    def _drop_temp(self) -> None:
        try:
            self._file.close()
        except Exception:
            log.debug("%s: closing temp file %s failed", self.path, self._temp, exc_info=True)
        if self._manager.is_local:
            self._manager._remove_temp(self._temp)
            return
        try:
            self._manager._remove_temp(self._temp)
        except Exception as e:  # noqa: BLE001 - the write failed already; a hidden temp file is left, not data
            log.warning("%s: could not delete the temp file %s: %s", self.path, self._temp, type(e).__name__)


def _publish_webhdfs(fs: Any, path: str, temp: str, target: str, overwrite: bool) -> None:
    """WebHDFS publish: ``RENAME`` answers ``{"boolean": false}`` (not an error) when it refused, for example because
    ``target`` exists; with ``renameoptions=OVERWRITE`` it replaces atomically (HDFS ``rename2``)."""
    try:
        if overwrite:
            fs._call("RENAME", method="put", path=temp, destination=target, renameoptions="OVERWRITE")
            return
        answer = fs._call("RENAME", method="put", path=temp, destination=target)
    except PermissionError as e:
        raise AccessDeniedError(path, f"WebHDFS refused the rename of the temp file: {e}") from None
    except (RuntimeError, ValueError, OSError) as e:
        raise StoreError(path, f"WebHDFS rename of the temp file failed: {type(e).__name__}: {e}") from None
    if answer.json().get("boolean") is True:
        return
    if fs.exists(target):
        raise FileAlreadyExistsError(path, "file already exists and overwrite was not allowed")
    raise StoreError(path, f"WebHDFS refused to rename the temp file {temp} onto the target")


def _publish_local(path: str, temp: str, target: str, overwrite: bool) -> None:
    if overwrite:
        os.replace(temp, target)
    else:
        try:
            os.link(temp, target)
        except FileExistsError:
            raise FileAlreadyExistsError(path, "file already exists and overwrite was not allowed") from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise StoreError(path, f"cannot publish temp file: {e.strerror}") from e
            _rename_noreplace(path, temp, target)  # no hard links here: rename with RENAME_NOREPLACE instead
        else:
            os.unlink(temp)
    _fsync_dir(os.path.dirname(target))


def _rename_noreplace(path: str, temp: str, target: str) -> None:
    libc_name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(libc_name, use_errno=True) if libc_name else None
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise StoreError(path, "this file system supports neither hard links nor renameat2(RENAME_NOREPLACE)")
    if renameat2(_AT_FDCWD, os.fsencode(temp), _AT_FDCWD, os.fsencode(target), _RENAME_NOREPLACE) != 0:
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileAlreadyExistsError(path, "file already exists and overwrite was not allowed")
        raise StoreError(path, f"renameat2 failed: {os.strerror(err)}")


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mtime_ms(entry: dict[str, Any]) -> int:
    if "modificationTime" in entry:  # WebHDFS FileStatus: milliseconds
        return int(entry["modificationTime"])
    value = entry.get("mtime") or entry.get("created") or 0
    if hasattr(value, "timestamp"):
        value = value.timestamp()
    return int(float(value) * 1000)
