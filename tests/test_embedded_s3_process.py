"""EmbeddedS3Process: the embedded S3 in a child process, as the benchmarks use it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from checkpointfs import DirectWriteManager
from checkpointfs.testing import EmbeddedS3Process


def test_child_serves_counts_takes_faults_resets_and_stops() -> None:
    with EmbeddedS3Process(["checkpoints"], min_part_size=1024) as s3:
        pid = s3.pid
        assert pid is not None and pid != os.getpid()
        manager = DirectWriteManager(**s3.manager_options(), part_size=1024)
        with manager.create_atomic(s3.uri("ck/offsets/0")) as out:  # a multipart upload: 3 parts
            out.write(b"x" * 2500)
        body = s3.client().get_object(Bucket="checkpoints", Key="ck/offsets/0")["Body"].read()
        assert body == b"x" * 2500
        operations = [r.operation for r in s3.requests()]
        # 3 parts, and the one of the store check before the process's first create-if-absent multipart completion
        assert operations.count("UploadPart") == 3 + 1 and operations.count("CompleteMultipartUpload") == 2
        assert operations[-1] == "GetObject"

        s3.clear_requests()
        s3.set_faults({"faults": [{"kind": "slowdown", "operations": ["PutObject"], "times": 1}]})
        with pytest.raises(ClientError, match="SlowDown"):
            s3.client().put_object(Bucket="checkpoints", Key="ck/offsets/1", Body=b"1")
        assert [(r.operation, r.status, r.fault) for r in s3.requests()] == [("PutObject", 503, "slowdown")]

        s3.reset()  # empties the store and the log, keeps the plan (its one fault is spent)
        assert s3.requests() == []
        s3.client().put_object(Bucket="checkpoints", Key="ck/offsets/1", Body=b"1")
        listed = s3.client(admin=True).list_objects_v2(Bucket="checkpoints").get("Contents", [])
        assert [o["Key"] for o in listed] == ["ck/offsets/1"]
        assert [r.operation for r in s3.requests()] == ["PutObject"]  # the admin listing is not counted

        with pytest.raises(RuntimeError, match="unknown command"):
            s3._call("nonsense")
    assert s3.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_script_without_a_main_guard_is_told_why_the_child_failed(tmp_path: Path) -> None:
    """spawn imports the calling script again in the child: without ``if __name__ == "__main__":`` the child fails
    before serving, and the error says so (not only that the child exited)."""
    script = tmp_path / "unguarded.py"
    script.write_text("from checkpointfs.testing import EmbeddedS3Process\nEmbeddedS3Process(['b']).start()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "exited with code 1 before serving" in done.stderr
    assert 'from under `if __name__ == "__main__":`' in done.stderr
