"""The conformance suite on HDFS: RenameBasedManager over ``webhdfs://`` (fsspec) on Hadoop's MiniDFSCluster.
HDFS's rename is the no-replace primitive (racing writers: one wins), an overwrite is WebHDFS's atomic
``RENAME`` with ``renameoptions=OVERWRITE``, and a cancel deletes the temp file."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from checkpointfs import RenameBasedManager
from tests.conformance.cases import Case
from tests.conformance.suite import ContractSuite

from .hdfs import MiniHdfs

pytestmark = pytest.mark.hdfs


@pytest.fixture(params=["rename-webhdfs|hdfs"])
def case(request: pytest.FixtureRequest, hdfs_server: MiniHdfs, tmp_path: Path) -> Case:
    manager = RenameBasedManager("webhdfs", **hdfs_server.storage_options())
    return Case(request.param, manager, hdfs_server.webhdfs_uri(f"conformance/{uuid.uuid4().hex}"))


class TestContractOnHdfs(ContractSuite):
    """docs/contract.md on HDFS through WebHDFS."""
