"""An external sort for lists of JSON values (``[path, ...]``): items are kept in memory up to ``run_size``, then
each full run is sorted and spilled to a temp file; iteration merges the runs. Memory stays at one run plus one
buffered line per run, whatever the number of items."""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

DEFAULT_RUN_SIZE = 100_000
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class ExternalSorter:
    """Collects items (JSON lists compared element by element, as Python compares lists) and yields them sorted.
    Use as a context manager, or call :meth:`close` to remove the temp files."""

    def __init__(self, run_size: int = DEFAULT_RUN_SIZE, directory: str | None = None) -> None:
        if run_size < 1:
            raise ValueError(f"run_size must be positive, got {run_size}")
        self.run_size = run_size
        self.directory = directory
        self.count = 0
        self._buffer: list[list[Any]] = []
        self._runs: list[str] = []

    def add(self, item: list[Any]) -> None:
        """Add one item."""
        self._buffer.append(item)
        self.count += 1
        if len(self._buffer) >= self.run_size:
            self._spill()

    @property
    def runs(self) -> int:
        """How many runs were spilled to disk so far."""
        return len(self._runs)

    def _spill(self) -> None:
        self._buffer.sort()
        fd, name = tempfile.mkstemp(prefix="checkpointfs-sort-", suffix=".jsonl", dir=self.directory)
        with os.fdopen(fd, "w", encoding="utf-8", buffering=1 << 16) as out:
            for item in self._buffer:
                out.write(_encoder.encode(item))
                out.write("\n")
        self._runs.append(name)
        self._buffer = []

    def __iter__(self) -> Iterator[list[Any]]:
        """Every item, sorted. Iterate once."""
        if not self._runs:
            self._buffer.sort()
            yield from self._buffer
            return
        if self._buffer:
            self._spill()
        files: list[IO[str]] = [open(name, encoding="utf-8", buffering=1 << 16) for name in self._runs]
        try:
            yield from heapq.merge(*(_read(f) for f in files))
        finally:
            for f in files:
                f.close()

    def close(self) -> None:
        """Remove the temp files."""
        for name in self._runs:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
        self._runs = []
        self._buffer = []

    def __enter__(self) -> ExternalSorter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read(f: IO[str]) -> Iterator[list[Any]]:
    loads = json.loads
    for line in f:
        yield loads(line)
