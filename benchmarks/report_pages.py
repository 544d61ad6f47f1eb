"""The figures README.md and the reference pages (docs/spark.md, logs.md, tools.md, reliability.md, testing.md) quote
from benchmarks/results/, rendered for benchmarks/quote.py: short tables and sentences, each naming its run."""

from __future__ import annotations

import json
from typing import Any

from benchmarks import report
from benchmarks.report import _load, _ops
from benchmarks.report_scale import _about, _row, default_extrapolated


def _scale_note(doc: dict[str, Any]) -> str:
    return (f"`scale.json`: measured until {doc.get('measured_utc', '?')}, pyspark {doc.get('pyspark', '?')}, cluster: "
            f"{doc['cluster']}")


def readme_headline() -> str:
    """README's table: the shim against Spark's default manager, from the steady-state, scale and cloud runs."""
    scale, steady, spark, cloud = _load("scale"), _load("steady_state"), _load("spark"), _load("jvm_cloud")
    default_per_file = [r["manager_requests_per_file_median"] for r in spark["results"]
                        if r["manager"] == "default" and r["latency_ms_per_request"] == 0]
    default_per_file += [r["checkpoint_requests_per_file"] for r in scale["results"]
                         if r["contender"] == "default" and not r["throttle_writes_per_s"]]
    shim_per_file = [r["checkpoint_requests_per_file"] for r in steady["results"] if r["manager"] == "shim"]
    shim_per_file += [r["checkpoint_requests_per_file"] for r in scale["results"]
                      if r["contender"] == "shim" and not r["throttle_writes_per_s"]]
    lo, hi = min(shim_per_file), max(shim_per_file)
    shim_cell = f"**{lo:.2f}** (one PutObject)" if lo == hi == 1.0 else f"**{lo:.2f} to {hi:.2f}**"
    d200, s200 = _row(scale, "default", 200), _row(scale, "shim", 200)
    assert d200 is not None and s200 is not None
    partitions = [p for p in (8, 50, 1000) if _row(scale, "shim", p) is not None]

    def bill(contender: str, p: int) -> str:
        r = _row(scale, contender, p)
        if r is not None:
            return f"${r['monthly_usd']:,.0f}"
        guess = default_extrapolated(scale, "monthly_usd", p)
        return f"about ${_about(guess[0])} (extrapolated)" if guess else "not run"

    latency = cloud["latency_model"]["per_request_s"] * 1000
    commits = {store: cloud["stores"][store]["latency"]["small"] for store in ("gs", "abfs")}

    def commit(name: str) -> str:
        return " / ".join(f"{c[name]['commit_ms_median']:.1f} ms ({c[name]['requests_per_commit']:g})"
                          for c in commits.values())

    rows = [
        ("requests per checkpoint file, steady state (stateless and stateful queries)",
         f"{min(default_per_file):.1f} to {max(default_per_file):.1f}", shim_cell),
        ("requests per micro-batch, two stateful operators at 200 shuffle partitions (RocksDB, changelog on)",
         f"{d200['requests_per_batch']:,.0f}", f"**{s200['requests_per_batch']:,.0f}**"),
        (f"that query's micro-batch on a store {d200['latency_ms_per_request']:g} ms away (median, standalone "
         f"cluster of {scale['slots']} cores)", f"{d200['batch_ms']['median'] / 1000:.1f} s",
         f"**{s200['batch_ms']['median'] / 1000:.1f} s**"),
        ("S3 request bill of that query, one batch every 10 s, S3 Standard list prices",
         f"${d200['monthly_usd']:,.0f} a month", f"**${s200['monthly_usd']:,.0f} a month**"),
        (f"the same bill at {' / '.join(f'{p:,}' for p in partitions)} partitions",
         " / ".join(bill("default", p) for p in partitions),
         "**" + " / ".join(bill("shim", p) for p in partitions) + "**"),
        (f"commit of a small checkpoint file on `gs://` / `abfs://` {latency:g} ms away (emulators; requests)",
         commit("spark_filecontext"), f"**{commit('jvm_shim')}**"),
    ]
    out = ["| | Spark's default manager | checkpointfs shim |", "|---|---|---|"]
    out += [f"| {title} | {left} | {right} |" for title, left, right in rows]
    out.append(f"\nRuns (benchmarks/results/): {_scale_note(scale)}; `steady_state.json` and `spark.json`: "
               f"{steady['spark'].split(';')[0]}; `jvm_cloud.json`: {cloud['started_utc']} UTC, {cloud['cpus']} cores.")
    return "\n".join(out)


def jvm_cloud_sentence(store: str) -> str:
    """docs/spark.md's sentence on the commit latency of one store (gs or abfs) from bench_jvm_cloud."""
    doc = _load("jvm_cloud")
    small = doc["stores"][store]["latency"]["small"]
    shim, default = small["jvm_shim"], small["spark_filecontext"]
    return (f"A small checkpoint file's commit at {doc['latency_model']['per_request_s'] * 1000:g} ms a request "
            f"(`benchmarks/bench_jvm_cloud.py`, run of {doc['started_utc']} UTC): {shim['commit_ms_median']:.1f} ms "
            f"with the shim ({shim['requests_per_commit']:g} request) against {default['commit_ms_median']:.1f} ms "
            f"with Spark's default manager ({default['requests_per_commit']:g} requests).")


_DEMO_OPERATIONS = (("PUT", "PutObject"), ("COPY", "CopyObject"), ("DELETE", "DeleteObject"), ("HEAD", "HeadObject"),
                    ("GET", "GetObject"), ("LIST", "ListObjectsV2"))


def demo() -> str:
    """`make demo`'s table (harness.spark_demo --json): requests per micro-batch, shim against Spark's default."""
    doc = _load("demo")
    load = doc["load_average"][0]
    out = [f"Run {doc['measured_utc']}, load average {load:.1f}; {doc['files']} input files, the shim's driver "
           f"SIGKILLed after the commit of batch {doc['kill_after_commit']}:\n",
           "| manager | total | " + " | ".join(name for name, _ in _DEMO_OPERATIONS) + " |",
           "| --- | --- | " + " | ".join("---" for _ in _DEMO_OPERATIONS) + " |"]
    for i, m in enumerate(doc["managers"]):
        batches = f"{m['batches_measured']} batches" + (" after the restart" if i == 0 else "")
        out.append(f"| {m['manager']}, {batches} | {m['requests_per_batch']:.1f} | "
                   + " | ".join(f"{m['by_operation'].get(op, 0):.1f}" for _, op in _DEMO_OPERATIONS) + " |")
    shim, default = doc["managers"][0], doc["managers"][1]
    once = "exactly-once after the SIGKILL" if doc["exactly_once"] else "NOT exactly-once after the SIGKILL"
    out.append(f"\nThese include the sink's data files and the file source's listings: "
               f"{default['requests_per_batch'] / shim['requests_per_batch']:.1f}x fewer requests per micro-batch "
               f"with the shim, {doc['shim_copies']} COPY, {once}.")
    return "\n".join(out)


SPARK_QUERIES = {"append": "file source -> JSON sink", "dedup": "+ dropDuplicates, HDFS state store",
                 "dedup-rocksdb": "+ dropDuplicates, RocksDB state store"}


def _per_file(r: dict[str, Any]) -> str:
    """Checkpoint requests per checkpoint file: through the manager, and on all checkpoint keys where different."""
    manager, every = r["manager_requests_per_file_median"], r["checkpoint_requests_per_file_median"]
    return f"{manager:.2f}" if manager == every else f"{manager:.2f} / {every:.2f}"


def spark_summary() -> str:
    """docs/spark.md's summary of bench_spark: requests per batch and per checkpoint file, then batch times."""
    doc = _load("spark")
    by = {(r["latency_ms_per_request"], r["query"], r["manager"]): r for r in doc["results"]}
    keys = sorted({(lat, q) for lat, q, _ in by}, key=lambda k: (k[0], list(SPARK_QUERIES).index(k[1])))
    out = [f"pyspark {doc.get('pyspark', '?')}, {doc['files']} input files, median of {doc['runs']} runs; per "
           "checkpoint file: through the manager / on all checkpoint keys (RocksDB's SST files included) where they "
           "differ\n",
           "| query | store model | shim: requests / batch | shim: checkpoint requests per checkpoint file | "
           "abortable: "
           "requests / batch | abortable: per file | default: requests / batch | default: per file |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    times = []
    for latency, query in keys:
        shim, abortable, default = (by.get((latency, query, m)) for m in ("shim", "abortable", "default"))
        if shim is None or abortable is None or default is None:
            continue
        model = "no latency model" if latency == 0 else f"{latency:g} ms per request"
        out.append(f"| {SPARK_QUERIES[query]} | {model} | {shim['requests_per_batch']:.1f} "
                   f"({shim['requests_vs_default']:.2f}x) | {_per_file(shim)} | {abortable['requests_per_batch']:.1f} "
                   f"({abortable['requests_vs_default']:.2f}x) | {_per_file(abortable)} | "
                   f"{default['requests_per_batch']:.1f} | {_per_file(default)} |")
        times.append(f"{model}, {query}: " + " / ".join(f"{r['batch_ms_median']:.0f}"
                                                          for r in (shim, abortable, default)) + " ms")
    out.append("\nMedian micro-batch times, shim / abortable / default (docs/benchmarks.md has their min and max): "
               + "; ".join(times) + ".")
    return "\n".join(out)


def shapes() -> str:
    """bench_shapes: requests per micro-batch of each query shape, the shim against Spark's default manager."""
    doc = json.loads((report.RESULTS / "shapes.json").read_text())
    out = ["| shape | shim: requests / batch | of which | Spark default: requests / batch | of which | ratio |",
           "|---|---|---|---|---|---|"]
    for shape, shim in doc["shim"].items():
        default = doc["default"][shape]
        out.append(f"| `{shape}` | {shim['total']:g} | {_ops(shim['per_operation'])} | {default['total']:g} | "
                   f"{_ops(default['per_operation'])} | {default['total'] / shim['total']:.1f}x |")
    return "\n".join(out)


def compaction_python() -> str:
    """docs/logs.md's table: checkpointfs's compaction time and memory by entries (bench_compaction)."""
    doc = _load("compaction")
    out = [f"{report._compaction_run(doc)}; the median of {doc.get('rounds', 1)} runs at each size:\n",
           "| entries | seconds (min-max) | entries/s | peak RSS during compaction | growth over the RSS before it |",
           "| --- | --- | --- | --- | --- |"]
    for r in doc["results"]:
        growth = r.get("rss_growth_mb_max", r["rss_growth_mb"])
        out.append(f"| {r['entries']:,} | {report._spread(r)} | {r['entries_per_s']:,.0f} | "
                   f"{r['rss_peak_mb']:.0f} MB | "
                   f"{growth:.1f} MB |")
    return "\n".join(out)


def verify() -> str:
    """docs/tools.md's table of bench_verify's runs (verify.json), and the verifier's CPU per file."""
    runs = json.loads((report.RESULTS / "verify.json").read_text())
    out = ["| Files | Wall | Files/s (wall) | Verifier CPU | Files per verifier CPU-s | Server CPU | "
           "Verifier peak RSS | "
           "Requests | Load average | Measured |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        requests = ", ".join(f"{n} {op}" for op, n in r["requests"].items())
        out.append(f"| {r['entries']:,} | {r['verify_s']} s | {r['files_per_s']:,} | {r['verifier_cpu_s']} s | "
                   f"{r['files_per_verifier_cpu_s']:,} | {r['server_cpu_s']} s | {r['verifier_peak_rss_mib']} MiB | "
                   f"{requests} | {r['load_average_at_start']} | {r['measured_utc']} |")
    per_file = sorted(1e6 / r["files_per_verifier_cpu_s"] for r in runs)
    out.append(f"\nThe verifier's client side costs {per_file[0]:.0f} to {per_file[-1]:.0f} µs of CPU per file in "
               "these runs.")
    return "\n".join(out)


def campaign(name: str) -> str:
    """A campaign's results table (harness.campaign's own rendering of its results file) and how long it took."""
    from harness.campaign import ManagerResult, table

    doc = json.loads((report.RESULTS / name).read_text())
    results = [ManagerResult.from_json(r) for r in doc["results"]]
    out = [table(results), ""]
    requests: dict[str, dict[str, int]] = {}
    for r in doc["results"]:
        requests.setdefault(r["profile"], {})[r["manager"]] = r["requests"]
    out.append("Requests answered by the store (retries and failed runs included): " + "; ".join(
        f"{plan}: " + ", ".join(f"{n:,} ({manager})" for manager, n in by.items()) for plan, by in requests.items())
        + ".")
    ratios: dict[str, list[float]] = {}
    for by in requests.values():
        for manager, n in by.items():
            if manager != "shim" and by.get("shim"):
                ratios.setdefault(manager, []).append(n / by["shim"])
    if ratios:
        out[-1] += " Against the shim's: " + ", ".join(
            f"{manager} {min(r):.1f} to {max(r):.1f} times" if len(r) > 1 else f"{manager} {r[0]:.1f} times"
            for manager, r in ratios.items()) + "."
    out += ["", f"The campaign took {doc['seconds'] / 60:.1f} minutes."]
    return "\n".join(out)


def suite_times() -> str:
    """docs/testing.md's tables of the last gate run's times (harness.suite_times)."""
    from harness.suite_times import body

    return body(json.loads((report.RESULTS / "suite_times.json").read_text()))


FORMAT_QUERIES = {"changelog-v1": "format v1", "changelog-v2": "format v2, checksums"}
"""bench_spark's format comparison queries (``spark_format_v2.json``) and their labels."""


def spark_format_v2() -> str:
    """docs/benchmarks.md's table of requests per micro-batch: state checkpoint format v2 with checksums against
    format v1, through the shim and through Spark's default manager."""
    doc = _load("spark_format_v2")
    by = {(r["query"], r["manager"]): r for r in doc["results"] if r["latency_ms_per_request"] == 0}
    out = [f"pyspark {doc.get('pyspark', '?')}, the dedup on RocksDB with changelog checkpointing, {doc['files']} "
           f"input files, {doc['runs']} run(s) each, embedded S3 without latency model; requests between the first and "
           "last commit, divided by the batches in between\n",
           "| manager | state format | requests / batch | checkpoint files / batch | requests per checkpoint file | "
           "by operation |",
           "| --- | --- | --- | --- | --- | --- |"]
    for manager, label in (("shim", "checkpointfs shim"), ("default", "Spark's default manager")):
        for query, fmt in FORMAT_QUERIES.items():
            row = by.get((query, manager))
            if row is None:
                continue
            out.append(f"| {label} | {fmt} | {row['requests_per_batch']:.1f} | "
                       f"{row['checkpoint_files_per_batch']:.1f} | {_per_file(row)} | "
                       f"{_ops(row['requests_per_batch_by_operation'])} |")
    ratios = []
    for manager in ("shim", "default"):
        v1, v2 = by.get(("changelog-v1", manager)), by.get(("changelog-v2", manager))
        if v1 and v2:
            ratios.append(f"{manager}: {v2['requests_per_batch'] / v1['requests_per_batch']:.2f}x")
    if ratios:
        out.append(f"\nFormat v2 with checksums against format v1, requests per batch: {', '.join(ratios)}.")
    return "\n".join(out)
