"""What a log line names of a file (checkpointfs.events): its checkpoint root, its batch id or state version."""

from __future__ import annotations

import pytest

from checkpointfs.events import checkpoint_root, file_context


@pytest.mark.parametrize(("path", "root"), [
    ("s3://b/q/offsets/12", "s3://b/q"),
    ("s3://b/q/commits/.12.crc", "s3://b/q"),
    ("s3://b/q/sources/0/12.compact", "s3://b/q"),
    ("s3://b/q/metadata", "s3://b/q"),
    ("s3://b/q/state/0/3/12.delta", "s3://b/q"),
    ("s3://b/q/state/0/3/SSTs/000012-0a1b.sst", "s3://b/q"),
    ("s3://b/q/state/0/_metadata/metadata", "s3://b/q"),
    ("s3://b/out/_spark_metadata/7", "s3://b/out"),
    ("s3a://b/offsets/1", "s3a://b"),
    ("s3://b/state/queries/q1/offsets/3", "s3://b/state/queries/q1"),  # a "state" above the root is no marker
    ("s3://b/state/7/q1/state/1/0/4.zip", "s3://b/state/7/q1"),  # the rightmost state/<operator> is
    ("file:///data/q/offsets/3", "file:///data/q"),
    ("/data/q/commits/3", "/data/q"),
    ("s3://b/q/other/file", "s3://b/q/other"),  # no marker: the file's directory
])
def test_checkpoint_root_is_the_part_before_the_checkpoint_layout(path: str, root: str) -> None:
    assert checkpoint_root(path) == root


@pytest.mark.parametrize(("path", "batch", "version"), [
    ("s3://b/q/offsets/12", 12, None),
    ("s3://b/q/sources/1/40.compact", 40, None),
    ("s3://b/out/_spark_metadata/9", 9, None),
    ("s3://b/q/state/0/3/12.delta", None, 12),
    ("s3://b/q/state/0/3/12_0a1b-2c.zip", None, 12),
    ("s3://b/q/offsets/.12.crc", None, None),
    ("s3://b/q/metadata", None, None),
])
def test_a_log_file_gives_its_batch_a_state_file_its_version(path: str, batch: int | None,
                                                               version: int | None) -> None:
    context = file_context(path, "w1")
    assert (context.batch, context.version, context.file, context.write_id) == (batch, version, path, "w1")
    shown = str(context)
    assert shown.startswith(f"[checkpoint={checkpoint_root(path)} file={path}") and shown.endswith("write_id=w1]")
    assert ("batch=" in shown, "version=" in shown) == (batch is not None, version is not None)
