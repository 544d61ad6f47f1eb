"""What checkpointfs is measured against, on S3: a rename-based commit and the floor of one PUT per file."""

from __future__ import annotations

import uuid
from typing import Any


def rename_commit(client: Any, bucket: str, key: str, data: bytes) -> None:
    """Commit ``data`` at ``key`` the way a rename-based manager does on S3, at its cheapest: PUT a temp key,
    COPY it to the final key, DELETE the temp key. (Hadoop's S3A adds existence probes on top of these three.)
    Not atomic and not put-if-absent: the final key is overwritten by the COPY."""
    directory, _, name = key.rpartition("/")
    temp = f"{directory}/.{name}.{uuid.uuid4()}.tmp" if directory else f".{name}.{uuid.uuid4()}.tmp"
    client.put_object(Bucket=bucket, Key=temp, Body=data)
    client.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": temp})
    client.delete_object(Bucket=bucket, Key=temp)


def raw_put(client: Any, bucket: str, key: str, data: bytes) -> None:
    """The floor: one unconditional PutObject."""
    client.put_object(Bucket=bucket, Key=key, Body=data)
