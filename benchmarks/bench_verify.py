"""Benchmark of ``checkpointfs verify`` on a large file sink, on the embedded S3: files verified per second and the
verifier's peak RSS.

The store is populated in moto's backend directly, in this process (PUTting a million objects over HTTP runs at about
150 per second here, nearly two hours); the manifest is one ``.compact`` file written the same way. The verifier then
runs as its own process (``python -m checkpointfs.cli verify --json``) against the embedded S3 over HTTP, so its
RSS is its own and the server does not share its interpreter.

moto's ListObjectsV2 gathers and sorts every key of the bucket for each page of 1000 (seconds per page at a million
keys), where S3 answers a page in tens of milliseconds. So the server answers listings from a sorted index of the
bucket (same pages, same continuation tokens); ``--stock-listing`` measures moto's own listing instead. Usage::

    python -m benchmarks.bench_verify --entries 1000000
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import S3Backend, s3_backends

from checkpointfs.log import SinkFileStatus
from checkpointfs.testing import EmbeddedS3

BUCKET = "bench-verify"
OUTPUT = "out"
CHECKPOINT = "ck"


_CHILD = """
import sys
from checkpointfs.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as status:
    sys.stderr.write(next(line for line in status if line.startswith("VmHWM:")))
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
sys.stderr.write("CPU: %s" % (usage.ru_utime + usage.ru_stime) + chr(10))
sys.exit(code)
"""
"""The verifier's process: the CLI, then its peak RSS (VmHWM, which counts this program's memory only; the
getrusage figure of a child also counts the parent's pages it had before exec)."""


def populate(entries: int) -> float:
    """Write ``entries`` part files (empty), their manifest and a one-batch checkpoint into moto's backend."""
    started = time.monotonic()
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    lines = ["v1"]
    for n in range(entries):
        key = f"{OUTPUT}/part-{n:07d}-c000.json"
        backend.put_object(BUCKET, key, b"")
        lines.append(SinkFileStatus(f"s3a://{BUCKET}/{key}", 0, modification_time=n).to_json())
    backend.put_object(BUCKET, f"{OUTPUT}/_spark_metadata/0", "\n".join(lines).encode())
    backend.put_object(BUCKET, f"{CHECKPOINT}/offsets/0",
                       b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n-')
    backend.put_object(BUCKET, f"{CHECKPOINT}/commits/0", b'v1\n{"nextBatchWatermarkMs":0}')
    return time.monotonic() - started


def index_listings() -> None:
    """Answer ListObjectsV2 without a delimiter from a sorted index of the bucket's keys (rebuilt when the number
    of keys changes), instead of moto's sort of the whole bucket per page."""
    original = S3Backend.list_objects_v2
    index: dict[str, list[str]] = {}

    def list_objects_v2(self: Any, bucket: Any, prefix: str | None, delimiter: str | None,
                        continuation_token: str | None, start_after: str | None, max_keys: int) -> Any:
        if delimiter:
            return original(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys)
        names = index.get(bucket.name)
        if names is None or len(names) != len(bucket.keys):
            names = index[bucket.name] = sorted(bucket.keys.keys())
        after = self._pagination_tokens.get(continuation_token) if continuation_token else start_after
        position = bisect.bisect_right(names, after) if after else bisect.bisect_left(names, prefix or "")
        page = []
        while position < len(names) and len(page) <= max_keys and names[position].startswith(prefix or ""):
            page.append(bucket.keys[names[position]])
            position += 1
        truncated = len(page) > max_keys
        page = page[:max_keys]
        token = None
        if truncated:
            token = hashlib.md5(page[-1].name.encode()).hexdigest()
            self._pagination_tokens[token] = page[-1].name
        return page, truncated, token

    S3Backend.list_objects_v2 = list_objects_v2  # type: ignore[method-assign]


def run(entries: int) -> dict[str, Any]:
    """Populate, verify in a child process, and return the figures."""
    with EmbeddedS3([BUCKET]) as s3:
        populate_s = populate(entries)
        env = {**os.environ, "AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
               "AWS_DEFAULT_REGION": s3.region}
        started, server_cpu = time.monotonic(), time.process_time()
        load = os.getloadavg()[0]
        done = subprocess.run([sys.executable, "-c", _CHILD, "verify", s3.uri(CHECKPOINT), "--sink", s3.uri(OUTPUT),
                               "--endpoint-url", s3.endpoint_url, "--json"],
                              capture_output=True, text=True, env=env, check=False)
        elapsed, server_cpu = time.monotonic() - started, time.process_time() - server_cpu
        if done.returncode != 0:
            raise SystemExit(f"verify exited {done.returncode}: {done.stderr[-2000:]}{done.stdout[-2000:]}")
        peak_kib = int(done.stderr.rsplit("VmHWM:", 1)[1].split()[0])
        verifier_cpu = float(done.stderr.rsplit("CPU:", 1)[1].split()[0])
        report = json.loads(done.stdout)
        counts = s3.requests.counts()
    assert report["checked"]["sink_files"] == entries, report["checked"]
    return {"entries": entries, "verify_s": round(elapsed, 1), "files_per_s": round(entries / elapsed),
            "verifier_peak_rss_mib": round(peak_kib / 1024, 1), "populate_s": round(populate_s, 1),
            "verifier_cpu_s": round(verifier_cpu, 1), "server_cpu_s": round(server_cpu, 1),
            "files_per_verifier_cpu_s": round(entries / verifier_cpu),
            "load_average_at_start": round(load, 1), "cores": os.cpu_count(),
            "requests": counts}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--stock-listing", action="store_true", help="moto's own ListObjectsV2 (slow at scale)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="also append the run to FILE (a JSON list of runs, e.g. benchmarks/results/verify.json, "
                             "the runs docs/tools.md quotes)")
    args = parser.parse_args(argv)
    if not args.stock_listing:
        index_listings()
    result = run(args.entries)
    result["listing"] = "moto" if args.stock_listing else "indexed"
    result["measured_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps(result, indent=2))
    if args.json is not None:
        runs = json.loads(args.json.read_text()) if args.json.is_file() else []
        args.json.write_text(json.dumps([*runs, result], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
