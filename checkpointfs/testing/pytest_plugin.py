"""pytest fixtures, registered for every project that installs checkpointfs:

- ``embedded_s3_server`` (session): one :class:`EmbeddedS3` serving bucket ``checkpoints``;
- ``embedded_s3`` (function): the same server, emptied, with its request log and faults cleared.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .embedded_s3 import EmbeddedS3


@pytest.fixture(scope="session")
def embedded_s3_server() -> Iterator[EmbeddedS3]:
    """One embedded S3 for the whole test session."""
    with EmbeddedS3(min_part_size=1024) as server:
        yield server


@pytest.fixture
def embedded_s3(embedded_s3_server: EmbeddedS3) -> EmbeddedS3:
    """The session's embedded S3, emptied for this test."""
    embedded_s3_server.reset()
    return embedded_s3_server
