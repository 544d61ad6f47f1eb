"""checkpointfs's logs, the file sink and the tools (inspect, verify, doctor) on ``gs://``, on fake-gcs-server: a
Spark-written checkpoint (tests/fixtures) copied to the bucket, read back by the tools through manager_for."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import manager_for
from checkpointfs.cli import main
from checkpointfs.log import CommitLog, CommitMetadata
from checkpointfs.sink import FileSink, committed_files
from harness.servers.fake_gcs import FakeGcsServer

from ..tools.crash_states import repair_round_trip

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spark-4.3" / "stateful" / "checkpoint"
CHUNK = 256 * 1024


@pytest.fixture
def prefix() -> str:
    return f"tools/{uuid.uuid4().hex}"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def upload_fixture(server: FakeGcsServer, prefix: str) -> str:
    """Spark 4.3's stateful checkpoint, copied under ``prefix`` (uncounted)."""
    for file in sorted(p for p in FIXTURE.rglob("*") if p.is_file()):
        server.write(f"{prefix}/{file.relative_to(FIXTURE).as_posix()}", file.read_bytes())
    return server.uri(prefix)


def test_inspect_and_verify_a_checkpoint_on_gs(gcs_emulator: FakeGcsServer, prefix: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint = upload_fixture(gcs_emulator, prefix)
    endpoint = ["--endpoint-url", gcs_emulator.endpoint_url]
    code, found, err = run(capsys, "inspect", checkpoint, *endpoint)
    assert code == 0, err
    assert found["commits"]["latest"] == max(int(p.name) for p in (FIXTURE / "commits").iterdir())
    assert found["state"]["operators"][0]["partitions"] > 0
    code, verified, err = run(capsys, "verify", checkpoint, *endpoint)
    assert code == 0, (verified, err)
    victim = sorted((FIXTURE / "offsets").iterdir())[-1].name
    manager = manager_for(checkpoint, endpoint_url=gcs_emulator.endpoint_url)
    manager.delete(f"{checkpoint}/offsets/{victim}")
    manager.close()
    code, verified, err = run(capsys, "verify", checkpoint, *endpoint)
    assert code == 1 and verified["problems"], verified


def test_doctor_finds_fake_gcs_server_safe(gcs_emulator: FakeGcsServer, prefix: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = run(capsys, "doctor", gcs_emulator.uri(prefix), "--endpoint-url", gcs_emulator.endpoint_url,
                          "--writers", "4")
    assert code == 0, report
    assert [c["name"] for c in report["checks"]] == [
        "reach", "permissions", "put_if_none_match", "complete_multipart_if_none_match", "racing_writers",
        "read_after_write", "list_after_write", "user_metadata", "abort_leaves_nothing", "delete", "clean_up"]
    assert all(c["ok"] for c in report["checks"]), report
    assert "was refused (412 conditionNotMet)" in report["checks"][2]["detail"]
    assert "refused at finalize (412 conditionNotMet)" in report["checks"][3]["detail"]
    assert gcs_emulator.keys(prefix + "/") == []  # cleaned up


def test_doctor_on_a_missing_bucket_exits_2(gcs_emulator: FakeGcsServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "doctor", "gs://no-such-bucket-here/x", "--endpoint-url", gcs_emulator.endpoint_url)
    assert code == 2 and "no-such-bucket-here" in err and "Traceback" not in err


def test_logs_and_the_file_sink_on_gs(gcs_emulator: FakeGcsServer, prefix: str) -> None:
    root = gcs_emulator.uri(prefix)
    options = {"endpoint_url": gcs_emulator.endpoint_url, "part_size": CHUNK}
    manager = manager_for(f"{root}/ck", **options)
    try:
        commits = CommitLog(manager, f"{root}/ck/commits")
        assert commits.add(0, CommitMetadata(0)) and not commits.add(0, CommitMetadata(0))  # a second add loses
        assert commits.latest_batch_id() == 0
    finally:
        manager.close()
    with FileSink(f"{root}/out", manager=manager_for(f"{root}/out", **options)) as sink:
        assert sink.write_batch(0, [{"k": i} for i in range(5)])
        assert sink.write_batch(1, [{"k": i} for i in range(5, 8)])
    files = committed_files(f"{root}/out", **options)
    assert len(files) == 2 and all(f.startswith(f"{root}/out/part-") for f in files)
    manifest = gcs_emulator.read(f"{prefix}/out/_spark_metadata/1").decode()
    assert f"gs://{gcs_emulator.buckets[0]}/{prefix}/out/part-" in manifest


def test_repair_deletes_the_sink_log_entry_on_gs(gcs_emulator: FakeGcsServer, prefix: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    repair_round_trip(lambda rel, data: gcs_emulator.write(f"{prefix}/{rel}", data),
                      lambda: {k.removeprefix(prefix + "/") for k in gcs_emulator.keys(prefix + "/")},
                      gcs_emulator.uri(prefix),
                      lambda *args: run(capsys, "repair", *args, "--endpoint-url", gcs_emulator.endpoint_url)[:2],
                      tmp_path)
