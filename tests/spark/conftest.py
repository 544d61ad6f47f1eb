"""Fixtures of the Spark compatibility tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

STREAMING_CONFS = {
    "spark.sql.streaming.fileSink.log.compactInterval": "3",
    "spark.sql.streaming.fileSource.log.compactInterval": "3",
    "spark.sql.streaming.minBatchesToRetain": "2",
    "spark.sql.streaming.fileSink.log.cleanupDelay": "0",
    "spark.sql.streaming.fileSource.log.cleanupDelay": "0",
}


@pytest.fixture
def small_logs(spark: Any) -> Iterator[Any]:
    """The session with small compaction intervals and no clean-up delay, restored afterwards."""
    for key, value in STREAMING_CONFS.items():
        spark.conf.set(key, value)
    yield spark
    for key in STREAMING_CONFS:
        spark.conf.unset(key)
