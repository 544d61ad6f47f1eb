"""Checkpoint-file commits timed inside the JVM on ``gs://`` and ``abfs://``: the checkpointfs shim against Spark's
FileContext manager (its default) and FileSystem manager, on fake-gcs-server through Google's connector and on Azurite
through hadoop-azure's ABFS (flat namespace, Blob endpoint), with and without the latency model.

The harness is section 1's (``jvm-bench/``, :mod:`benchmarks.bench_jvm_inprocess`): one JVM on Spark 4.3's classpath
plus the store's connector, managers created by class name as Spark creates them, each commit
``createAtomic(new path, false)``, write, ``close()`` into a log directory made once, contenders interleaved in rounds
whose order rotates. The store sits behind the recording proxy (harness.servers.recording_proxy), which counts
every request and applies the latency model (20 ms a request, 200 MiB/s each way) when the harness asks for it. There
is no floor contender here (no SDK client of these stores on the harness's classpath): the model's floor of one
request is ``per_request_s``.

Results: benchmarks/results/jvm_cloud.json (per store, series and contender: commit time median, p90, min, max,
per-round medians, requests per commit by operation).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import bench_jvm_inprocess as inprocess
from benchmarks.latency import LATENCY
from checkpointfs.spark._jars import abfs_jars
from checkpointfs.spark.lines import DEFAULT_LINE
from checkpointfs.store.azure import client as azure_ops
from harness.servers.azurite import AzuriteServer, abfs_hadoop_conf
from harness.servers.fake_gcs import FakeGcsServer, ensure_connector_jar, running_connector
from harness.servers.recording_proxy import RecordingProxy, classify_gcs_renames

RESULTS = Path(__file__).parent / "results"
REPO = Path(__file__).resolve().parent.parent
BUCKET = "checkpoints"
CONTENDERS = ("spark_filecontext", "spark_filesystem", inprocess.SHIM)
STORES = ("gs", "abfs")


@contextmanager
def gcs_store() -> Iterator[tuple[RecordingProxy, dict[str, str], list[Path], str]]:
    """fake-gcs-server behind a recording proxy: the proxy, the harness's store properties, the connector's jar,
    and a description."""
    connector = running_connector()
    jar = ensure_connector_jar(connector)
    with FakeGcsServer([BUCKET]) as server, RecordingProxy(server.endpoint_url, classifier=classify_gcs_renames,
                                                           dialect="gcs") as proxy:
        conf = server.hadoop_conf(connector)
        conf["fs.gs.storage.root.url"] = proxy.endpoint_url + "/"
        store = {"root": f"gs://{BUCKET}", "marks.url": f"{proxy.endpoint_url}/storage/v1/b/{BUCKET}/o/{{key}}",
                 "marks.encode": "true", **{f"hadoop.{k}": v for k, v in conf.items()}}
        yield proxy, store, [jar], f"fake-gcs-server, Google's connector {connector.version} ({jar.name})"


def _classify_azurite(method: str, path: str, query: str, headers: dict[str, str]) -> tuple[str, str, str]:
    return azure_ops.classify(method, path, query, headers, account_in_path=True)


@contextmanager
def azure_store() -> Iterator[tuple[RecordingProxy, dict[str, str], list[Path], str]]:
    """Azurite behind a recording proxy, reached through ABFS on a flat-namespace account over the Blob endpoint."""
    jars = abfs_jars(DEFAULT_LINE, shim_dir=REPO / "jvm-shim")
    if not jars:
        raise RuntimeError("hadoop-azure is not gathered for this line (jvm-shim/build.sh does it: make setup)")
    with AzuriteServer([BUCKET]) as server, RecordingProxy(server.endpoint_url.rsplit("/", 1)[0],
                                                           classifier=_classify_azurite, dialect="azure") as proxy:
        host = proxy.endpoint_url.split("://", 1)[1]
        conf = abfs_hadoop_conf(host, server.account_name, server.account_key)
        store = {"root": f"abfs://{BUCKET}@{server.account_name}.dfs.core.windows.net",
                 "marks.url": f"{proxy.endpoint_url}/{server.account_name}/{BUCKET}/{{key}}",
                 **{f"hadoop.{k}": v for k, v in conf.items()}}
        azure = next(j.name for j in jars if j.name.startswith("hadoop-azure-"))
        yield proxy, store, jars, f"Azurite, hadoop-azure ABFS ({azure}), flat namespace over the Blob endpoint"


def run_store(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One store's harness run, summarized as section 1's."""
    opened = gcs_store() if name == "gs" else azure_store()
    with opened as (proxy, store, jars, description), \
            tempfile.TemporaryDirectory(prefix=f"checkpointfs-jvm-{name}-") as tmp:
        harness = inprocess.run_harness(proxy, store, Path(tmp), args, extra_classpath=jars)
        requests = inprocess.requests_by_phase(proxy.requests.all())
    return {"store": description, **inprocess.summarize(harness, requests)}


def main(argv: Sequence[str] | None = None) -> int:
    """Run; write benchmarks/results/jvm_cloud.json."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_jvm_cloud", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--rounds", type=int, default=5, help="rounds of small commits (every contender each round)")
    parser.add_argument("--commits", type=int, default=30, help="small commits per contender and round, no latency")
    parser.add_argument("--latency-commits", type=int, default=15, help="the same, with the latency model")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up commits per contender before the first series")
    parser.add_argument("--latency-warmup", type=int, default=5, help="warm-up commits per contender, latency series")
    parser.add_argument("--contenders", nargs="*", choices=list(inprocess.ALL), default=list(CONTENDERS))
    parser.add_argument("--json", type=Path, default=RESULTS / "jvm_cloud.json")
    args = parser.parse_args(argv)
    # section 1's harness options this benchmark does not vary: no large commits, no extra settings
    args.sizes, args.latency_sizes, args.repeat, args.set, args.jvm_option = [], [], 1, [], None
    started = time.time()
    stores = {name: run_store(name, args) for name in args.stores}
    doc: dict[str, Any] = {
        "harness": "jvm-bench (Maven exec:exec, one JVM, no py4j); contenders interleaved, order rotating; requests "
                   "counted at a recording proxy in front of the emulator, which applies the latency model",
        "spark": f"pyspark {DEFAULT_LINE.pyspark} jars (Hadoop {DEFAULT_LINE.hadoop})",
        "latency_model": {"per_request_s": LATENCY.per_request_s,
                          "bandwidth_bytes_per_s": LATENCY.bandwidth_bytes_per_s},
        "cpus": os.cpu_count(), "rounds": args.rounds,
        "commits_per_round": {"local": args.commits, "latency": args.latency_commits},
        "warmup_commits": {"local": args.warmup, "latency": args.latency_warmup},
        "started_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        "seconds": round(time.time() - started), "stores": stores,
    }
    for name, part in stores.items():
        print(f"== {name}: {part['store']}")
        inprocess.print_summary(part)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
