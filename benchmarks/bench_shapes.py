"""Requests per micro-batch of the query shapes (harness.shapes) on the embedded S3: the shim against Spark's
default manager, counted at the server for each shape's checkpoint keys.

``python -m benchmarks.bench_shapes [--shapes join_inner,window_append] [--json benchmarks/results/shapes.json]``

Each manager runs the shapes in one driver over the same input (harness.shapes_data: 4 files and 2 flush files a
side), to the end, without kills; the requests on ``<shape>/checkpoint/`` are divided by the shape's batches (its
commit log entries). Counts, not times: they do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checkpointfs.testing import EmbeddedS3
from harness.driver import start_driver
from harness.shapes_data import write_inputs

log = logging.getLogger(__name__)

DEFAULT_SHAPES = "join_inner,join_left_outer,window_append,dedup"
FILES = 4
TIMEOUT_S = 900


def measure(server: EmbeddedS3, work: Path, shapes: list[str], manager: str) -> dict[str, Any]:
    """Run ``shapes`` with ``manager`` to the end; per shape, requests per batch on its checkpoint keys."""
    prefix = f"bench-{manager}"
    first = len(server.requests)
    job = start_driver(server, work / f"{manager}.log", "harness.shapes",
                       ["--input", str(work / "input"), "--root", server.uri(prefix, scheme="s3a"),
                        "--local-out", str(work / f"local-{manager}"), "--shapes", ",".join(shapes),
                        "--manager", manager, "--state-store", "rocksdb", "--partitions", "1",
                        "--conf", "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true"])
    outcome = job.wait(timeout=TIMEOUT_S)
    if outcome["status"] != "ok":
        raise RuntimeError(f"{manager}: {outcome}\n{job.tail()}")
    requests = server.requests.all()[first:]
    out: dict[str, Any] = {}
    for shape in shapes:
        cp = f"{prefix}/{shape}/checkpoint/"
        batches = len([k for k in server.keys(cp + "commits/") if k.rsplit("/", 1)[-1].isdigit()])
        counts = Counter(r.operation for r in requests if r.key.startswith(cp))
        out[shape] = {"batches": batches, "total": round(sum(counts.values()) / batches, 1),
                      "per_operation": {op: round(n / batches, 1) for op, n in sorted(counts.items())}}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints the table and writes ``--json``."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_shapes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "shapes.json"))
    args = parser.parse_args(argv)
    shapes = args.shapes.split(",")
    with tempfile.TemporaryDirectory() as tmp, EmbeddedS3(min_part_size=1024) as server:
        work = Path(tmp)
        write_inputs(work / "input", FILES)
        results = {manager: measure(server, work, shapes, manager) for manager in ("shim", "default")}
    for shape in shapes:
        shim, default = results["shim"][shape], results["default"][shape]
        log.info("%-16s shim %5.1f requests/batch, default %5.1f (%.1fx); shim %s", shape, shim["total"],
                 default["total"], default["total"] / shim["total"], shim["per_operation"])
    Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
