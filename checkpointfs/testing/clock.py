"""The embedded S3's clock: real time plus an offset that tests move, instead of sleeping through lags and windows."""

from __future__ import annotations

import threading
import time


class AdjustableClock:
    """Real time shifted by an offset that :meth:`advance` moves (forward, or back to model a store whose clock
    is behind). :meth:`monotonic` and :meth:`wall` move together."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offset_s = 0.0

    def monotonic(self) -> float:
        """``time.monotonic()`` plus the offset."""
        return time.monotonic() + self._offset_s

    def wall(self) -> float:
        """``time.time()`` (seconds since the epoch) plus the offset."""
        return time.time() + self._offset_s

    def advance(self, seconds: float) -> None:
        """Move the clock by ``seconds`` (negative: back)."""
        with self._lock:
            self._offset_s += seconds

    def reset(self) -> None:
        """Back to real time."""
        with self._lock:
            self._offset_s = 0.0
