"""Where a SIGKILL of the driver breaks a checkpoint format v2 restart: the same stateful query through the shim and
through Spark's default manager, on the embedded S3, killed at one point of micro-batch ``--batch``, then restarted
with ``availableNow``.

``python -m harness.v2_kill_points --points offsets,state,sink,commit --managers shim,default --runs 3``

The query is harness.job's ``dedup`` on RocksDB with changelog checkpointing and
``spark.sql.streaming.stateStore.checkpointFormatVersion=2``, 2 partitions, one input file per micro-batch. Kill
points, each "as soon as the server answered" the write of (for Spark's default manager: the COPY onto the final
key, its rename):

- ``offsets``: ``offsets/<batch>``, the batch planned;
- ``state``: the first state file of version ``<batch> + 1`` (a RocksDB changelog or zip), the state upload;
- ``sink``: the file sink's log entry ``_spark_metadata/<batch>``, the sink committed, the commit log not yet;
- ``commit``: ``commits/<batch>``, the batch done.

Each run prints one JSON line (restart status, the error's first line, exactly-once of the output read back from the
sink log); the last line tallies the restarts per (point, manager).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from checkpointfs.testing import EmbeddedS3, Request
from harness.driver import kill_when, start_job

V2_CONF = ("--state-store", "rocksdb",
           "--conf", "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true",
           "--conf", "spark.sql.streaming.stateStore.checkpointFormatVersion=2")
FINAL_WRITES = ("PutObject", "CopyObject", "CompleteMultipartUpload")


def kill_point(point: str, checkpoint: str, output: str, batch: int) -> Callable[[Request], bool]:
    """The request after whose answer the driver is killed."""
    def written(key: str) -> Callable[[Request], bool]:
        return lambda r: r.key == key and r.operation in FINAL_WRITES and r.status == 200

    if point == "offsets":
        return written(f"{checkpoint}/offsets/{batch}")
    if point == "sink":
        return written(f"{output}/_spark_metadata/{batch}")
    if point == "commit":
        return written(f"{checkpoint}/commits/{batch}")
    if point == "state":
        name = re.compile(rf"^\.?{batch + 1}[._].*(zip|changelog)")
        return lambda r: (r.key.startswith(f"{checkpoint}/state/") and r.operation in FINAL_WRITES
                          and r.status == 200 and bool(name.match(r.key.rsplit("/", 1)[-1])))
    raise ValueError(point)


def sink_ids(server: EmbeddedS3, output: str) -> list[int]:
    """Every id in the files the sink log names (batch files, no compaction within a few batches)."""
    client = server.client(admin=True)
    bucket = server.buckets[0]
    ids: list[int] = []
    for key in server.keys(f"{output}/_spark_metadata/"):
        if not key.rsplit("/", 1)[-1].isdigit():
            continue
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        for line in body.splitlines()[1:]:
            data_key = json.loads(line)["path"].split(f"://{bucket}/", 1)[1]
            data = client.get_object(Bucket=bucket, Key=data_key)["Body"].read().decode()
            ids.extend(int(json.loads(row)["id"]) for row in data.splitlines() if row)
    return sorted(ids)


def one_run(server: EmbeddedS3, workdir: Path, point: str, manager: str, files: int, batch: int) -> dict[str, Any]:
    prefix = f"kill/{uuid.uuid4().hex[:10]}"
    checkpoint, output = f"{prefix}/checkpoint", f"{prefix}/output"
    input_dir = workdir / prefix / "input"
    input_dir.mkdir(parents=True)
    expected: set[int] = set()
    for n in range(files):
        ids = [n * 5 + i for i in range(5)] + ([n * 5 - 1] if n else [])
        expected.update(ids)
        path = input_dir / f"part-{n:04d}.json"
        path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    common: dict[str, Any] = dict(input_dir=input_dir, output=server.uri(output, scheme="s3a"),
                                  checkpoint=server.uri(checkpoint, scheme="s3a"), query="dedup", manager=manager,
                                  extra=V2_CONF)
    first = start_job(server, workdir / prefix / "first.log", **common)
    killed_at = kill_when(server, first, kill_point(point, checkpoint, output, batch))
    if killed_at is None:
        return {"point": point, "manager": manager, "status": "not killed", "first": first.wait()}
    state = {"commits": sorted(k.rsplit("/", 1)[-1] for k in server.keys(f"{checkpoint}/commits/")),
             "sink_log": sorted(k.rsplit("/", 1)[-1] for k in server.keys(f"{output}/_spark_metadata/"))}
    second = start_job(server, workdir / prefix / "restart.log", **common)
    outcome = second.wait()
    result: dict[str, Any] = {"point": point, "manager": manager, "status": outcome["status"], "at_kill": state}
    if outcome["status"] != "ok":
        result["error"] = re.sub(r"Query \[id = [^]]*\] ", "", outcome.get("error", "")).splitlines()[0][:220]
    else:
        result["exactly_once"] = sink_ids(server, output) == sorted(expected)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.v2_kill_points", description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default="offsets,state,sink,commit")
    parser.add_argument("--managers", default="shim,default")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--batch", type=int, default=2, help="the micro-batch killed")
    args = parser.parse_args(argv)
    tally: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="v2-kill-") as tmp, EmbeddedS3() as server:
        for run in range(args.runs):
            for point in args.points.split(","):
                for manager in args.managers.split(","):
                    result = one_run(server, Path(tmp), point, manager, args.files, args.batch)
                    tally[f"{point}/{manager}/{result['status']}"] += 1
                    print(json.dumps({"run": run + 1, **result}), flush=True)
    print(json.dumps({"tally": dict(sorted(tally.items()))}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
