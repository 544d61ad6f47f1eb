"""The checkpoint tools on HDFS through WebHDFS (``webhdfs://user@host:port/path``, the user HDFS acts for):
``checkpointfs repair`` deletes the sink log's entry of the uncommitted batch there as on the object stores."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.cli import main
from tests.tools.crash_states import repair_round_trip

from .hdfs import MiniHdfs

pytestmark = pytest.mark.hdfs


def test_repair_deletes_the_sink_log_entry_on_hdfs(hdfs_server: MiniHdfs, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    manager = RenameBasedManager("webhdfs", **hdfs_server.storage_options())
    prefix = f"repair/{uuid.uuid4().hex[:12]}"

    def write(rel: str, data: bytes) -> None:
        with manager.create_atomic(hdfs_server.webhdfs_uri(f"{prefix}/{rel}")) as out:
            out.write(data)

    def listed() -> set[str]:
        return {path.removeprefix(f"/{prefix}/") for path in manager.fs.find(f"/{prefix}")}

    def repair(*args: str) -> tuple[int, dict[str, Any]]:
        capsys.readouterr()
        code = main(["repair", *args, "--json"])
        out, err = capsys.readouterr()
        return code, json.loads(out) if out else {"error": err}

    root = f"webhdfs://{hdfs_server.user}@127.0.0.1:{hdfs_server.http_port}/{prefix}"
    try:
        repair_round_trip(write, listed, root, repair, tmp_path)
    finally:
        manager.close()
