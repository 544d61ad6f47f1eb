"""Input of the query shapes (harness.shapes; the tests and benchmarks/bench_shapes.py) and what each shape must
produce from it, computed here in plain Python from Spark's documented semantics: the tests compare Spark's output
after kills and restarts with this.

Each input file is one micro-batch. File ``b`` of ``main/`` holds ids ``5b..5b+4`` with event times
``BASE + 20b + (id % 5)`` s, plus the last id of file ``b-1`` again (a duplicate, with a new time); file ``b`` of
``right/`` holds the even ids of ``main/``'s file ``b`` one second later (the join matches). Times only grow from file
to file by more than the watermark delay, so no event is late. Two flush files follow (ids from ``FLUSH_ID``, times far
ahead): after the first, the watermark passes every earlier event; in the second's batch windows close, unmatched
rows of the outer join come out and timers fire. Results for the flush ids are left out of every comparison.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.shapes import FLUSH_ID, JOIN_RANGE_S

BASE = 1_700_000_000
"""Event time of file 0, in seconds (a multiple of the 10-second window)."""
FLUSH_TS = BASE + 100_000


@dataclass(frozen=True)
class Event:
    """One input record."""

    id: int
    key: str
    ts: int


def _event(i: int, ts: int) -> Event:
    return Event(i, f"k{i % 3}", ts)


def main_file(b: int) -> list[Event]:
    """Events of ``main/`` file ``b`` (a regular file)."""
    events = [_event(i, BASE + 20 * b + i % 5) for i in range(5 * b, 5 * b + 5)]
    if b:
        events.append(_event(5 * b - 1, BASE + 20 * b))
    return events


def right_file(b: int) -> list[Event]:
    """Events of ``right/`` file ``b``: the even ids of main's file ``b`` (first occurrences), a second later."""
    return [Event(e.id, f"r{e.id}", e.ts + 1) for e in main_file(b)[:5] if e.id % 2 == 0]


def flush_file(n: int) -> list[Event]:
    """Flush file ``n`` (0 or 1): far-future events on both sides."""
    return [_event(FLUSH_ID + 10 * n + i, FLUSH_TS + n) for i in range(2)]


@dataclass(frozen=True)
class ShapeInput:
    """The regular files' events of both sides (flush files excluded)."""

    main: list[Event]
    right: list[Event]

    @property
    def distinct_ids(self) -> list[int]:
        return sorted({e.id for e in self.main})


def write_inputs(folder: Path, files: int) -> ShapeInput:
    """``files`` regular files and the two flush files on each side, with distinct modification times (the file
    source takes files in modification-time order); returns the regular events."""
    main: list[Event] = []
    right: list[Event] = []
    for side in ("main", "right"):
        (folder / side).mkdir(parents=True, exist_ok=True)
    for b in range(files + 2):
        if b < files:
            sides = {"main": main_file(b), "right": right_file(b)}
            main += sides["main"]
            right += sides["right"]
        else:
            sides = {"main": flush_file(b - files), "right": flush_file(b - files)}
        for side, events in sides.items():
            path = folder / side / f"part-{b:04d}.json"
            path.write_text("".join(json.dumps({"id": e.id, "key": e.key, "ts": e.ts}) + "\n" for e in events))
            stamp = 1_700_000_000 + b
            os.utime(path, (stamp, stamp))
    return ShapeInput(main, right)


def join_rows(data: ShapeInput, outer: bool) -> Counter[tuple[int, int, str | None]]:
    """``(id, left ts, right key)`` of the join: one row per matching pair (right time within +-5 s of the left's),
    and for the left outer join one row with no right key per left event without a match."""
    rows: Counter[tuple[int, int, str | None]] = Counter()
    for left in data.main:
        matches = [r for r in data.right if r.id == left.id and abs(r.ts - left.ts) <= JOIN_RANGE_S]
        for r in matches:
            rows[(left.id, left.ts, r.key)] += 1
        if outer and not matches:
            rows[(left.id, left.ts, None)] += 1
    return rows


def window_counts(data: ShapeInput) -> Counter[tuple[int, str, int]]:
    """``(window start, key, count)`` of the 10-second tumbling windows, once each."""
    counts = Counter((e.ts - e.ts % 10, e.key) for e in data.main)
    return Counter((start, key, n) for (start, key), n in counts.items())


def regular(rows: list[list[object]], id_column: int = 0) -> list[list[object]]:
    """The rows whose id (column ``id_column``) is not a flush id."""
    return [r for r in rows if int(str(r[id_column])) < FLUSH_ID]
