"""An external sort for lists of JSON values (``[path, ...]``): items are kept in memory up to ``run_size``, then
each full run is sorted and spilled to a temp file; iteration merges the runs, at most ``MAX_FAN_IN`` at a time
(more runs are first merged into longer ones). Memory stays at one run plus a read buffer per merged run, whatever
the number of items."""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

DEFAULT_RUN_SIZE = 100_000
MAX_FAN_IN = 32
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
        self._runs.append(self._write(self._buffer))
        self._buffer = []

    def _write(self, items: Iterable[list[Any]]) -> str:
        fd, name = tempfile.mkstemp(prefix="checkpointfs-sort-", suffix=".jsonl", dir=self.directory)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for item in items:
                out.write(_encoder.encode(item))
                out.write("\n")
        return name

    def _merge_down(self) -> None:
        """Merge runs MAX_FAN_IN at a time until at most MAX_FAN_IN are left."""
        while len(self._runs) > MAX_FAN_IN:
            group, self._runs = self._runs[:MAX_FAN_IN], self._runs[MAX_FAN_IN:]
            self._runs.append(self._write(self._merged(group)))
            for name in group:
                os.unlink(name)

    @staticmethod
    def _merged(names: list[str]) -> Iterator[list[Any]]:
        files: list[IO[str]] = [open(name, encoding="utf-8") for name in names]
        try:
            yield from heapq.merge(*(_read(f) for f in files))
        finally:
            for f in files:
                f.close()

    def __iter__(self) -> Iterator[list[Any]]:
        """Every item, sorted. Iterate once."""
        if not self._runs:
            self._buffer.sort()
            yield from self._buffer
            return
        if self._buffer:
            self._spill()
        self._merge_down()
        yield from self._merged(self._runs)

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
