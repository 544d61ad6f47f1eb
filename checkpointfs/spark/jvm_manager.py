"""JvmCheckpointFileManager: the Python contract over a JVM CheckpointFileManager, driven through py4j.

It lets the conformance suite (and users' own checks) run the shim, and Spark's own managers, inside a live
SparkSession: every call goes to the JVM object Spark itself would use, and JVM exceptions come back as the
contract's error kinds.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, TypeVar, cast

from py4j.protocol import Py4JError, Py4JJavaError

from .. import paths
from ..contract import CancellableOutputStream, CheckpointFileManager, FileStatus, PathFilter
from ..errors import CheckpointFsError, InvalidPathError, StoreError
from ..metrics import CheckpointMetrics, RequestMetrics
from .config import ABORTABLE_STREAM_MANAGER, FILE_CONTEXT_MANAGER, FILE_SYSTEM_MANAGER, SHIM_CLASS
from .jvm_errors import STATUS_METHODS, classify_jvm, missing_connector

__all__ = ["ABORTABLE_STREAM_MANAGER", "FILE_CONTEXT_MANAGER", "FILE_SYSTEM_MANAGER", "JvmCheckpointFileManager"]

log = logging.getLogger(__name__)

T = TypeVar("T")

FLUSH_BYTES = 1024 * 1024
"""Writes are handed to the JVM in chunks of at least this size (one py4j call each)."""


class JvmCheckpointFileManager(CheckpointFileManager):
    """A JVM ``CheckpointFileManager`` (the shim by default) for the checkpoint root ``path``, built inside the JVM
    of ``spark`` (a SparkSession whose ``spark.jars`` hold the manager's class, see
    :func:`checkpointfs.spark.configure`) exactly as Spark builds one: ``new Manager(Path, Configuration)``.

    ``hadoop_conf`` adds settings to a copy of the session's Hadoop configuration (for example
    ``checkpointfs.cancel.strategy``). :attr:`metrics` and :attr:`requests` stay empty: the JVM's counts are in
    Spark's metrics system (the shim's plugin, by the names of the same table), and its requests are counted at the
    server (EmbeddedS3.requests), not here.
    """

    def __init__(
        self,
        spark: Any,
        path: str,
        *,
        manager_class: str = SHIM_CLASS,
        hadoop_conf: Mapping[str, str] | None = None,
    ) -> None:
        self.root = path
        self.manager_class = manager_class
        self.metrics = CheckpointMetrics()
        """Empty: the JVM's counts are in Spark's metrics system."""
        self.requests = RequestMetrics()
        """Empty: the JVM's requests are counted at the server."""
        self._jvm: Any = spark.sparkContext._jvm
        self._bridge: Any = self._jvm.io.checkpointfs.spark.PyBridge
        conf = self._jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
        for key, value in (hadoop_conf or {}).items():
            conf.set(key, value)
        self._conf: Any = conf
        self._manager: Any = self._new_manager(path)

    def _new_manager(self, path: str) -> Any:
        return self.call(path, lambda: self._bridge.newManager(self.manager_class, path, self._conf))

    @property
    def jvm_manager(self) -> Any:
        """The py4j proxy of the JVM manager."""
        return self._manager

    def _jpath(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    # -- error mapping ----------------------------------------------------------------------------------------------
    def call(self, path: str, action: Callable[[], T]) -> T:
        """Run ``action`` (py4j calls); a JVM exception comes out as the contract's error kind for ``path``."""
        try:
            return action()
        except Py4JJavaError as e:
            raise self.translate(e, path) from None

    def translate(self, error: Py4JJavaError, path: str) -> CheckpointFsError:
        """The contract's error for a JVM exception: the first of the exception and its causes that has a known
        kind (:func:`classify_jvm`) decides; anything else is a :class:`StoreError`. The message is the JVM's (S3A
        never puts credentials in it)."""
        throwable = error.java_exception
        chain: list[Any] = []
        current = throwable
        while current is not None and len(chain) < 16:
            chain.append(current)
            cause = current.getCause()
            if cause is None or cause.equals(current):
                break
            current = cause
        for item in chain:
            types = tuple(str(self._bridge.exceptionTypes(item)).splitlines())
            missing = missing_connector(types, str(item.getMessage() or ""), self._hadoop())
            if missing is not None:
                return InvalidPathError(path, f"CheckpointStoreConfigException: {missing}")
            kind = classify_jvm(types, _status_of(item, types))
            if kind is not None:
                message = str(item.getMessage() or item.toString())
                return kind(path, f"{item.getClass().getSimpleName()}: {message}")
        top = chain[0]
        return StoreError(path, f"{top.getClass().getName()}: {top.getMessage()}")

    def _hadoop(self) -> str:
        """The version of the Hadoop in the session's JVM (the one hadoop-aws must match)."""
        return str(self._jvm.org.apache.hadoop.util.VersionInfo.getVersion())

    # -- the contract -----------------------------------------------------------------------------------------------
    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        if not paths.basename(path) or path.endswith("/"):
            raise InvalidPathError(path, "a file path must not end with '/'")
        jstream = self.call(path, lambda: self._manager.createAtomic(self._jpath(path), overwrite_if_possible))
        return _JvmOutputStream(self, path, jstream)

    def open(self, path: str) -> BinaryIO:
        data = self.call(path, lambda: self._bridge.readAll(self._manager, path))
        return cast(BinaryIO, io.BytesIO(bytes(data)))

    def list(self, path: str, filter: PathFilter | None = None) -> list[FileStatus]:
        text = str(self.call(path, lambda: self._bridge.list(self._manager, path)))
        result = []
        for line in text.splitlines():
            name, size, is_dir, mtime = line.split("\t")
            child = paths.join(path, name)
            if filter is None or filter(child):
                result.append(FileStatus(child, int(size), is_dir == "1", int(mtime)))
        return sorted(result, key=lambda status: status.path)

    def mkdirs(self, path: str) -> None:
        self.call(path, lambda: self._manager.mkdirs(self._jpath(path)))

    def exists(self, path: str) -> bool:
        return bool(self.call(path, lambda: self._manager.exists(self._jpath(path))))

    def delete(self, path: str) -> None:
        self.call(path, lambda: self._manager.delete(self._jpath(path)))

    @property
    def is_local(self) -> bool:
        return bool(self.call(self.root, lambda: self._manager.isLocal()))

    def create_checkpoint_directory(self, path: str) -> str:
        manager = self._manager if path.rstrip("/") == self.root.rstrip("/") else self._new_manager(path)
        return str(self.call(path, lambda: manager.createCheckpointDirectory().toString()))

    def close(self) -> None:
        """Close the JVM manager where it has ``close()`` (Spark 4.0 on); Spark 3.5's managers have none."""
        methods = self._manager.getClass().getMethods()
        if any(m.getName() == "close" and m.getParameterCount() == 0 for m in methods):
            self.call(self.root, lambda: self._manager.close())

    def __repr__(self) -> str:
        return f"JvmCheckpointFileManager({self.manager_class.rsplit('.', 1)[-1]}, {self.root!r})"


def _status_of(item: Any, types: tuple[str, ...]) -> int:
    """The HTTP status a Java exception carries (one py4j call, only for the classes of STATUS_METHODS); 0: none."""
    for class_name, methods in STATUS_METHODS:
        if class_name in types:
            for method in methods:
                try:
                    return int(getattr(item, method)())
                except (Py4JError, TypeError, ValueError):
                    continue
    return 0


class _JvmOutputStream(CancellableOutputStream):
    """A JVM ``CancellableFSDataOutputStream`` behind the Python stream contract; writes are batched."""

    def __init__(self, owner: JvmCheckpointFileManager, path: str, jstream: Any) -> None:
        super().__init__(path)
        self._owner = owner
        self._jstream = jstream
        self._buffer = bytearray()

    @property
    def write_id(self) -> str:
        """The write id the shim stamps on the object ("" for other managers' streams)."""
        return str(self._owner.call(self.path, lambda: self._owner._bridge.writeId(self._jstream)))

    def _write(self, data: memoryview) -> None:
        self._buffer += data
        if len(self._buffer) >= FLUSH_BYTES:
            self._send()

    def _send(self) -> None:
        if self._buffer:
            chunk, self._buffer = self._buffer, bytearray()
            self._owner.call(self.path, lambda: self._jstream.write(chunk))

    def _publish(self) -> None:
        try:
            self._send()
        except BaseException:
            self._discard()
            raise
        self._owner.call(self.path, lambda: self._jstream.close())

    def _discard(self) -> None:
        self._buffer = bytearray()
        self._owner.call(self.path, lambda: self._jstream.cancel())
