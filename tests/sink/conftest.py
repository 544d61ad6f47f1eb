"""Targets for the sink tests: a local directory, an embedded-S3 prefix and a MinIO prefix (marker ``minio``), with
helpers to read what was written."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import CheckpointFileManager, manager_for
from checkpointfs.sink import FileSink, committed_files
from checkpointfs.testing import EmbeddedS3
from tests.backends.stores import UploadsOf


@dataclass
class Target:
    """Where a sink writes, and how to reach it."""

    kind: str
    path: str
    options: dict[str, Any] = field(default_factory=dict)
    s3: Any = None
    """The S3 server where the target has one (EmbeddedS3 or MinioServer): ``open_uploads()`` is checked."""

    def sink(self, **kwargs: Any) -> FileSink:
        """A FileSink on this target."""
        return FileSink(self.path, **self.options, **kwargs)

    def manager(self) -> CheckpointFileManager:
        """A manager for this target."""
        return manager_for(self.path, **self.options)

    def read(self, path: str) -> bytes:
        """A file's bytes (gunzipped for .gz)."""
        manager = self.manager()
        try:
            with manager.open(path) as stream:
                data = stream.read()
        finally:
            manager.close()
        return gzip.decompress(data) if path.endswith(".gz") else data

    def committed(self) -> list[str]:
        """The committed files, as a reader outside Spark sees them."""
        return committed_files(self.path, **self.options)

    def rows(self) -> list[dict[str, Any]]:
        """Every committed row."""
        return [json.loads(line) for path in self.committed() for line in self.read(path).decode().splitlines()]

    def part_files(self) -> list[str]:
        """Every part file on the store, committed or not."""
        manager = self.manager()
        found: list[str] = []
        pending = [self.path]
        while pending:
            for status in manager.list(pending.pop()):
                if status.is_dir and not status.name.startswith("_"):
                    pending.append(status.path)
                elif status.name.startswith("part-"):
                    found.append(status.path)
        manager.close()
        return sorted(found)


@pytest.fixture(params=["local", "s3", pytest.param("minio", marks=pytest.mark.minio)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """Each sink test runs on a local directory, on the embedded S3 and on MinIO."""
    if request.param == "local":
        yield Target("local", str(tmp_path / "out"))
        return
    if request.param == "minio":
        minio: Any = request.getfixturevalue("minio_server")
        key = f"out-{uuid.uuid4().hex}"
        yield Target("minio", minio.uri(key), minio.manager_options(), UploadsOf(minio, key + "/"))
        return
    s3: EmbeddedS3 = request.getfixturevalue("embedded_s3")
    yield Target("s3", s3.uri("out"), s3.manager_options(), s3)


def rows_of(batch: int, n: int, routes: int = 3) -> list[dict[str, Any]]:
    """``n`` rows of ``batch``, spread over ``routes`` days."""
    return [{"day": i % routes, "batch": batch, "i": i, "text": f"row {batch}-{i}"} for i in range(n)]


def by_day(row: Any) -> str:
    """Route rows to day=<n> directories."""
    return f"day={row['day']}"
