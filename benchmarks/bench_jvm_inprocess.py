"""JVM commit benchmark timed inside the JVM: checkpoint-file commits through the checkpointfs shim, Spark's three
checkpoint managers and one AWS SDK v2 PutObject (the floor), with no py4j between the clock and the managers.

This driver starts the embedded S3, then has Maven build and run the harness ``jvm-bench/`` (a plain Java program,
``io.checkpointfs.bench.CommitBench``) on Spark 4.3's classpath: pyspark's jars plus the jars
:func:`checkpointfs.spark.spark_conf` puts on ``spark.jars`` (the shim, hadoop-aws and its AWS SDK, and
spark-hadoop-cloud for Spark's Abortable manager), with the ``fs.s3a.*`` settings ``spark_conf`` gives Spark. The
harness runs two series in one JVM, first without the latency model, then with it (it asks this driver to switch
through a hand-shake file, so the JIT stays warm). In each series: a warm-up per contender, then rounds of small
(~250 B offsets-file) commits per contender, contenders interleaved with their order rotating every round, each
commit to a new path of a log directory made once (untimed); then large commits (64, 128, 512 MiB) the same way.
Requests are counted at the server: the harness brackets every measured batch with marker HEADs, and this driver
splits the server's request log at them.

Results: benchmarks/results/jvm_inprocess.json (per contender and series: median, p90, min, max, per-round
medians, requests per commit by operation, ratios to the floor).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from benchmarks.latency import LATENCY, MIB
from checkpointfs.spark import spark_conf
from checkpointfs.spark._jars import conformance_jars
from checkpointfs.spark.jvm_manager import ABORTABLE_STREAM_MANAGER, FILE_CONTEXT_MANAGER, FILE_SYSTEM_MANAGER
from checkpointfs.spark.lines import DEFAULT_LINE
from checkpointfs.testing import EmbeddedS3, FaultPlan
from checkpointfs.testing.requests import Request

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
POM = REPO / "jvm-bench" / "pom.xml"
BUCKET = "checkpoints"
PREFIX = "jvm-bench"
FLOOR = "raw_put_floor"
SHIM = "jvm_shim"
CONTENDERS = {
    "spark_filecontext": FILE_CONTEXT_MANAGER,
    "spark_filesystem": FILE_SYSTEM_MANAGER,
    "spark_abortable": ABORTABLE_STREAM_MANAGER,
    SHIM: "io.checkpointfs.spark.DirectWriteCheckpointFileManager",
    # The shim writing with S3A's own block-upload defaults (its own S3A instance, uncached, so that the settings
    # reach it): what the shim did before it chose checkpoint-write settings.
    "jvm_shim_s3a_defaults": "io.checkpointfs.spark.DirectWriteCheckpointFileManager:fs.s3a.impl.disable.cache=true;"
                             "checkpointfs.s3a.fast.upload.buffer=inherit;checkpointfs.s3a.multipart.size=inherit;"
                             "checkpointfs.s3a.fast.upload.active.blocks=inherit",
    FLOOR: "floor",
}
DIAGNOSTICS = {
    "s3a_create": "s3a-create",
    "s3a_create_bytebuffer": "s3a-create:fs.s3a.fast.upload.buffer=bytebuffer",
    "s3a_create_array": "s3a-create:fs.s3a.fast.upload.buffer=array",
    "s3a_create_noaudit": "s3a-create:fs.s3a.audit.enabled=false",
    "s3a_create_bytebuffer_16m": "s3a-create:fs.s3a.fast.upload.buffer=bytebuffer;fs.s3a.multipart.size=16M",
    "s3a_create_bytebuffer_32m": "s3a-create:fs.s3a.fast.upload.buffer=bytebuffer;fs.s3a.multipart.size=32M",
    "put_conditional": "floor-conditional",
}
"""Contenders for finding where the shim's time goes, not run by default: S3A's conditional create without the
shim around it, and the floor's PutObject carrying the shim's If-None-Match and write-id metadata."""
LABELS = {
    "spark_filecontext": "Spark default: FileContext rename",
    "spark_filesystem": "Spark FileSystem rename",
    "spark_abortable": "Spark AbortableStream",
    SHIM: "checkpointfs JVM shim",
    "jvm_shim_s3a_defaults": "checkpointfs JVM shim with S3A's default block uploads (disk, 64M)",
    FLOOR: "AWS SDK v2 PutObject (floor)",
    "s3a_create": "S3A conditional create (FileSystem API, no shim)",
    "s3a_create_bytebuffer": "the same, fs.s3a.fast.upload.buffer=bytebuffer",
    "s3a_create_array": "the same, fs.s3a.fast.upload.buffer=array",
    "s3a_create_noaudit": "the same, fs.s3a.audit.enabled=false",
    "s3a_create_bytebuffer_16m": "the same, bytebuffer and fs.s3a.multipart.size=16M",
    "s3a_create_bytebuffer_32m": "the same, bytebuffer and fs.s3a.multipart.size=32M",
    "put_conditional": "AWS SDK v2 PutObject, If-None-Match and write-id metadata",
}
ALL = {**CONTENDERS, **DIAGNOSTICS}
SERIES = {"local": FaultPlan, "latency": lambda: FaultPlan(latency=LATENCY)}


def classpath() -> str:
    """Spark 4.3's run-time classpath as a Spark driver with configure() has it: pyspark's jars, then spark.jars."""
    import pyspark

    conf = spark_conf(None, extra_jars=conformance_jars())
    return ":".join([str(Path(pyspark.__file__).parent / "jars" / "*"), *conf["spark.jars"].split(",")])


def hadoop_settings(s3: EmbeddedS3) -> dict[str, str]:
    """The fs.s3a.* settings configure() gives Spark for this endpoint."""
    conf = spark_conf(s3, extra_jars=conformance_jars())
    return {k.removeprefix("spark.hadoop."): v for k, v in conf.items() if k.startswith("spark.hadoop.")}


def _properties(values: dict[str, str]) -> str:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")
    return "".join(f"{escape(k)}={escape(v)}\n" for k, v in values.items())


class FaultTarget(Protocol):
    """What serves the harness's requests and takes a fault plan: the embedded S3, or a recording proxy."""

    @property
    def faults(self) -> FaultPlan | None: ...

    @faults.setter
    def faults(self, plan: FaultPlan) -> None: ...


def run_harness(target: FaultTarget, store: dict[str, str], work: Path, args: argparse.Namespace, *,
                extra_classpath: Sequence[Path] = ()) -> dict[str, Any]:
    """Run the Maven harness with the store's properties ``store`` (its root, marks, ``hadoop.*`` settings),
    switching ``target``'s latency model on when the harness asks; its JSON document."""
    out = work / "harness.json"
    values = {
        "prefix": PREFIX, "series": ",".join(SERIES),
        "contenders": ",".join(f"{n}={ALL[n]}" for n in args.contenders),
        "small.rounds": str(args.rounds), "small.commits.local": str(args.commits),
        "small.commits.latency": str(args.latency_commits), "warmup.commits.local": str(args.warmup),
        "warmup.commits.latency": str(args.latency_warmup), "sizes.repeat": str(args.repeat),
        "sizes.local": ",".join(str(int(m * MIB)) for m in args.sizes),
        "sizes.latency": ",".join(str(int(m * MIB)) for m in args.latency_sizes),
        "handshake.dir": str(work), "out": str(out), **store,
        **{f"hadoop.{k}": v for k, _, v in (s.partition("=") for s in args.set)},
    }
    config = work / "bench.properties"
    config.write_text(_properties(values))
    config.chmod(0o600)  # holds the emulated store's (throw-away) credentials
    path = ":".join([classpath(), *(str(j) for j in extra_classpath)])
    command = ["mvn", "-q", "-B", "--no-transfer-progress", "-Dstyle.color=never", "-f", str(POM), "compile",
               "exec:exec", f"-Dbench.classpath={path}", f"-Dbench.config={config}",
               f"-Dhadoop.version={DEFAULT_LINE.group.hadoop_compile}",
               f"-Daws.sdk.version={DEFAULT_LINE.hadoop_deps.aws_sdk}",
               *([f"-Dbench.jvmopt={args.jvm_option}"] if args.jvm_option else [])]
    target.faults = SERIES["local"]()
    process = subprocess.Popen(command, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    try:
        while process.poll() is None:
            for request in work.glob("*.request"):
                series = request.stem
                plan = target.faults = SERIES[series]()
                print(f"-- series {series}: {plan.latency or 'no latency model'}", flush=True)
                request.unlink()
                (work / f"{series}.ready").write_text(series)
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        target.faults = FaultPlan()
    if process.returncode:
        raise RuntimeError(f"the JVM harness failed (exit status {process.returncode}): {' '.join(command[:8])}")
    return dict(json.loads(out.read_text()))


def s3_properties(s3: EmbeddedS3) -> dict[str, str]:
    """The harness's store properties for the embedded S3: its endpoint and credentials (the floor's and the
    markers' client), and the fs.s3a.* settings configure() gives Spark."""
    return {"endpoint": s3.endpoint_url, "region": s3.region, "bucket": BUCKET, "access.key": s3.access_key,
            "secret.key": s3.secret_key, **{f"hadoop.{k}": v for k, v in hadoop_settings(s3).items()}}


def requests_by_phase(log: Sequence[Request]) -> dict[str, Counter[str]]:
    """Operations the server saw between each phase's begin and end markers (the markers themselves excluded)."""
    marks = f"{PREFIX}/_marks/"
    out: dict[str, Counter[str]] = {}
    current: str | None = None
    for r in log:
        if r.key.startswith(marks):
            which, _, phase = r.key[len(marks):].partition("/")
            current = phase if which == "begin" else None
            if which == "begin":
                out[phase] = Counter()
        elif current is not None:
            out[current][r.operation] += 1
    return out


def _stats(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"median": statistics.median(ordered), "p90": ordered[int(0.9 * (len(ordered) - 1))],
            "min": ordered[0], "max": ordered[-1], "mean": statistics.fmean(ordered)}


def summarize(harness: dict[str, Any], requests: dict[str, Counter[str]]) -> dict[str, Any]:
    """Per series: small commits per contender, and large commits per size and contender."""
    doc: dict[str, Any] = {}
    for series in SERIES:
        phases = [p for p in harness["phases"] if p["series"] == series]
        names = [n for n in ALL if any(p["contender"] == n for p in phases)]
        small: dict[str, Any] = {}
        for name in names:
            mine = [p for p in phases if p["kind"] == "small" and p["contender"] == name]
            if not mine:
                continue
            times = [t / 1e9 for p in mine for t in p["times_ns"]]
            ops: Counter[str] = sum((requests.get(p["id"], Counter()) for p in mine), Counter())
            s = _stats(times)
            small[name] = {
                "label": LABELS[name], "runs": len(mine), "commits": len(times), "file_bytes": mine[0]["size_bytes"],
                "commit_ms_median": s["median"] * 1000, "commit_ms_p90": s["p90"] * 1000,
                "commit_ms_min": s["min"] * 1000, "commit_ms_max": s["max"] * 1000,
                "commit_ms_mean": s["mean"] * 1000,
                "round_medians_ms": [statistics.median(p["times_ns"]) / 1e6 for p in mine],
                "jvm_cpu_ms_per_commit": sum(p["cpu_ns"] for p in mine) / len(times) / 1e6,
                "requests_per_commit": sum(ops.values()) / len(times),
                "requests_per_commit_by_operation": {op: n / len(times) for op, n in sorted(ops.items())},
            }
        if FLOOR in small:
            floor = small[FLOOR]
            for row in small.values():
                row["latency_vs_floor"] = row["commit_ms_median"] / floor["commit_ms_median"]
                per_round = [a / b for a, b in zip(row["round_medians_ms"], floor["round_medians_ms"], strict=True)]
                row["round_ratio_vs_floor_min"] = min(per_round)
                row["round_ratio_vs_floor_max"] = max(per_round)
                row["requests_vs_floor"] = row["requests_per_commit"] / floor["requests_per_commit"]
        sizes: list[dict[str, Any]] = []
        for size in sorted({p["size_bytes"] for p in phases if p["kind"] == "size"}):
            row = {"size_bytes": size}
            for name in names:
                mine = [p for p in phases if p["kind"] == "size" and p["contender"] == name and p["size_bytes"] == size]
                spent = [p["times_ns"][0] / 1e9 for p in mine]
                ops = sum((requests.get(p["id"], Counter()) for p in mine), Counter())
                s = _stats(spent)
                row[name] = {"runs": len(spent), "s_median": s["median"], "s_min": s["min"], "s_max": s["max"],
                             "jvm_cpu_s_mean": statistics.fmean(p["cpu_ns"] / 1e9 for p in mine),
                             "s_all": spent, "requests_per_commit": sum(ops.values()) / len(spent),
                             "requests_per_commit_by_operation": {op: n / len(spent) for op, n in sorted(ops.items())}}
            for name in names if FLOOR in row else ():
                row[name]["vs_floor"] = row[name]["s_median"] / row[FLOOR]["s_median"]
                row[name]["vs_floor_per_run"] = [a / b for a, b in zip(row[name]["s_all"], row[FLOOR]["s_all"],
                                                                      strict=True)]
            sizes.append(row)
        doc[series] = {"small": small, "sizes": sizes}
    return doc


def print_summary(doc: dict[str, Any]) -> None:
    """Print a summarized run (small commits per contender, then large commits per size)."""
    for series in SERIES:
        part = doc[series]
        print(f"-- {series}: small commits")
        for name, r in part["small"].items():
            print(f"  {name:<18} {r['requests_per_commit']:6.2f} req  median {r['commit_ms_median']:8.2f} ms "
                  f"(p90 {r['commit_ms_p90']:.2f}, {r['commit_ms_min']:.2f}-{r['commit_ms_max']:.2f})  "
                  + (f"x floor {r['latency_vs_floor']:.3f} (rounds {r['round_ratio_vs_floor_min']:.3f}-"
                     f"{r['round_ratio_vs_floor_max']:.3f}); " if "latency_vs_floor" in r else "")
                  + f"JVM CPU {r['jvm_cpu_ms_per_commit']:.2f} ms/commit",
                  flush=True)
        for row in part["sizes"]:
            print(f"  {row['size_bytes'] // MIB} MiB: " + "  ".join(
                f"{n}={row[n]['s_median']:.2f}s ({row[n].get('vs_floor', float('nan')):.2f}x, "
                f"{row[n]['requests_per_commit']:g} req)"
                for n in ALL if n in row), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run; write benchmarks/results/jvm_inprocess.json."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_jvm_inprocess",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of small commits (every contender each round)")
    parser.add_argument("--commits", type=int, default=60, help="small commits per contender and round, no latency")
    parser.add_argument("--latency-commits", type=int, default=15, help="the same, with the latency model")
    parser.add_argument("--warmup", type=int, default=300, help="warm-up commits per contender before the first series")
    parser.add_argument("--latency-warmup", type=int, default=5, help="warm-up commits per contender, latency series")
    parser.add_argument("--sizes", type=float, nargs="*", default=[64, 128], help="large sizes (MiB), no latency")
    parser.add_argument("--latency-sizes", type=float, nargs="*", default=[64, 128, 512],
                        help="large sizes (MiB), latency model")
    parser.add_argument("--repeat", type=int, default=3, help="commits per contender and large size (rotated order)")
    parser.add_argument("--contenders", nargs="*", choices=list(ALL), default=list(CONTENDERS))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a Hadoop setting over configure()'s (experiments, e.g. fs.s3a.fast.upload.buffer=array)")
    parser.add_argument("--jvm-option", help="one more JVM option (diagnostics, e.g. a JFR recording)")
    parser.add_argument("--json", type=Path, default=RESULTS / "jvm_inprocess.json")
    args = parser.parse_args(argv)
    started = time.time()
    with EmbeddedS3([BUCKET]) as s3, tempfile.TemporaryDirectory(prefix="checkpointfs-jvm-bench-") as tmp:
        harness = run_harness(s3, s3_properties(s3), Path(tmp), args)
        requests = requests_by_phase(s3.requests.all())
        settings = {k: v for k, v in hadoop_settings(s3).items() if "key" not in k and "endpoint" not in k}
    doc: dict[str, Any] = {
        "store": "embedded S3 (moto over HTTP on 127.0.0.1), requests counted at the server",
        "harness": "jvm-bench (Maven exec:exec, one JVM, no py4j); contenders interleaved, order rotating",
        "spark": f"pyspark {DEFAULT_LINE.pyspark} jars (Hadoop {DEFAULT_LINE.hadoop} S3A), java {harness['java']}",
        "latency_model": {"per_request_s": LATENCY.per_request_s,
                          "bandwidth_bytes_per_s": LATENCY.bandwidth_bytes_per_s,
                          "copy_bytes_per_s": LATENCY.copy_bytes_per_s},
        "s3a_settings": settings, "floor": FLOOR, "cpus": os.cpu_count(),
        "rounds": args.rounds, "commits_per_round": {"local": args.commits, "latency": args.latency_commits},
        "warmup_commits": {"local": args.warmup, "latency": args.latency_warmup}, "sizes_repeat": args.repeat,
        "started_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        "seconds": round(time.time() - started),
        **summarize(harness, requests),
    }
    print_summary(doc)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
