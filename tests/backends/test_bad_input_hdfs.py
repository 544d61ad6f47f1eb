"""Bad input and faults on HDFS through WebHDFS: a user the cluster refuses (HDFS permissions, its form of wrong
credentials), a missing directory, a checkpoint path that is a file, and the cluster killed in the middle of a
write. Each is a clear error naming the path, and nothing partial is ever visible."""

from __future__ import annotations

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.errors import AccessDeniedError, CheckpointFsError, PathNotFoundError, StoreUnavailableError

from .hdfs import MiniHdfs

pytestmark = pytest.mark.hdfs


def _manager(hdfs: MiniHdfs, **options: object) -> RenameBasedManager:
    return RenameBasedManager("webhdfs", **{**hdfs.storage_options(), **options})


def test_a_user_without_access_is_refused_and_nothing_is_written(hdfs_server: MiniHdfs) -> None:
    owner = _manager(hdfs_server)
    private = hdfs_server.webhdfs_uri("private-cp")
    owner.mkdirs(private)
    owner.fs._call("SETPERMISSION", method="put", path=owner.fs._strip_protocol(private), permission="700")
    intruder = _manager(hdfs_server, user="intruder")
    path = private + "/offsets/0"
    with pytest.raises(AccessDeniedError) as raised:
        with intruder.create_atomic(path) as out:
            out.write(b"v1\n{}")
    assert path in str(raised.value) and "intruder" in str(raised.value)
    assert owner.list(private) == []


def test_a_missing_directory_is_empty_and_a_missing_file_is_named(hdfs_server: MiniHdfs) -> None:
    m = _manager(hdfs_server)
    missing = hdfs_server.webhdfs_uri("never-made")
    assert m.list(missing) == [] and not m.exists(missing)
    with pytest.raises(PathNotFoundError) as raised:
        m.open(missing + "/offsets/0")
    assert missing + "/offsets/0" in str(raised.value)
    assert not m.exists(missing)  # reading made nothing


def test_a_checkpoint_path_that_is_a_file_is_a_clear_error(hdfs_server: MiniHdfs) -> None:
    m = _manager(hdfs_server)
    file_path = hdfs_server.webhdfs_uri("a-file-not-a-dir")
    with m.create_atomic(file_path) as out:
        out.write(b"x")
    path = file_path + "/offsets/0"
    with pytest.raises(CheckpointFsError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    assert path in str(raised.value)
    with m.open(file_path) as f:
        assert f.read() == b"x"


def test_cluster_killed_mid_write_fails_clearly_and_leaves_nothing() -> None:
    """A cluster of its own, killed (SIGKILL) while a write is open and restarted on its files: the close fails as
    unavailable, naming the path; the target never appears (the temp file is published only by the rename)."""
    cluster = MiniHdfs().start()
    try:
        m = _manager(cluster)
        path = cluster.webhdfs_uri("ck/state/1.delta")
        out = m.create_atomic(path)
        out.write(b"x" * 100_000)
        cluster.kill()
        with pytest.raises(StoreUnavailableError) as raised:
            out.close()
        assert path in str(raised.value)
        cluster.start()
        after = _manager(cluster)
        assert not after.exists(cluster.webhdfs_uri("ck/state/1.delta"))
        assert [s.name for s in after.list(cluster.webhdfs_uri("ck/state")) if not s.name.startswith(".")] == []
    finally:
        cluster.stop()
