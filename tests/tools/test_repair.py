"""``checkpointfs repair`` on every state it recognises or refuses (tests/tools/crash_states.py, made from the
checkpoints each Spark line wrote), on local disk and on the embedded S3: a dry run changes nothing and exits 1 when
it would repair; ``--apply`` deletes exactly the sink log's entry of the uncommitted batch and nothing else, or
leaves everything as it was and says why."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.testing import EmbeddedS3
from checkpointfs.tools import commands

from .crash_states import CASES, RECOGNISED, V2_LINES, Case, build, crash_during, files_under

BACKENDS = ["local", "s3"]


@dataclass
class Placed:
    """A checkpoint state on a store: the two URIs to give ``repair``, its extra options, and the files there now
    (relative to the state's root, as :func:`files_under` names them)."""

    checkpoint: str
    output: str
    options: list[str]
    files: Callable[[], set[str]]


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[Path], Placed]:
    """Puts a state built under ``tmp_path`` on the test's store: local disk as it is, or uploaded to the embedded
    S3 (the credentials in the AWS variables, as a user's shell has them)."""
    if request.param == "local":
        return lambda root: Placed(str(root / "checkpoint"), str(root / "output"), [], lambda: files_under(root))
    s3: EmbeddedS3 = request.getfixturevalue("s3_env")
    return lambda root: upload(s3, root)


def upload(s3: EmbeddedS3, root: Path) -> Placed:
    """The state under ``root`` copied to a fresh prefix of the embedded S3 (uncounted: the request log is cleared
    after)."""
    prefix = f"repair/{uuid.uuid4().hex[:10]}"
    client = s3.client(admin=True)
    for rel in sorted(files_under(root)):
        client.put_object(Bucket=s3.buckets[0], Key=f"{prefix}/{rel}", Body=(root / rel).read_bytes())
    s3.requests.clear()
    return Placed(s3.uri(f"{prefix}/checkpoint"), s3.uri(f"{prefix}/output"), ["--endpoint-url", s3.endpoint_url],
                  lambda: {k.removeprefix(prefix + "/") for k in s3.keys(prefix + "/")})


def _repair(cli: Any, placed: Placed, *extra: str) -> Any:
    return cli("repair", placed.checkpoint, "--sink", placed.output, "--json", *placed.options, *extra)


@pytest.mark.parametrize("name", list(CASES))
def test_each_state_gets_its_verdict_and_apply_does_only_that(name: str, place: Callable[[Path], Placed], cli: Any,
                                                              tmp_path: Path) -> None:
    case: Case = CASES[name]
    placed = place(build(case, tmp_path / "state"))
    before = placed.files()

    dry = _repair(cli, placed)
    assert dry.json["verdict"] == case.verdict, dry.json
    assert case.says in dry.json["reason"], dry.json["reason"]
    assert dry.code == (1 if case.verdict in (RECOGNISED, "refused") else 0)
    assert dry.json["deletes"] == [f"{placed.output}/{rel.removeprefix('output/')}" for rel in case.deletes]
    assert dry.json["applied"] is False and placed.files() == before

    applied = _repair(cli, placed, "--apply")
    if case.verdict == RECOGNISED:
        assert (applied.code, applied.json["verdict"], applied.json["applied"]) == (0, "repaired", True)
        assert placed.files() == before - set(case.deletes)
        again = _repair(cli, placed, "--apply")  # the restart's state now: Spark runs the batch in full
        assert (again.code, again.json["verdict"]) == (0, "nothing_to_do"), again.json
        assert "has not committed batch" in again.json["reason"]
    else:
        assert (applied.code, applied.json) == (dry.code, dry.json)
        assert placed.files() == before


@pytest.mark.parametrize("line", V2_LINES)
def test_every_line_with_format_v2_is_recognised_and_repaired(line: str, place: Callable[[Path], Placed], cli: Any,
                                                              tmp_path: Path) -> None:
    placed = place(build(CASES["v2 crash in batch 1"], tmp_path / "state", line))
    before = placed.files()
    dry = _repair(cli, placed)
    assert (dry.code, dry.json["verdict"], dry.json["state_format"], dry.json["batch"]) == (1, RECOGNISED, 2, 1)
    assert dry.json["facts"]["state"].startswith("format v2 (commits/0 carries state unique ids)")
    applied = _repair(cli, placed, "--apply")
    assert applied.code == 0 and placed.files() == before - {"output/_spark_metadata/1"}


def test_on_s3_a_dry_run_only_reads_and_apply_deletes_one_key(s3_env: EmbeddedS3, cli: Any, tmp_path: Path) -> None:
    placed = upload(s3_env, build(CASES["v2 crash in batch 1"], tmp_path / "state"))
    assert _repair(cli, placed).code == 1
    writes = [r for r in s3_env.requests.all() if r.operation not in ("ListObjectsV2", "GetObject", "HeadObject")]
    assert writes == []  # a dry run only reads
    s3_env.requests.clear()
    assert _repair(cli, placed, "--apply").code == 0
    changed = [(r.operation, r.key.rsplit("/", 2)[-2:]) for r in s3_env.requests.all()
               if r.operation not in ("ListObjectsV2", "GetObject", "HeadObject")]
    assert changed == [("DeleteObject", ["_spark_metadata", "1"])]


def test_apply_deletes_the_entry_alone_never_what_lies_below_it(s3_env: EmbeddedS3, cli: Any,
                                                                tmp_path: Path) -> None:
    """A key below the entry (``_spark_metadata/1/...``, which no Spark writes) is not the repair's to delete: a
    manager's ``delete`` would take it with the entry; the repair sends one DeleteObject for the entry alone."""
    placed = upload(s3_env, build(CASES["v2 crash in batch 1"], tmp_path / "state"))
    below = placed.output.removeprefix(f"s3://{s3_env.buckets[0]}/") + "/_spark_metadata/1/unknown"
    s3_env.client(admin=True).put_object(Bucket=s3_env.buckets[0], Key=below, Body=b"not the repair's")
    before = placed.files()
    s3_env.requests.clear()
    result = _repair(cli, placed, "--apply")
    assert (result.code, result.json["verdict"]) == (0, "repaired"), result.json
    assert placed.files() == before - {"output/_spark_metadata/1"}
    changed = [r.operation for r in s3_env.requests.all()
               if r.operation not in ("ListObjectsV2", "GetObject", "HeadObject")]
    assert changed == ["DeleteObject"]


def test_hadoops_checksum_file_goes_with_the_entry(cli: Any, tmp_path: Path) -> None:
    root = build(CASES["v2 crash in batch 1"], tmp_path / "state")
    (root / "output/_spark_metadata/.1.crc").write_bytes(b"crc")  # the local file system writes one beside it
    (root / "output/_spark_metadata/.0.crc").write_bytes(b"crc")
    result = cli("repair", str(root / "checkpoint"), "--sink", str(root / "output"), "--apply", "--json")
    log_dir = root / "output/_spark_metadata"
    assert result.json["deletes"] == [str(log_dir / "1"), str(log_dir / ".1.crc")]
    assert sorted(p.name for p in (root / "output/_spark_metadata").iterdir()) == [".0.crc", "0"]


def test_a_query_that_commits_meanwhile_gets_its_entry_back(cli: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A running query writes ``commits/<n>`` while the entry is being deleted: the repair writes the entry back
    (byte for byte) and refuses, naming the cause."""
    root = build(CASES["v2 crash in batch 1"], tmp_path / "state")
    entry = root / "output/_spark_metadata/1"
    original = entry.read_bytes()
    from checkpointfs.tools.store import Location

    delete = Location.delete_file

    def delete_while_the_query_commits(self: Location, rel: str) -> None:
        delete(self, rel)
        (root / "checkpoint/commits/1").write_text('v2\n{"nextBatchWatermarkMs":0}')

    monkeypatch.setattr(Location, "delete_file", delete_while_the_query_commits)
    result = cli("repair", str(root / "checkpoint"), "--sink", str(root / "output"), "--apply", "--json")
    assert (result.code, result.json["verdict"], result.json["applied"]) == (1, "refused", False)
    assert "the query is running" in result.json["reason"] and "written back" in result.json["reason"]
    assert entry.read_bytes() == original


def test_plain_output_names_the_file_and_what_to_do(cli: Any, tmp_path: Path) -> None:
    root = build(CASES["v2 crash in batch 1"], tmp_path / "state")
    entry = root / "output/_spark_metadata/1"
    dry = cli("repair", str(root / "checkpoint"), "--sink", str(root / "output"), "--plain")
    assert dry.code == 1 and dry.err == ""
    assert f"would delete {entry}\n" in dry.out and "run again with --apply" in dry.out
    assert "verdict: repairable: Spark's format-v2 restart failure" in dry.out
    assert "format v2 (commits/0 carries state unique ids), 1 stateful operator" in dry.out
    applied = cli("repair", str(root / "checkpoint"), "--sink", str(root / "output"), "--plain", "--apply")
    assert applied.code == 0 and f"deleted {entry}\n" in applied.out and "restart the query" in applied.out
    refused = build(CASES["v2 crash in a compaction batch"], tmp_path / "compaction")
    result = cli("repair", str(refused / "checkpoint"), "--sink", str(refused / "output"), "--plain", "--apply")
    assert result.code == 1 and "verdict: left alone: batch 2 is a compaction batch" in result.out
    assert "delete" not in result.out.replace("deleting it", "")


def test_arguments_are_checked_before_any_store_is_touched(cli: Any, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as stopped:  # argparse: --sink is required
        cli("repair", "s3://no-such-bucket-anywhere/ck", "--endpoint-url", "http://127.0.0.1:9")
    assert stopped.value.code == 2 and "--sink" in capsys.readouterr().err
    monkeypatch.setattr(commands, "repair_checkpoint", lambda *a, **k: pytest.fail("a store was read"))
    same = cli("repair", "s3://no-such-bucket-anywhere/ck", "--sink", "s3://no-such-bucket-anywhere/ck/",
               "--endpoint-url", "http://127.0.0.1:9")
    assert same.code == 2 and "the sink's output directory is the checkpoint itself" in same.err
    other_scheme = cli("repair", "s3a://no-such-bucket-anywhere/ck", "--sink", "s3://no-such-bucket-anywhere/ck",
                       "--endpoint-url", "http://127.0.0.1:9")
    assert other_scheme.code == 2 and "is the checkpoint itself" in other_scheme.err
    monkeypatch.chdir(tmp_path)
    relative = cli("repair", "ck", "--sink", str(tmp_path / "ck"))
    assert relative.code == 2 and "is the checkpoint itself" in relative.err
    bad = cli("repair", "ftp://host/ck", "--sink", "s3://b/out")
    assert bad.code == 2 and "unsupported scheme 'ftp'" in bad.err


def test_a_checkpoint_that_is_not_there_exits_2(cli: Any, tmp_path: Path) -> None:
    result = cli("repair", str(tmp_path / "nothing"), "--sink", str(tmp_path / "out"))
    assert result.code == 2 and "no checkpoint here" in result.err and result.out == ""


def test_the_state_files_say_v2_when_no_commit_does(cli: Any, tmp_path: Path) -> None:
    root = build(CASES["v2 crash in batch 0, no commit yet"], tmp_path / "state")
    found = cli("repair", str(root / "checkpoint"), "--sink", str(root / "output"), "--json").json
    assert found["facts"]["commits"] == "none"
    assert found["facts"]["state"].startswith("format v2 (its state files are named <version>_<uniqueId>)")


def test_crash_states_keep_the_first_attempts_state(tmp_path: Path) -> None:
    """The builder leaves what the crash leaves: the state version the uncommitted batch wrote stays."""
    root = build(CASES["every batch committed"], tmp_path / "state")
    crash_during(root, 1)
    versions = {p.name.split("_")[0] for p in (root / "checkpoint/state/0/0").glob("*.changelog")}
    assert versions == {"1", "2"} and not (root / "checkpoint/commits/1").exists()
    assert (root / "output/_spark_metadata/1").exists() and (root / "checkpoint/offsets/1").exists()
