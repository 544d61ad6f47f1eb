"""What checkpointfs.log writes for a batch it read: the byte-for-byte check of every Spark-compatibility test."""

from __future__ import annotations

from typing import Any

from checkpointfs.log import LineWriter, MetadataLog


class _Bytes:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> int:
        self.data += bytes(data)
        return len(data)


def rewritten(log: MetadataLog[Any], batch_id: int) -> bytes:
    """What the Python writer produces for a batch it read."""
    out = _Bytes()
    writer = LineWriter(out)  # type: ignore[arg-type]
    log.write_batch(writer, log.get(batch_id))
    writer.flush()
    return out.data
