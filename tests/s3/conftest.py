"""The S3 manager's tests run on the session's embedded S3, emptied for each test."""

from __future__ import annotations

import pytest

from checkpointfs.testing import EmbeddedS3


@pytest.fixture
def s3(embedded_s3: EmbeddedS3) -> EmbeddedS3:
    """The embedded S3, by the name these tests use."""
    return embedded_s3
