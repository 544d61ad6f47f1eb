"""Batch names and compaction arithmetic, against the cases Spark documents."""

from __future__ import annotations

import pytest

from checkpointfs.log import names


@pytest.mark.parametrize(("name", "compactible", "expected"), [
    ("7", False, 7), ("7.compact", True, 7), ("7.compact", False, None), ("+7", False, 7), ("-1", False, -1),
    (".7.crc", True, None), (".7.compact.crc", True, None), (".7.1b2c.tmp", True, None), ("_SUCCESS", True, None),
    ("7.compact.tmp", True, None), ("1_0", False, None), (" 7", False, None), ("\u0667", False, None),
    ("9223372036854775807", False, 2**63 - 1), ("9223372036854775808", False, None), ("", False, None),
])
def test_batch_names_are_read_like_java_parse_long(name: str, compactible: bool, expected: int | None) -> None:
    assert names.batch_id_of(name, compactible) == expected


def test_compaction_batches_and_the_batches_they_merge() -> None:
    assert [b for b in range(12) if names.is_compaction_batch(b, 3)] == [2, 5, 8, 11]
    assert list(names.batches_before_compaction(5, 3)) == [2, 3, 4]
    assert list(names.batches_before_compaction(2, 3)) == [0, 1]
    with pytest.raises(ValueError, match="not a compaction batch"):
        names.batches_before_compaction(4, 3)
    assert list(names.valid_batches(7, 3)) == [5, 6, 7]
    assert list(names.valid_batches(5, 3)) == [5]
    assert list(names.valid_batches(1, 3)) == [0, 1]
    assert names.next_compaction_batch_id(5, 3) == 8
    assert names.next_compaction_batch_id(6, 3) == 8


@pytest.mark.parametrize(("default", "latest_compact", "expected"), [
    (5, 11, 6),    # Spark's example: 11.compact, default 5 -> 6 (12 % 6 == 0, 6 >= 5)
    (3, 5, 6),     # default not below half of 6: the whole 6 (what Spark 4.3 did on these machines)
    (10, 5, 6),    # a compact file earlier than the default interval
    (2, 11, 2),
    (4, 11, 4),
    (7, 11, 12),
])
def test_interval_derived_from_a_single_compact_file(default: int, latest_compact: int, expected: int) -> None:
    assert names.derive_compact_interval(default, latest_compact) == expected
    assert names.compact_interval_from_listing(default, [latest_compact]) == expected


def test_interval_from_two_compact_files_and_from_none() -> None:
    assert names.compact_interval_from_listing(10, [2, 5, 8]) == 3
    assert names.compact_interval_from_listing(10, []) == 10
