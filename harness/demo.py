"""The demo of ``make demo``: checkpoint commits on an embedded S3, direct write against a rename.

It writes a stream of checkpoint-sized files (offsets and commits of a micro-batch query) through
DirectWriteManager and through a rename-over-S3 baseline, prints the requests each commit cost at the server and
the commits per second, then shows that cancelled writes, small or multipart, left nothing visible."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence

from benchmarks.baselines import rename_commit
from checkpointfs import DirectWriteManager
from checkpointfs.testing import EmbeddedS3
from harness.servers.store_check import pass_store_check

BUCKET = "checkpoints"


def checkpoint_file(batch: int) -> bytes:
    """An offsets-log entry as Spark writes it, about 400 bytes."""
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_763_700_000_000 + batch * 1000,
            "conf": {"spark.sql.shuffle.partitions": "200", "spark.sql.streaming.stateStore.providerClass":
                     "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}}
    return ("v1\n" + json.dumps(meta, separators=(",", ":")) + "\n" + json.dumps({"logOffset": batch})).encode()


def _measure(s3: EmbeddedS3, commits: int, commit: Callable[[int], None]) -> tuple[dict[str, int], float]:
    s3.requests.clear()
    start = time.perf_counter()
    for batch in range(commits):
        commit(batch)
    elapsed = time.perf_counter() - start
    return s3.requests.counts(), commits / elapsed


def _per_commit(counts: dict[str, int], commits: int) -> str:
    total = sum(counts.values()) / commits
    detail = ", ".join(f"{op} {n / commits:g}" for op, n in sorted(counts.items()))
    return f"{total:g} ({detail})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns 0 when every check held."""
    parser = argparse.ArgumentParser(prog="python -m harness.demo", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--commits", type=int, default=300, help="checkpoint files per manager (default 300)")
    args = parser.parse_args(argv)
    with EmbeddedS3([BUCKET], min_part_size=1024) as s3:
        print(f"embedded S3 at {s3.endpoint_url}; {args.commits} checkpoint files per manager\n")
        direct = DirectWriteManager(**s3.manager_options(), part_size=64 * 1024)
        client = s3.client()

        # Before its first put-if-absent to a bucket, a process checks that the store refuses a second one (and,
        # before its first multipart one, CompleteMultipartUpload's): once, here, so the table shows commits alone.
        s3.requests.clear()
        pass_store_check(direct, s3.uri("direct/offsets/0"), multipart=True)
        checked = s3.requests.counts()
        print(f"store check, once per bucket and process: {sum(checked.values())} requests "
              f"({', '.join(f'{op} {n}' for op, n in sorted(checked.items()))}); the store refused the second "
              "put-if-absent and the second multipart completion\n")

        def direct_commit(batch: int) -> None:
            with direct.create_atomic(s3.uri(f"direct/offsets/{batch}")) as out:
                out.write(checkpoint_file(batch))

        def renamed_commit(batch: int) -> None:
            rename_commit(client, BUCKET, f"rename/offsets/{batch}", checkpoint_file(batch))

        rows = [("DirectWriteManager", *_measure(s3, args.commits, direct_commit)),
                ("rename over S3 (PUT temp, COPY, DELETE)", *_measure(s3, args.commits, renamed_commit))]
        print(f"{'manager':<42} {'requests per commit':<58} commits/s")
        for name, counts, rate in rows:
            print(f"{name:<42} {_per_commit(counts, args.commits):<58} {rate:8.1f}")
        (_, direct_counts, direct_rate), (_, rename_counts, rename_rate) = rows
        print(f"\nrename/direct: {sum(rename_counts.values()) / sum(direct_counts.values()):.1f}x the requests, "
              f"{direct_rate / rename_rate:.2f}x the commit rate for direct write")

        ok = sum(direct_counts.values()) == args.commits and "CopyObject" not in direct_counts
        for batch in (0, args.commits - 1):
            ok &= direct.open(s3.uri(f"direct/offsets/{batch}")).read() == checkpoint_file(batch)

        s3.requests.clear()
        for i in range(20):
            out = direct.create_atomic(s3.uri(f"direct/cancelled/{i}"))
            out.write(os.urandom(200 if i % 2 else 200 * 1024))  # half small, half multipart (parts already sent)
            out.cancel()
        visible = s3.keys("direct/cancelled/")
        uploads = s3.open_uploads()
        print(f"\nforced cancels: 20 (10 small, 10 multipart with {s3.requests.counts().get('UploadPart', 0)} parts "
              f"sent); objects visible afterwards: {len(visible)}; multipart uploads left open: {len(uploads)}")
        ok &= not visible and not uploads
        print("\nall checks held" if ok else "\nA CHECK FAILED")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
