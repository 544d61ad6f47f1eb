"""Clocks the library takes as arguments, so that tests and tools can move time instead of waiting for it."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]
"""Wall time in milliseconds since the epoch: file modification times, retention, log cleanup."""

Monotonic = Callable[[], float]
"""Monotonic seconds (``time.monotonic`` and stand-ins): timeouts, windows and waits."""


def system_clock() -> int:
    """The current time in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000
