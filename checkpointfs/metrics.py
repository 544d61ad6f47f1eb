"""Request counting: every manager counts the requests it sends to its store, by operation."""

from __future__ import annotations

import threading
from collections import Counter


class RequestMetrics:
    """A thread-safe count of requests by operation name (S3 API names such as ``PutObject`` for S3,
    file-system operations such as ``rename`` for file systems). Every attempt is one request, retries included."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def record(self, operation: str) -> None:
        """Count one request of ``operation``."""
        with self._lock:
            self._counts[operation] += 1

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
