"""What a manager counts.

- :class:`CheckpointMetrics` (``manager.metrics``): the metrics of ``protocol.json``'s table
  (:mod:`checkpointfs.protocol.metrics`), by the names the JVM shim gives them in Spark's metrics system: per
  operation of the contract (``createIfAbsent.requests``, ``open.bytesRead``, ``list.latency``, ...) and across
  operations (``conflicts``, ``retries``, ``storeChecks``, ...).
- :class:`RequestMetrics` (``manager.requests``): every request sent to the store, by the store's own operation
  names (``PutObject``, ``HeadObject`` on S3; ``rename``, ``list`` on a file system), retries included.

A manager measures each call as an :class:`OperationCall`: it is *in progress* in the caller's context (a
:class:`contextvars.ContextVar`) while the call runs, and, for a stream, while each of its ``write``, ``close``
and ``cancel`` runs (the parts a stream uploads from its thread pool run in a copy of that context). Every request
recorded in a :class:`RequestMetrics` while a call is in progress is one of that call's requests, and
:func:`record` counts a counter of the table for it; so the store layer counts retries, throttling and store
checks without knowing which manager or operation it works for.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from .protocol.metrics import COUNTERS, METRICS, OPERATIONS

__all__ = ["TIMER_FIELDS", "CheckpointMetrics", "MeasuredReader", "OperationCall", "RequestMetrics", "TimerValue",
           "in_progress", "record", "snapshot_names"]

TIMER_FIELDS: tuple[str, ...] = ("min", "max", "mean")
"""The sub-names under which :meth:`CheckpointMetrics.snapshot` shows a timer ``<op>.latency``, besides the timer's
own name, which is its count: ``<op>.latency.min``, ``.max`` and ``.mean``, in milliseconds. These are the fields of
a Dropwizard Timer in Spark's JSON metrics servlet (which shows durations in milliseconds) that can be kept exactly
and cheaply: over every call since the start or :meth:`~CheckpointMetrics.reset` (a Dropwizard Timer computes them
over a decaying sample). Percentiles and rates are left to the JVM's metrics system."""

_TIMERS: tuple[str, ...] = tuple(name for name, metric in METRICS.items() if metric.kind == "timer")
_COUNTERS: tuple[str, ...] = tuple(name for name, metric in METRICS.items() if metric.kind == "counter")


def snapshot_names() -> tuple[str, ...]:
    """Every name :meth:`CheckpointMetrics.snapshot` gives, in the table's order: the table's names, each timer
    followed by its :data:`TIMER_FIELDS`."""
    names: list[str] = []
    for name, metric in METRICS.items():
        names.append(name)
        if metric.kind == "timer":
            names += [f"{name}.{field}" for field in TIMER_FIELDS]
    return tuple(names)


@dataclass(frozen=True)
class TimerValue:
    """A timer's value: how many durations it holds, their sum, the shortest and the longest, in seconds (0 when
    it holds none)."""

    count: int = 0
    total_s: float = 0.0
    min_s: float = 0.0
    max_s: float = 0.0

    @property
    def mean_s(self) -> float:
        """The mean duration in seconds (0 when the timer holds none)."""
        return self.total_s / self.count if self.count else 0.0

    def add(self, seconds: float) -> TimerValue:
        """This value with one more duration."""
        if not self.count:
            return TimerValue(1, seconds, seconds, seconds)
        return TimerValue(self.count + 1, self.total_s + seconds, min(self.min_s, seconds), max(self.max_s, seconds))


class CheckpointMetrics:
    """The metrics of ``protocol.json``'s table for one manager, thread-safe. Every name of the table is there
    from the start, at 0. Read them with :meth:`snapshot` (all at once) or ``metrics[name]`` (one value, a
    :meth:`snapshot` name); a timer whole with :meth:`timer`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(_COUNTERS, 0)
        self._timers: dict[str, TimerValue] = dict.fromkeys(_TIMERS, TimerValue())

    # -- recording ---------------------------------------------------------------------------------------------
    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name`` (a name of the table; KeyError for another)."""
        with self._lock:
            if name not in self._counts:
                raise KeyError(_unknown(name))
            self._counts[name] += n

    def time(self, name: str, seconds: float) -> None:
        """Add one duration of ``seconds`` to the timer ``name`` (a name of the table; KeyError for another)."""
        with self._lock:
            if name not in self._timers:
                raise KeyError(_unknown(name))
            self._timers[name] = self._timers[name].add(seconds)

    def start(self, operation: str) -> OperationCall:
        """A call of ``operation`` (one of the table's, such as ``createIfAbsent``) starting now (counted in
        ``<operation>.calls``); its caller finishes it."""
        return OperationCall(self, operation)

    @contextlib.contextmanager
    def call(self, operation: str, *, until_closed: bool = False) -> Iterator[OperationCall]:
        """Measure a call of ``operation`` around the ``with`` block, which runs with the call in progress. An
        exception ends the call as failed. With ``until_closed`` (a call that returns a stream), a block that
        returns leaves the call to be finished by that stream."""
        call = self.start(operation)
        try:
            with call.active():
                yield call
        except BaseException as e:
            call.finish(e)
            raise
        if not until_closed:
            call.finish()

    # -- reading -----------------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, float]:
        """Every metric as ``{name: value}``, in :func:`snapshot_names` order: counters as ints, a timer as its
        count under its own name and its :data:`TIMER_FIELDS` in milliseconds under ``<name>.<field>``."""
        with self._lock:
            counts = dict(self._counts)
            timers = dict(self._timers)
        result: dict[str, float] = {}
        for name, metric in METRICS.items():
            if metric.kind == "counter":
                result[name] = counts[name]
                continue
            timer = timers[name]
            result[name] = timer.count
            result[f"{name}.min"] = timer.min_s * 1000
            result[f"{name}.max"] = timer.max_s * 1000
            result[f"{name}.mean"] = timer.mean_s * 1000
        return result

    def __getitem__(self, name: str) -> float:
        """One value, by its :meth:`snapshot` name (``metrics["conflicts"]``, ``metrics["open.latency.max"]``)."""
        with self._lock:
            if name in self._counts:
                return self._counts[name]
        snapshot = self.snapshot()
        if name not in snapshot:
            raise KeyError(_unknown(name))
        return snapshot[name]

    def timer(self, name: str) -> TimerValue:
        """The timer ``name`` (``open.latency``) whole, in seconds."""
        with self._lock:
            if name not in self._timers:
                raise KeyError(_unknown(name))
            return self._timers[name]

    def reset(self) -> None:
        """Set every metric back to 0."""
        with self._lock:
            self._counts = dict.fromkeys(_COUNTERS, 0)
            self._timers = dict.fromkeys(_TIMERS, TimerValue())

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.snapshot().items() if v}
        return f"CheckpointMetrics({shown!r})"


def _unknown(name: str) -> str:
    return (f"no metric {name!r} in protocol.json's table: per operation <operation>.<metric> with operations "
            f"{', '.join(OPERATIONS)}; counters {', '.join(COUNTERS)}")


_IN_PROGRESS: ContextVar[OperationCall | None] = ContextVar("checkpointfs_call", default=None)


def in_progress() -> OperationCall | None:
    """The call in progress in this context, if any."""
    return _IN_PROGRESS.get()


def record(name: str, n: int = 1) -> None:
    """Count ``n`` in the counter ``name`` of the table (``retries``, ``throttled``, ...) for the manager whose call
    is in progress in this context; nothing outside a call."""
    call = _IN_PROGRESS.get()
    if call is not None:
        call.metrics.count(name, n)


class OperationCall:
    """One call of a contract operation, measured in ``metrics``: counted in ``<operation>.calls`` when it starts,
    in ``.latency`` (and ``.failures`` when it failed) when it :meth:`finish`-es, the first time only."""

    def __init__(self, metrics: CheckpointMetrics, operation: str) -> None:
        if operation not in OPERATIONS:
            raise KeyError(_unknown(f"{operation}.calls"))
        self.metrics = metrics
        self.operation = operation
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._failed = False
        self._finished = False
        metrics.count(f"{operation}.calls")

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Run the ``with`` block with this call in progress: its requests are this call's."""
        token = _IN_PROGRESS.set(self)
        try:
            yield
        finally:
            _IN_PROGRESS.reset(token)

    def enter(self) -> Token[OperationCall | None]:
        """Put this call in progress (what :meth:`active` does, for hot paths); undo it with :meth:`exit`."""
        return _IN_PROGRESS.set(self)

    @staticmethod
    def exit(token: Token[OperationCall | None]) -> None:
        """Undo the :meth:`enter` that gave ``token``."""
        _IN_PROGRESS.reset(token)

    def count(self, metric: str, n: int = 1) -> None:
        """Add ``n`` to this operation's ``metric`` (``requests``, ``bytesWritten``, ``bytesRead``)."""
        self.metrics.count(f"{self.operation}.{metric}", n)

    def fail(self) -> None:
        """Mark the call failed (an error was raised to its caller), to be counted when it finishes."""
        self._failed = True

    def finish(self, error: BaseException | None = None) -> None:
        """End the call: its latency, and a failure if ``error`` is given or :meth:`fail` was called. Once only."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        if error is not None or self._failed:
            self.count("failures")
        self.metrics.time(f"{self.operation}.latency", time.monotonic() - self._started)


class MeasuredReader(io.RawIOBase):
    """A readable stream over ``inner`` (anything with ``readinto`` or ``read``) for the ``open`` call ``call``:
    reads run with the call in progress and count ``open.bytesRead``; closing it finishes the call."""

    def __init__(self, inner: Any, call: OperationCall) -> None:
        super().__init__()
        self._inner = inner
        self._call = call

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        with self._call.active():
            try:
                readinto = getattr(self._inner, "readinto", None)
                if readinto is not None:
                    n = int(readinto(view) or 0)
                else:
                    data = self._inner.read(len(view))
                    n = len(data)
                    view[:n] = data
            except BaseException:
                self._call.fail()
                raise
        if n:
            self._call.count("bytesRead", n)
        return n

    def seekable(self) -> bool:
        return bool(getattr(self._inner, "seekable", lambda: False)())

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if not self.seekable():
            raise io.UnsupportedOperation("seek")
        return int(self._inner.seek(offset, whence))

    def tell(self) -> int:
        if not self.seekable():
            raise io.UnsupportedOperation("tell")
        return int(self._inner.tell())

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._inner.close()
        finally:
            self._call.finish()
            super().close()


class RequestMetrics:
    """A thread-safe count of requests by operation name (S3 API names such as ``PutObject`` for S3,
    file-system operations such as ``rename`` for file systems). Every attempt is one request, retries included.
    A request recorded while a contract call is in progress (:func:`in_progress`) is also one of that call's
    ``<operation>.requests`` in its manager's :class:`CheckpointMetrics`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def record(self, operation: str) -> None:
        """Count one request of ``operation`` (and one request of the call in progress, if any)."""
        with self._lock:
            self._counts[operation] += 1
        call = _IN_PROGRESS.get()
        if call is not None:
            call.count("requests")

    def snapshot(self) -> dict[str, int]:
        """The counts so far, as a plain dict."""
        with self._lock:
            return dict(self._counts)

    @property
    def total(self) -> int:
        """All requests counted so far."""
        with self._lock:
            return sum(self._counts.values())

    def __getitem__(self, operation: str) -> int:
        with self._lock:
            return self._counts[operation]

    def reset(self) -> None:
        """Forget all counts."""
        with self._lock:
            self._counts.clear()

    def __repr__(self) -> str:
        return f"RequestMetrics({self.snapshot()!r})"
