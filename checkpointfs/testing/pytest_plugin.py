"""pytest fixtures, registered for every project that installs checkpointfs:

- ``embedded_s3_server`` (session): one :class:`EmbeddedS3` serving bucket ``checkpoints``;
- ``embedded_s3`` (function): the same server, emptied, with its request log and faults cleared; a test marked
  ``@pytest.mark.embedded_s3_faults(spec)`` gets the faults of ``spec`` (see ``FaultPlan.from_spec``) in force.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .embedded_s3 import EmbeddedS3
from .faults import FaultPlan


@pytest.fixture(scope="session")
def embedded_s3_server() -> Iterator[EmbeddedS3]:
    """One embedded S3 for the whole test session."""
    with EmbeddedS3(min_part_size=1024) as server:
        yield server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded_s3_faults(spec): faults in force in the test's embedded S3")


@pytest.fixture
def embedded_s3(request: pytest.FixtureRequest, embedded_s3_server: EmbeddedS3) -> EmbeddedS3:
    """The session's embedded S3, emptied for this test (with the faults of an ``embedded_s3_faults`` marker)."""
    embedded_s3_server.reset()
    marker = request.node.get_closest_marker("embedded_s3_faults")
    if marker is not None:
        embedded_s3_server.faults = FaultPlan.from_spec(marker.args[0])
    return embedded_s3_server
