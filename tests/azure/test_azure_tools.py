"""Azure paths through the rest of the library on Azurite: checkpointfs.log reading a real Spark checkpoint copied
there, the file sink, and the tools (inspect, verify, doctor) with credentials from the environment as a user's
shell has them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("azure.storage.blob", reason="the azure extra (azure-storage-blob) is not installed")

from checkpointfs import manager_for
from checkpointfs.cli import main
from checkpointfs.log import CommitLog, CommitMetadata, OffsetSeqLog
from checkpointfs.sink import FileSink, committed_files
from harness.servers.azurite import AzuriteServer

from ..tools.crash_states import repair_round_trip

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spark-4.3" / "stateful" / "checkpoint"
CHECKS = ["reach", "permissions", "put_if_none_match", "complete_multipart_if_none_match", "racing_writers",
          "read_after_write", "list_after_write", "user_metadata", "abort_leaves_nothing", "delete", "clean_up"]


@pytest.fixture
def azure_env(azurite_server: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> AzuriteServer:
    """The development account's key in AZURE_STORAGE_KEY, as a user's shell would have it."""
    monkeypatch.setenv("AZURE_STORAGE_KEY", azurite_server.account_key)
    return azurite_server


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def copy_checkpoint(azurite: AzuriteServer, prefix: str) -> str:
    for path in sorted(FIXTURE.rglob("*")):
        if path.is_file():
            azurite.put(f"{prefix}/{path.relative_to(FIXTURE).as_posix()}", path.read_bytes())
    return azurite.uri(prefix)


def test_the_logs_read_a_spark_checkpoint_on_azure(azure_env: AzuriteServer) -> None:
    root = copy_checkpoint(azure_env, azure_env.fresh_prefix("logs"))
    manager = manager_for(root, endpoint_url=azure_env.endpoint_url)
    try:
        offsets = OffsetSeqLog(manager, f"{root}/offsets")
        commits = CommitLog(manager, f"{root}/commits")
        local = sorted(int(p.name) for p in (FIXTURE / "commits").iterdir() if p.name.isdigit())
        assert commits.batch_ids() == offsets.batch_ids() == local
        latest = commits.get_latest()
        assert latest is not None and latest[0] == local[-1]
        following = local[-1] + 1
        assert commits.add(following, CommitMetadata(next_batch_watermark_ms=7))  # one Put Blob If-None-Match: *
        assert not commits.add(following, CommitMetadata(next_batch_watermark_ms=8))  # taken: refused
        assert commits.get(following) == CommitMetadata(next_batch_watermark_ms=7)
    finally:
        manager.close()


def test_inspect_and_verify_a_checkpoint_on_azure(azure_env: AzuriteServer, capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    root = copy_checkpoint(azure_env, azure_env.fresh_prefix("tools"))
    endpoint = ["--endpoint-url", azure_env.endpoint_url]
    code, out, _ = run(capsys, "inspect", root, "--json", *endpoint)
    found = json.loads(out)
    commits = sorted(int(p.name) for p in (FIXTURE / "commits").iterdir() if p.name.isdigit())
    assert code == 0 and found["commits"] == {"latest": commits[-1], "count": len(commits), "version": 1}
    code, out, err = run(capsys, "verify", root, "--json", *endpoint)
    assert code == 0, out + err
    assert json.loads(out)["ok"] is True


def test_doctor_finds_azurite_safe_and_leaves_nothing(azure_env: AzuriteServer,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    prefix = azure_env.fresh_prefix("doctor")
    azure_env.put(f"{prefix}/keep-me", b"user data")
    code, out, err = run(capsys, "doctor", azure_env.uri(prefix), "--endpoint-url", azure_env.endpoint_url, "--json")
    report = json.loads(out)
    assert code == 0, report
    assert [c["name"] for c in report["checks"]] == CHECKS and report["safe"] is True
    race = next(c for c in report["checks"] if c["name"] == "racing_writers")
    assert race["detail"] == "8 writers, 1 won, 7 lost"
    assert azure_env.keys(prefix + "/", uncommitted=True) == [f"{prefix}/keep-me"]
    assert azure_env.account_key not in out + err


def test_doctor_on_a_missing_container_exits_2(azure_env: AzuriteServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "doctor", "az://no-such-container/x", "--endpoint-url", azure_env.endpoint_url)
    assert code == 2 and "container 'no-such-container' does not exist" in err


def test_the_file_sink_commits_batches_on_azure(azure_env: AzuriteServer) -> None:
    path = azure_env.uri(azure_env.fresh_prefix("sink"))
    options: dict[str, Any] = {"endpoint_url": azure_env.endpoint_url}
    with FileSink(path, **options) as sink:
        assert sink.write_batch(0, [{"i": i} for i in range(5)])
        assert sink.write_batch(1, [{"i": i} for i in range(5, 8)])
    files = committed_files(path, **options)
    assert len(files) == 2 and all(f.startswith(path + "/part-") for f in files)
    manager = manager_for(path, **options)
    try:
        rows = [json.loads(line) for f in files for line in manager.open(f).read().decode().splitlines()]
    finally:
        manager.close()
    assert sorted(r["i"] for r in rows) == list(range(8))


def test_repair_deletes_the_sink_log_entry_on_azure(azure_env: AzuriteServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    prefix = azure_env.fresh_prefix("repair")

    def repair(*args: str) -> tuple[int, dict[str, Any]]:
        code, out, err = run(capsys, "repair", *args, "--json", "--endpoint-url", azure_env.endpoint_url)
        return code, json.loads(out) if out else {"error": err}

    repair_round_trip(lambda rel, data: azure_env.put(f"{prefix}/{rel}", data),
                      lambda: {k.removeprefix(prefix + "/") for k in azure_env.keys(prefix + "/")},
                      azure_env.uri(prefix), repair, tmp_path)
