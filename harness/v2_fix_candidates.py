"""The candidate fixes of Spark's format-v2 restart failure (docs/upstream/), tried on Spark itself: no checkpointfs,
local disk.

``python -m harness.v2_fix_candidates [--candidates reuse,empty,first-attempt,rerun-state]``

Each run makes the failure state as ``harness.v2_restart_repro`` does (a dropDuplicates query on RocksDB, changelog
checkpointing, state format v2, 2 partitions, three input files run to the end with ``availableNow``, then
``commits/2`` deleted: the sink has batch 2, the commit log not), adds a fourth input file that repeats ids of the
first three and brings new ones, and restarts after one candidate:

- ``reuse``: ``commits/2`` written with the previous commit's state unique ids (what "reuse the previous commit's
  checkpoint ids when the sink skipped the batch" would record);
- ``empty``: ``commits/2`` written with an empty id list for the operator (what skipping the assertion would record:
  ``getStateStoreCheckpointInfo`` returns the empty array it collected);
- ``first-attempt``: ``commits/2`` written with the unique ids of the state files the first attempt of batch 2 wrote
  (``3_<uuid>.changelog``, one per partition);
- ``rerun-state``: nothing written; the sink is a ``foreachBatch`` whose function, for a batch it already wrote,
  runs the batch's plan into Spark's ``noop`` sink instead of returning (the proposed fix, done by the sink: the
  stateful tasks run, their rows are discarded).

The restart runs batch 2 (unless committed by the candidate) and batch 3. Each run prints one JSON line: the
restart's status and error, and whether the output holds every id exactly once (the new batch's repeated ids must
be dropped: the state it loaded is right).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.v2_restart_repro import ROCKSDB_PROVIDER, RUN_TIMEOUT_S

CANDIDATES = ("reuse", "empty", "first-attempt", "rerun-state")
UUID = re.compile(r"^3_([0-9a-f-]{36})\.changelog$")


def run_query(workdir: Path, foreach_batch: bool) -> dict[str, Any]:
    """One driver: the query over ``workdir/input`` until every file is processed; the ids in the output."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("v2-fix-candidates")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
             .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
             .config("spark.sql.streaming.stateStore.checkpointFormatVersion", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    frame = (spark.readStream.schema("id LONG").option("maxFilesPerTrigger", 1).json(str(workdir / "input"))
             .dropDuplicates(["id"]))
    writer = frame.writeStream.option("checkpointLocation", str(workdir / "checkpoint"))
    output = workdir / "output"
    if foreach_batch:
        def write_once(batch: Any, batch_id: int) -> None:
            target = output / str(batch_id)
            if target.exists():
                batch.write.format("noop").mode("overwrite").save()  # the state runs, the rows go nowhere
                return
            batch.write.json(str(target))

        writer = writer.foreachBatch(write_once)
    else:
        writer = writer.format("json").option("path", str(output))
    outcome: dict[str, Any]
    try:
        writer.trigger(availableNow=True).start().awaitTermination()
        outcome = {"status": "ok"}
    except Exception as e:  # noqa: BLE001 - the outcome of the run, with Spark's error
        outcome = {"status": "failed", "error": re.sub(r"Query \[[^]]*\] ", "", str(e).splitlines()[0])[:240]}
    read = str(output / "*") if foreach_batch else str(output)
    outcome["ids"] = sorted(int(r.id) for r in spark.read.schema("id LONG").json(read).collect())
    spark.stop()
    return outcome


def driver(workdir: Path, foreach_batch: bool) -> dict[str, Any]:
    """The query in a driver process of its own; its closing JSON line."""
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    args = [sys.executable, "-m", "harness.v2_fix_candidates", "--phase", "run", "--workdir", str(workdir)]
    done = subprocess.run([*args, *(["--foreach-batch"] if foreach_batch else [])], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, env=env, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise RuntimeError(f"driver exited {done.returncode} without a result:\n{done.stderr[-3000:]}")


def write_input(workdir: Path, n: int, ids: list[int]) -> None:
    path = workdir / "input" / f"part-{n:04d}.json"
    path.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))


def one_run(candidate: str) -> dict[str, Any]:
    """The failure state, a fourth input file, the candidate, and a restart."""
    foreach_batch = candidate == "rerun-state"
    with tempfile.TemporaryDirectory(prefix="v2-fix-") as tmp:
        workdir = Path(tmp)
        (workdir / "input").mkdir()
        expected: set[int] = set()
        for n in range(3):
            ids = [n * 5 + i for i in range(5)] + ([n * 5 - 1] if n else [])
            write_input(workdir, n, ids)
            expected.update(ids)
        first = driver(workdir, foreach_batch)
        if first["status"] != "ok":
            return {"candidate": candidate, "first": first}
        commits = workdir / "checkpoint" / "commits"
        for name in ("2", ".2.crc"):
            (commits / name).unlink(missing_ok=True)
        write_input(workdir, 3, [0, 7, 14, 15, 16])  # three ids seen before, two new
        expected.update([15, 16])
        previous = (commits / "1").read_text().splitlines()
        if candidate == "reuse":
            (commits / "2").write_text("\n".join(previous))
        elif candidate == "empty":
            (commits / "2").write_text('v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":{"0":[]}}')
        elif candidate == "first-attempt":
            unique_ids = [[m.group(1) for p in sorted((workdir / "checkpoint/state/0" / str(part)).iterdir())
                           if (m := UUID.match(p.name))] for part in range(2)]
            body = {"nextBatchWatermarkMs": 0, "stateUniqueIds": {"0": unique_ids}}
            (commits / "2").write_text("v2\n" + json.dumps(body, separators=(",", ":")))
        restart = driver(workdir, foreach_batch)
        ids = restart.pop("ids")
        return {"candidate": candidate, **restart, "exactly_once": ids == sorted(expected),
                "duplicates": sorted({i for i in ids if ids.count(i) > 1}),
                "commits": sorted(p.name for p in commits.iterdir() if not p.name.startswith("."))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.v2_fix_candidates",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--phase", choices=["all", "run"], default="all", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--foreach-batch", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase == "run":
        print(json.dumps(run_query(args.workdir, args.foreach_batch)), flush=True)
        return 0
    import pyspark

    for candidate in args.candidates.split(","):
        print(json.dumps({"pyspark": pyspark.__version__, **one_run(candidate)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
