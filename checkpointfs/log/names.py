"""Batch file names and the arithmetic of compaction, as Spark 4.3 has them.

A batch file is named by its batch id in decimal (``7``); a compaction batch of a compactible log adds ``.compact``
(``9.compact``). A name is read the way Java's ``Long.parseLong`` reads it (an optional sign, ASCII digits, within
64 bits); any other name (``.7.crc``, ``.7.<uuid>.tmp``, ``_SUCCESS``) is not a batch file and is ignored.
"""

from __future__ import annotations

import re

COMPACT_SUFFIX = ".compact"
"""The suffix of a compaction batch file."""

_LONG_RE = re.compile(r"[+-]?[0-9]+")
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def parse_long(text: str) -> int | None:
    """``text`` as Java's ``Long.parseLong`` reads it, or None where Java raises NumberFormatException."""
    if not _LONG_RE.fullmatch(text):
        return None
    value = int(text)
    return value if _LONG_MIN <= value <= _LONG_MAX else None


def batch_id_of(name: str, compactible: bool) -> int | None:
    """The batch id a file name stands for, or None when the name is not a batch file. In a compactible log the
    ``.compact`` suffix is stripped first (so ``9.compact`` and ``9`` both stand for batch 9)."""
    if compactible and name.endswith(COMPACT_SUFFIX):
        name = name[: -len(COMPACT_SUFFIX)]
    return parse_long(name)


def is_compaction_batch(batch_id: int, compact_interval: int) -> bool:
    """Whether ``batch_id`` is a compaction batch: ``(batch_id + 1) % compact_interval == 0``."""
    return (batch_id + 1) % compact_interval == 0


def batches_before_compaction(compaction_batch_id: int, compact_interval: int) -> range:
    """The batches whose entries a compaction at ``compaction_batch_id`` merges: the previous compaction batch and
    the batches after it (for interval 3 and batch 5: 2, 3, 4)."""
    if not is_compaction_batch(compaction_batch_id, compact_interval):
        raise ValueError(f"{compaction_batch_id} is not a compaction batch for interval {compact_interval}")
    return range(max(0, compaction_batch_id - compact_interval), compaction_batch_id)


def valid_batches(batch_id: int, compact_interval: int) -> range:
    """The batches to read for the state at ``batch_id``: the latest compaction batch at or before it, then every
    batch up to ``batch_id`` (from 0 when there is no compaction batch yet)."""
    if batch_id < 0:
        raise ValueError(f"batch id must not be negative, got {batch_id}")
    start = max(0, (batch_id + 1) // compact_interval * compact_interval - 1)
    return range(start, batch_id + 1)


def next_compaction_batch_id(batch_id: int, compact_interval: int) -> int:
    """The first compaction batch after ``batch_id``."""
    return (batch_id + compact_interval + 1) // compact_interval * compact_interval - 1


def derive_compact_interval(default_interval: int, latest_compact_batch_id: int) -> int:
    """The interval to use when a log holds exactly one ``.compact`` file: one that divides
    ``latest_compact_batch_id + 1`` and is as close as possible to, and at least, ``default_interval``."""
    n = latest_compact_batch_id + 1
    if n <= default_interval:
        return n
    if default_interval < n // 2:
        for candidate in range(default_interval, n // 2 + 1):
            if n % candidate == 0:
                return candidate
    return n


def compact_interval_from_listing(default_interval: int, compact_batch_ids: list[int]) -> int:
    """The compaction interval Spark settles on for a log whose ``.compact`` files have ``compact_batch_ids``:
    the default with none, the distance between the two latest with two or more, the derived one with one."""
    ids = sorted(compact_batch_ids, reverse=True)
    if len(ids) >= 2:
        interval = ids[0] - ids[1]
    elif len(ids) == 1:
        interval = derive_compact_interval(default_interval, ids[0])
    else:
        interval = default_interval
    if interval <= 0:
        raise ValueError(f"derived compact interval {interval} is not positive (compact batches {ids})")
    return interval
