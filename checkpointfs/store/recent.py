"""Read-your-writes on a lagging store: what this manager wrote or deleted in the last moments, so that its own
reads wait out the store's lag instead of believing it. S3 itself has been strongly consistent since December 2020
(the window defaults to 0: off); S3-compatible stores and caching layers may still lag."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..clock import Monotonic
from ..polling import poll_until

T = TypeVar("T")
_MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class Change:
    """A write (with its write id) or a delete (write id None) of one key, and when it was made."""

    write_id: str | None
    at: float


class RecentChanges:
    """Changes of the last ``window_s`` seconds, per key (bounded in number)."""

    def __init__(self, window_s: float, clock: Monotonic = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.window_s = window_s
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._changes: OrderedDict[tuple[str, str], Change] = OrderedDict()

    def now(self) -> float:
        """The time on this record's clock (the ``at`` of a change made now)."""
        return self._clock()

    @property
    def enabled(self) -> bool:
        """Whether a window is set at all."""
        return self.window_s > 0

    def wrote(self, bucket: str, key: str, write_id: str) -> None:
        """Record a committed write."""
        self._record(bucket, key, Change(write_id, self._clock()))

    def deleted(self, bucket: str, key: str) -> None:
        """Record a delete."""
        self._record(bucket, key, Change(None, self._clock()))

    def _record(self, bucket: str, key: str, change: Change) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._changes.pop((bucket, key), None)
            self._changes[(bucket, key)] = change
            horizon = change.at - self.window_s
            while self._changes and (len(self._changes) > _MAX_ENTRIES
                                     or next(iter(self._changes.values())).at < horizon):
                self._changes.popitem(last=False)

    def get(self, bucket: str, key: str) -> Change | None:
        """The change of ``key`` still within the window, if any."""
        if not self.enabled:
            return None
        with self._lock:
            change = self._changes.get((bucket, key))
        return change if change is not None and self._clock() - change.at < self.window_s else None

    def under(self, bucket: str, prefix: str) -> dict[str, Change]:
        """Changes within the window of keys under ``prefix``, by key."""
        if not self.enabled:
            return {}
        now = self._clock()
        with self._lock:
            return {k: c for (b, k), c in self._changes.items()
                    if b == bucket and k.startswith(prefix) and now - c.at < self.window_s}

    def wait_until(self, changed_at: float, done: Callable[[], T | None]) -> T | None:
        """Call ``done`` until it returns a value or the window after ``changed_at`` has passed; the last result."""
        return poll_until(done, changed_at + self.window_s, clock=self._clock, sleep=self._sleep)
