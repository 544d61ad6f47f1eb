"""pytest fixtures of checkpointfs, for projects that ask for them. Nothing registers this plugin on install: a
project opts in from its ``conftest.py`` with ``pytest_plugins = ["checkpointfs.testing.pytest_plugin"]``.

- ``embedded_s3_server`` (session): one :class:`~checkpointfs.testing.EmbeddedS3` serving bucket ``checkpoints``;
- ``embedded_s3`` (function): the same server, emptied, with its request log and faults cleared; a test marked
  ``@pytest.mark.embedded_s3_faults(spec)`` gets the faults of ``spec`` (see ``FaultPlan.from_spec``) in force.

The fixtures need the ``test`` extra (``pip install 'checkpointfs[test]'``); a test that asks for one without it
fails with that command in its message. Loading the plugin alone imports nothing beyond pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from . import require_test_extra

if TYPE_CHECKING:
    from .embedded_s3 import EmbeddedS3


@pytest.fixture(scope="session")
def embedded_s3_server() -> Iterator[EmbeddedS3]:
    """One embedded S3 for the whole test session."""
    require_test_extra("the embedded_s3_server fixture")
    from .embedded_s3 import EmbeddedS3

    with EmbeddedS3(min_part_size=1024) as server:
        yield server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded_s3_faults(spec): faults in force in the test's embedded S3")


@pytest.fixture
def embedded_s3(request: pytest.FixtureRequest, embedded_s3_server: EmbeddedS3) -> EmbeddedS3:
    """The session's embedded S3, emptied for this test (with the faults of an ``embedded_s3_faults`` marker)."""
    from .faults import FaultPlan

    embedded_s3_server.reset()
    marker = request.node.get_closest_marker("embedded_s3_faults")
    if marker is not None:
        embedded_s3_server.faults = FaultPlan.from_spec(marker.args[0])
    return embedded_s3_server
