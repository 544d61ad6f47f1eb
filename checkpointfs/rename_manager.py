"""RenameBasedManager: temp file + atomic rename, for file systems whose rename is atomic (local, HDFS).

A create writes ``.<name>.<uuid>.tmp`` in the target directory; close renames it onto the target, cancel deletes
it. ``overwrite_if_possible=False`` never replaces an existing file, even under a race: the publish step is an
atomic no-replace primitive of the file system, never a check followed by a rename.

Which fsspec file systems qualify (see :data:`NO_REPLACE_PROTOCOLS`):

- ``file`` (LocalFileSystem): ``link(tmp, target)`` then ``unlink(tmp)``; ``link`` fails atomically with EEXIST.
  Where hard links are not supported, Linux ``renameat2(RENAME_NOREPLACE)``. Data and directory are fsynced.
- ``memory`` (MemoryFileSystem): one process-wide lock around check-and-move (the store lives in this process).
- ``hdfs``/``viewfs`` (pyarrow) and ``webhdfs``: HDFS ``rename`` refuses an existing target, which is the
  no-replace primitive. Not exercised by this repository's tests (no HDFS here).

Any other file system (s3fs, gcsfs, ...) has no atomic rename and is refused; use DirectWriteManager on S3.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import threading
import uuid
from typing import Any, BinaryIO, cast

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from . import paths
from .contract import CancellableOutputStream, CheckpointFileManager, FileStatus, PathFilter
from .errors import FileAlreadyExistsError, InvalidPathError, PathNotFoundError, StoreError
from .metrics import RequestMetrics

log = logging.getLogger(__name__)

LOCAL_PROTOCOLS = frozenset({"", "file", "local"})
HDFS_PROTOCOLS = frozenset({"hdfs", "viewfs", "webhdfs"})
NO_REPLACE_PROTOCOLS = LOCAL_PROTOCOLS | {"memory"} | HDFS_PROTOCOLS
"""URI schemes whose fsspec file system has an atomic rename this manager can rely on."""

_MEMORY_LOCK = threading.Lock()
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def temp_name(name: str) -> str:
    """The temp file name used for target ``name``: hidden, unique, in the same directory."""
    return f".{name}.{uuid.uuid4()}.tmp"


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
        self.metrics = RequestMetrics()

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

    def qualify(self, path: str) -> str:
        if self.protocol == "file":
            return "file://" + self._fs_path(path)
        return path

    # -- writing ------------------------------------------------------------------------------------------------
    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        target = self._fs_path(path)
        directory, name = target.rsplit("/", 1)
        if not name:
            raise InvalidPathError(path, "a file path must not end with '/'")
        temp = f"{directory}/{temp_name(name)}"
        self.fs.makedirs(directory or "/", exist_ok=True)
        self.metrics.record("create")
        return _RenameStream(self, path, target, temp, overwrite_if_possible)

    def _publish(self, path: str, temp: str, target: str, overwrite: bool) -> None:
        """Move ``temp`` onto ``target``; with ``overwrite`` False, atomically refuse an existing target."""
        self.metrics.record("rename")
        if isinstance(self.fs, LocalFileSystem):
            _publish_local(path, temp, target, overwrite)
        elif isinstance(self.fs, MemoryFileSystem):
            with _MEMORY_LOCK:
                if not overwrite and self.fs.exists(target):
                    raise FileAlreadyExistsError(path, "file already exists and overwrite was not allowed")
                self.fs.mv(temp, target)
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
        self.metrics.record("delete")
        try:
            self.fs.rm(temp)
        except FileNotFoundError:
            pass

    # -- reading and housekeeping -------------------------------------------------------------------------------
    def open(self, path: str) -> BinaryIO:
        self.metrics.record("open")
        try:
            return cast(BinaryIO, self.fs.open(self._fs_path(path), "rb"))
        except FileNotFoundError:
            raise PathNotFoundError(path, "no such file") from None
        except IsADirectoryError:
            raise PathNotFoundError(path, "is a directory, not a file") from None

    def list(self, path: str, filter: PathFilter | None = None) -> list[FileStatus]:
        self.metrics.record("list")
        fs_dir = self._fs_path(path)
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
        self.metrics.record("mkdirs")
        self.fs.makedirs(self._fs_path(path), exist_ok=True)

    def exists(self, path: str) -> bool:
        self.metrics.record("exists")
        return bool(self.fs.exists(self._fs_path(path)))

    def delete(self, path: str) -> None:
        self.metrics.record("delete")
        try:
            self.fs.rm(self._fs_path(path), recursive=True)
        except FileNotFoundError:
            pass


class _RenameStream(CancellableOutputStream):
    """Writes the temp file; close publishes it by rename, cancel deletes it."""

    def __init__(self, manager: RenameBasedManager, path: str, target: str, temp: str, overwrite: bool) -> None:
        super().__init__(path)
        self._manager = manager
        self._target = target
        self._temp = temp
        self._overwrite = overwrite
        self._file: Any = manager.fs.open(temp, "xb") if manager.is_local else manager.fs.open(temp, "wb")

    def _write(self, data: memoryview) -> None:
        self._file.write(data)

    def _publish(self) -> None:
        try:
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
        self._manager._remove_temp(self._temp)


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
    value = entry.get("mtime") or entry.get("created") or 0
    if hasattr(value, "timestamp"):
        value = value.timestamp()
    return int(float(value) * 1000)
