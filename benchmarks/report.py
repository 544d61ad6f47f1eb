"""Markdown tables and sentences of the results under benchmarks/results/ that docs/benchmarks.md quotes (the
regions of benchmarks/quote.py; ``python -m benchmarks.report [region ...]`` prints them)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
MIB = 1024 * 1024


def _load(name: str) -> Any:
    return json.loads((RESULTS / f"{name}.json").read_text())


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB else f"{n // 1024} KiB"


def _ops(per_op: dict[str, float]) -> str:
    return ", ".join(f"{'List' if op == 'ListObjectsV2' else op.replace('Object', '')} {n:g}"
                     for op, n in sorted(per_op.items(), key=lambda kv: -kv[1]))


def jvm_commit() -> str:
    doc = _load("jvm_commit")
    out = []
    for series, title in (("local", "no latency model"), ("latency", "latency model")):
        part = doc[f"commit_{series}"]
        out.append(f"**{title}** ({part['rounds']} rounds x {part['commits_per_round']} commits of "
                   f"{part['file_bytes']} B per contender)\n")
        out.append("| manager | requests per commit | x anchor | x floor | commit ms (median) | p90 | x anchor | "
                   "x floor |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in part["results"].values():
            ops = _ops(r["requests_per_commit_by_operation"])
            out.append(f"| {r['label']} | {r['requests_per_commit']:.2f} ({ops})"
                       f" | {r['requests_vs_anchor']:.2f} | {r['requests_vs_floor']:.2f} | "
                       f"{r['commit_ms_median']:.1f} | {r['commit_ms_p90']:.1f} | {r['latency_vs_anchor']:.2f} | "
                       f"{r['latency_vs_floor']:.2f} |")
        out.append("")
    return "\n".join(out)


def jvm_sizes() -> str:
    doc = _load("jvm_commit")
    names = list(doc["commit_local"]["results"])
    short = {"spark_filecontext": "FileContext (anchor)", "spark_filesystem": "FileSystem",
             "spark_abortable": "Abortable", "jvm_shim": "JVM shim", "python_direct": "Python direct",
             "raw_put_floor": "put_object (floor)"}
    out = []
    for series, title in (("local", "no latency model"), ("latency", "latency model")):
        out.append(f"**{title}**: commit time in ms (median of {doc['sizes_repeat']}), then (x anchor / x floor)\n")
        out.append("| size | " + " | ".join(short[n] for n in names) + " | COPY requests (anchor) |")
        out.append("|---|" + "---|" * (len(names) + 1))
        for row in doc[f"sizes_{series}"]:
            cells = [f"{row[f'{n}_s'] * 1000:.0f} ({row[f'{n}_vs_anchor']:.2f} / {row[f'{n}_vs_floor']:.1f})"
                     for n in names]
            out.append(f"| {_size(row['size_bytes'])} | " + " | ".join(cells)
                       + f" | {row['spark_filecontext_copy_requests']:g} |")
        out.append("")
    return "\n".join(out)


def jvm_sizes_summary() -> str:
    """bench_jvm_commit's largest size on the latency model, each JVM manager against the shim, and the small-commit
    latency of the Abortable manager and the shim against the anchor."""
    doc = _load("jvm_commit")
    row = doc["sizes_latency"][-1]
    shim = row["jvm_shim_s"]
    small = doc["commit_latency"]["results"]
    return (f"With the latency model, the rename managers pay the copy on top of the upload: at "
            f"{_size(row['size_bytes'])} the anchor takes {row['spark_filecontext_s'] / shim:.2f}x the shim's time, "
            f"and Spark's FileSystem manager {row['spark_filesystem_s'] / shim:.2f}x. The Abortable manager, which "
            f"writes in place and never copies, takes {row['spark_abortable_s'] / shim:.2f}x the shim's time at "
            f"{_size(row['size_bytes'])}: its cost is its probes ({small['spark_abortable']['requests_per_commit']:g} "
            f"requests per commit, {small['spark_abortable']['latency_vs_anchor']:.2f}x the anchor's latency for small "
            f"files against the shim's {small['jvm_shim']['latency_vs_anchor']:.2f}x).")


INPROCESS_SHORT = {"spark_filecontext": "FileContext (Spark default)", "spark_filesystem": "FileSystem",
                   "spark_abortable": "Abortable", "jvm_shim": "shim", "jvm_shim_s3a_defaults":
                   "shim, S3A default blocks", "raw_put_floor": "SDK PutObject (floor)"}


def jvm_inprocess() -> str:
    """The in-JVM commit benchmark (bench_jvm_inprocess): small commits per series, then large commits per size."""
    doc = _load("jvm_inprocess")
    out = []
    for series, title in (("local", "no latency model"), ("latency", "latency model")):
        part = doc[series]
        rows = part["small"]
        if rows:
            any_row = next(iter(rows.values()))
            out.append(f"**Small commits, {title}**: {any_row['runs']} rounds x "
                       f"{any_row['commits'] // any_row['runs']} commits of {any_row['file_bytes']} B per contender "
                       f"({any_row['commits']} commits each), after {doc['warmup_commits'][series]} warm-up commits "
                       "each\n")
            out.append("| contender | requests per commit | commit ms: median (min-max) | p90 | x floor (median; "
                       "per-round min-max) | JVM CPU ms per commit |")
            out.append("|---|---|---|---|---|---|")
            for r in rows.values():
                out.append(f"| {r['label']} | {r['requests_per_commit']:.2f} "
                           f"({_ops(r['requests_per_commit_by_operation'])}) | {r['commit_ms_median']:.2f} "
                           f"({r['commit_ms_min']:.2f}-{r['commit_ms_max']:.2f}) | {r['commit_ms_p90']:.2f} | "
                           f"{r['latency_vs_floor']:.3f} ({r['round_ratio_vs_floor_min']:.2f}-"
                           f"{r['round_ratio_vs_floor_max']:.2f}) | {r['jvm_cpu_ms_per_commit']:.2f} |")
            out.append("")
        if part["sizes"]:
            names = [n for n in INPROCESS_SHORT if n in part["sizes"][0]]
            runs = part["sizes"][0][names[0]]["runs"]
            out.append(f"**Large commits, {title}**: seconds, median of {runs} runs (min-max), x floor (of the "
                       "medians), requests per commit\n")
            out.append("| size | " + " | ".join(INPROCESS_SHORT[n] for n in names) + " |")
            out.append("|---|" + "---|" * len(names))
            for row in part["sizes"]:
                cells = [f"{row[n]['s_median']:.2f} ({row[n]['s_min']:.2f}-{row[n]['s_max']:.2f}), "
                         f"{row[n]['vs_floor']:.2f}x, {row[n]['requests_per_commit']:g} req" for n in names]
                out.append(f"| {_size(row['size_bytes'])} | " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def sizes() -> str:
    doc = _load("sizes")
    out = [_sizes_run(doc) + "\n"]
    for series, title in (("local", "no latency model"), ("latency", "latency model")):
        rows = doc[series]
        extra = [k.removesuffix("_over_floor") for k in (rows[0] if rows else {})
                 if k.startswith("direct_") and k.endswith("_over_floor") and k != "direct_over_floor"]
        out.append(f"**{title}** ({doc['repeat']} interleaved rounds; seconds: median (min-max); direct / floor: "
                   "ratio of the medians (per-round min-max))\n")
        out.append("| size | DirectWriteManager s | rename s | floor s | rename / direct | direct / floor |"
                   + "".join(f" {e.removeprefix('direct_')} / floor |" for e in extra))
        out.append("|---|---|---|---|---|---|" + "---|" * len(extra))
        for r in rows:
            cells = [f"{r[f'{n}_s']:.3f} ({r[f'{n}_min_s']:.3f}-{r[f'{n}_max_s']:.3f})" if f"{n}_min_s" in r
                     else f"{r[f'{n}_s']:.3f}" for n in ("direct_write", "rename_baseline", "raw_put_floor")]
            spread = (f" ({r['direct_over_floor_min']:.2f}-{r['direct_over_floor_max']:.2f})"
                      if "direct_over_floor_min" in r else "")
            out.append(f"| {_size(r['size_bytes'])} | " + " | ".join(cells)
                       + f" | {r['rename_over_direct']:.2f} | {r['direct_over_floor']:.2f}{spread} |"
                       + "".join(f" {r[f'{e}_over_floor']:.2f} ({r[f'{e}_over_floor_min']:.2f}-"
                                 f"{r[f'{e}_over_floor_max']:.2f}) |" for e in extra))
        out.append("")
    return "\n".join(out)


def _sizes_run(doc: dict[str, Any]) -> str:
    """How bench_sizes' run was made: where the store ran, the default parts, the load average before and after."""
    store = {"child-process": "store in a child process", "in-process": "store in the benchmark's process"}
    text = (f"{store.get(doc.get('store', 'in-process'), doc.get('store'))}, {doc['part_size'] // MIB} MiB parts, "
            f"{doc['max_inflight_parts']} in flight")
    load = doc.get("load_average")
    if load:
        text += f", load average {load['before'][0]:.1f} before and {load['after'][0]:.1f} after"
    return text


def commit() -> str:
    doc = _load("commit")
    out = ["| contender | requests per commit | commits/s (median) | rate vs floor | rate vs rename |",
           "|---|---|---|---|---|"]
    for name, r in doc["results"].items():
        out.append(f"| {name} | {r['requests_per_commit']:.2f} | {r['commits_per_second_median']:.1f} | "
                   f"{r['rate_ratio_to_floor']:.2f} | {r['rate_ratio_to_rename']:.2f} |")
    return "\n".join(out) + "\n"


SPARK_QUERIES = ("append", "dedup", "dedup-rocksdb")
"""bench_spark's queries, in the order the tables give them."""
SPARK_PREFIXES = ("checkpoint", "state", "rocksdb files", "sink log", "sink data", "source")


def _per_file(r: dict[str, Any], field: str) -> str:
    """A per-file figure of a row: the median over its runs with (min-max), or the one run's value."""
    median = r.get(f"{field}_median", r.get(field))
    if median is None:
        return ""
    low, high = r.get(f"{field}_min"), r.get(f"{field}_max")
    return f"{median:.2f}" + (f" ({low:.2f}-{high:.2f})" if low is not None and high is not None else "")


def spark() -> str:
    doc = _load("spark")
    out = ["Each row: `runs` runs of a fresh driver, the managers' order rotating every round. Requests per batch "
           "and by operation and key prefix: the run with the median count (every run's count in "
           "`requests_per_batch_all`); per checkpoint file and batch time: the median over the runs with (min-max).\n",
           "| query | latency | manager | runs | requests per batch | x default | checkpoint requests per checkpoint "
           "file: all checkpoint keys | through the manager | checkpoint / state / RocksDB files / sink log / sink "
           "data / source requests per batch | batch ms (min-max) | x default | by operation |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        prefix = r.get("requests_per_batch_by_prefix")
        split = " / ".join(f"{prefix.get(p, 0):.2f}" for p in SPARK_PREFIXES) if prefix else ""
        spread = (f" ({r['batch_ms_min']:.0f}-{r['batch_ms_max']:.0f})"
                  if r.get("batch_ms_min") is not None else "")
        out.append(f"| {r['query']} | {r['latency_ms_per_request']:g} ms | {r['manager']} | {r.get('runs', 1)} | "
                   f"{r['requests_per_batch']:.1f} | {r.get('requests_vs_default', 0):.2f} | "
                   f"{_per_file(r, 'checkpoint_requests_per_file')} | {_per_file(r, 'manager_requests_per_file')} | "
                   f"{split} | {r['batch_ms_median']:.0f}{spread} | "
                   f"{r.get('batch_time_vs_default', 0):.2f} | {_ops(r['requests_per_batch_by_operation'])} |")
    return "\n".join(out) + "\n"


def _spread(r: dict[str, Any]) -> str:
    """Median seconds with their min and max, as ``1.23 (1.20-1.31)``; older results have only ``seconds``."""
    if "seconds_min" not in r:
        return f"{r['seconds']:.2f}"
    return f"{r['seconds']:.2f} ({r['seconds_min']:.2f}-{r['seconds_max']:.2f})"


def compaction() -> str:
    """bench_compaction: Python's and Spark's compaction time, Python's RSS growth and the live size of Spark's
    entries, by entries, with the run's date and load where the results file has them."""
    doc = _load("compaction")
    spark_by = {r["entries"]: r for r in doc.get("spark_results", [])}
    out = [f"{_compaction_run(doc)}. Seconds: the median run's (min-max over {doc.get('rounds', 1)} runs each, "
           "contenders interleaved).\n",
           "| entries | runs | Python s (min-max) | Python RSS growth MB | Spark s (min-max) | Spark live entries MB | "
           "Spark s / Python s (per-round min-max) |",
           "|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        s = spark_by.get(r["entries"])
        growth = r.get("rss_growth_mb_max", r["rss_growth_mb"])
        if s is None:
            spark_cells = "not run | | "
        else:
            ratio = f"{s['seconds'] / r['seconds']:.2f}"
            if "python_speedup_min" in s:
                ratio += f" ({s['python_speedup_min']:.2f}-{s['python_speedup_max']:.2f})"
            spark_cells = f"{_spread(s)} | {s.get('entries_live_mb', float('nan')):.0f} | {ratio}"
        runs = f"{r.get('runs', 1)} + {s.get('runs', 1)}" if s else f"{r.get('runs', 1)}"
        out.append(f"| {r['entries']:,} | {runs} | {_spread(r)} | {growth:.1f} | {spark_cells} |")
    return "\n".join(out) + "\n"


def _compaction_run(doc: dict[str, Any]) -> str:
    """When and where bench_compaction ran, as far as its results file says."""
    text = f"Python {doc.get('python', '?')}, {doc.get('cpus', '?')} cores"
    if "measured_utc" in doc:
        text = f"Run {doc['measured_utc']}, {text}"
    load = doc.get("load_average")
    if load:
        text += f", load average {load['before'][0]:.1f} before and {load['after'][0]:.1f} after"
    return text


def _num(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _x(value: float) -> str:
    return f"{value:.2g}x" if value < 1 else f"{value:.3g}x"


def headline() -> str:
    """The summary table: every manager against the anchor and the floor, from every benchmark's results. The JVM
    managers' commit figures are the in-JVM ones (bench_jvm_inprocess, floor: one AWS SDK v2 PutObject); the Python
    manager's come from bench_jvm_commit and bench_sizes (floor: one boto3 put_object)."""
    jc, sp, co = _load("jvm_commit"), _load("spark"), _load("compaction")
    ji = _load("jvm_inprocess")
    py_sizes = {r["size_bytes"]: r for r in _load("sizes")["latency"]}
    jvm_names = ["spark_filecontext", "spark_filesystem", "spark_abortable", "jvm_shim"]
    heads = ["Spark default (anchor)", "Spark FileSystem", "Spark Abortable", "checkpointfs JVM shim",
             "checkpointfs Python", "one PutObject (floor): JVM SDK v2 / Python boto3"]
    out = ["| | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]

    def cell(value: float, unit: str, name: str, anchor: float, floor: float) -> str:
        text = f"{_num(value)}{unit}"
        if name == "spark_filecontext":
            return f"{text} ({_x(value / floor)} floor)"
        return f"{text} ({_x(value / anchor)}, {_x(value / floor)})"

    def commit_row(title: str, series: str, field: str, unit: str, py_series: str) -> None:
        rows = ji[series]["small"]
        anchor, floor = rows["spark_filecontext"][field], rows["raw_put_floor"][field]
        cells = [cell(rows[n][field], unit, n, anchor, floor) for n in jvm_names]
        if field == "commit_ms_median":
            cells[-1] += f" [{rows['jvm_shim']['commit_ms_min']:.3g}-{rows['jvm_shim']['commit_ms_max']:.3g}]"
        py = jc[py_series]["results"]
        cells.append(f"{_num(py['python_direct'][field])}{unit} ({_x(py['python_direct']['latency_vs_floor'])} "
                     "floor)" if field == "commit_ms_median" else f"{_num(py['python_direct'][field])}")
        cells.append(f"{_num(floor)}{unit} / {_num(py['raw_put_floor'][field])}{unit}")
        out.append(f"| {title} | " + " | ".join(cells) + " |")

    commit_row("requests per checkpoint-file commit", "local", "requests_per_commit", "", "commit_local")
    commit_row("commit latency, no latency model (median) [shim min-max]", "local", "commit_ms_median", " ms",
               "commit_local")
    commit_row("commit latency, latency model (median) [shim min-max]", "latency", "commit_ms_median", " ms",
               "commit_latency")
    for row in ji["latency"]["sizes"]:
        anchor, floor = row["spark_filecontext"]["s_median"], row["raw_put_floor"]["s_median"]
        cells = [cell(row[n]["s_median"], " s", n, anchor, floor) for n in jvm_names]
        py = py_sizes.get(row["size_bytes"])
        cells.append(f"{_num(py['direct_write_s'])} s ({_x(py['direct_over_floor'])} floor, per round "
                     f"{py['direct_over_floor_min']:.2f}-{py['direct_over_floor_max']:.2f}; {py['runs']} rounds)" if py
                     else "(size not in bench_sizes)")
        cells.append(f"{_num(floor)} s / {_num(py['raw_put_floor_s'])} s" if py else f"{_num(floor)} s / -")
        out.append(f"| {_size(row['size_bytes'])} commit, latency model (median of "
                   f"{row['jvm_shim']['runs']}) | " + " | ".join(cells) + " |")

    def spark_row(manager: str, query: str, latency: float) -> dict[str, Any] | None:
        return next((r for r in sp["results"] if r["manager"] == manager and r["query"] == query
                     and r["latency_ms_per_request"] == latency), None)

    def batch(manager: str, field: str, latency: float, unit: str, ratio: str | None,
              queries: tuple[str, ...]) -> str:
        rows = [spark_row(manager, q, latency) for q in queries]
        if all(r is None for r in rows):
            return "not run"
        values = ["not run" if r is None or r.get(field) is None else _num(r[field]) for r in rows]
        text = " / ".join(values) + unit if "not run" not in values else " / ".join(
            v if v == "not run" else v + unit for v in values)
        if manager == "default" or ratio is None:
            return text
        return text + " (" + " / ".join("-" if r is None or r.get(ratio) is None else _x(r[ratio])
                                        for r in rows) + ")"

    latencies = sorted({r["latency_ms_per_request"] for r in sp["results"]})
    queries = tuple(q for q in SPARK_QUERIES if any(r["query"] == q for r in sp["results"]))
    names_q = " / ".join(queries)
    runs = sorted({r.get("runs", 1) for r in sp["results"]})
    runs_text = (f"{runs[0]} run{'s' if runs[0] > 1 else ''}" if len(runs) == 1
                 else f"{runs[0]}-{runs[-1]} runs")
    rows_spec: list[tuple[str, str, float, str, str | None]] = [
        (f"micro-batch requests, {names_q} ({runs_text}, median)", "requests_per_batch", latencies[0], "",
         "requests_vs_default"),
        (f"checkpoint requests per checkpoint file, {names_q} (median)", "checkpoint_requests_per_file_median",
         latencies[0], "", None),
        ("the same, files written through the manager only (RocksDB's SST files go through the FileSystem)",
         "manager_requests_per_file_median", latencies[0], "", None),
        *[(f"micro-batch time, {names_q}, {lat:g} ms per request (median)", "batch_ms_median", lat, " ms",
           "batch_time_vs_default") for lat in latencies]]
    for title, field, latency, unit, ratio in rows_spec:
        out.append(f"| {title} | {batch('default', field, latency, unit, ratio, queries)} | | "
                   f"{batch('abortable', field, latency, unit, ratio, queries)} | "
                   f"{batch('shim', field, latency, unit, ratio, queries)} | | |")
    python = {r["entries"]: r for r in co["results"]}
    lines = []
    for r in co.get("spark_results", []):
        p = python.get(r["entries"])
        if p:
            live = r.get("entries_live_mb", float("nan"))
            lines.append(f"at {r['entries']:,} entries Python {p['seconds']:.3g} s and Spark {r['seconds']:.3g} s "
                         f"(Spark / Python {r['seconds'] / p['seconds']:.2f}, medians of {r.get('runs', 1)} runs "
                         f"each); memory: Python's RSS grew {p.get('rss_growth_mb_max', p['rss_growth_mb']):.0f} MB, "
                         f"Spark's entries alone take {live:.0f} MB of "
                         f"live heap (its heap peak grew {r['heap_growth_mb']:.0f} MB, its RSS "
                         f"{r['jvm_rss_growth_mb']:.0f} MB)")
    biggest = co["results"][-1]
    lines.append(f"Python at {biggest['entries']:,}: {biggest['seconds']:.3g} s, RSS growth "
                 f"{biggest['rss_growth_mb']:.0f} MB")
    out.append("\nManifest-log compaction (local file system): " + "; ".join(lines) + ".")
    return "\n".join(out) + "\n"


def jvm_inprocess_summary() -> str:
    """bench_jvm_inprocess in one paragraph: the shim against the floor, small and large commits."""
    doc = _load("jvm_inprocess")
    small = {series: doc[series]["small"] for series in ("local", "latency")}
    shim = {series: rows["jvm_shim"] for series, rows in small.items()}
    floor = {series: rows["raw_put_floor"] for series, rows in small.items()}
    large = [(row["size_bytes"], row["jvm_shim"]["vs_floor"]) for row in doc["latency"]["sizes"]]
    return (f"Measured in one JVM (run of {doc['started_utc']} UTC, {doc['seconds']} s, {doc['cpus']} cores), the "
            f"shim commits a small checkpoint file in **{shim['local']['latency_vs_floor']:.3f}x** (no latency "
            f"model) and **{shim['latency']['latency_vs_floor']:.3f}x** (latency model) the time of one SDK "
            f"PutObject (per-round ratios {shim['local']['round_ratio_vs_floor_min']:.2f}-"
            f"{shim['local']['round_ratio_vs_floor_max']:.2f} and {shim['latency']['round_ratio_vs_floor_min']:.2f}-"
            f"{shim['latency']['round_ratio_vs_floor_max']:.2f}), using {shim['local']['jvm_cpu_ms_per_commit']:.2f} "
            f"and {shim['latency']['jvm_cpu_ms_per_commit']:.2f} ms of JVM CPU per commit against the floor's "
            f"{floor['local']['jvm_cpu_ms_per_commit']:.2f} and {floor['latency']['jvm_cpu_ms_per_commit']:.2f} ms; "
            "large commits on the latency model: " + ", ".join(f"{ratio:.2f}x at {_size(size)}"
                                                                for size, ratio in large) + " the floor.")


def _sizes_ratio(row: dict[str, Any], name: str = "direct") -> str:
    return (f"{row[f'{name}_over_floor']:.2f} (per round {row[f'{name}_over_floor_min']:.2f} to "
            f"{row[f'{name}_over_floor_max']:.2f})")


def _ratio(row: dict[str, Any], name: str) -> str:
    return (f"{row[f'{name}_over_floor']:.2f} ({row[f'{name}_over_floor_min']:.2f}-"
            f"{row[f'{name}_over_floor_max']:.2f})")


def sizes_summary() -> str:
    """bench_sizes' large commits on the latency model: the run of the tables below and the longer run at the large
    sizes (sizes_large.json), each as a ratio to the floor."""
    out = []
    for name, title in (("sizes", "The run of the tables below"), ("sizes_large", "More rounds at the large sizes")):
        doc = _load(name)
        rows = [r for r in doc["latency"] if r["size_bytes"] >= 128 * MIB]
        text = (f"**{title}** ({_sizes_run(doc)}; {doc['repeat']} rounds, `benchmarks/results/{name}.json`): "
                "with the latency model DirectWriteManager took " + " and ".join(
                    f"**{r['direct_over_floor']:.2f}** times the floor at {_size(r['size_bytes'])} (per round "
                    f"{r['direct_over_floor_min']:.2f} to {r['direct_over_floor_max']:.2f})" for r in rows))
        if rows and "direct_4inflight_over_floor" in rows[0]:
            text += "; with 4 parts in flight " + " and ".join(_sizes_ratio(r, "direct_4inflight") for r in rows)
        out.append(text + ".")
    return "\n\n".join(out)


def sizes_part_sizes() -> str:
    """bench_sizes --part-sizes: DirectWriteManager's default 8 MiB parts against larger ones, at 128 and 512 MiB."""
    doc = _load("sizes_part_sizes")
    rows = {r["size_bytes"]: r for r in doc["latency"]}
    inflight = doc["max_inflight_parts"]
    default = doc["part_size"] // MIB
    parts = [default, *sorted({int(k.split("_")[2].removesuffix("MiB")) for r in rows.values() for k in r
                               if re.fullmatch(r"direct_write_\d+MiB_s", k)})]
    sizes = sorted(rows)
    out = [f"{doc['repeat']} rounds, latency model, {inflight} parts in flight, store in the benchmark's process; "
           f"`benchmarks/results/sizes_part_sizes.json`\n",
           "| part size | " + " | ".join(f"{_size(s)}: x floor (per round) | requests" for s in sizes)
           + f" | memory bound per stream ({inflight} in flight) |",
           "|---|" + "---|---|" * len(sizes) + "---|"]
    for part in parts:
        key = "direct" if part == default else f"direct_{part}MiB"
        requests = "direct_write_requests" if part == default else f"direct_write_{part}MiB_requests"
        cells = [f"{_ratio(rows[s], key)} | {rows[s][requests]:g}" for s in sizes]
        out.append(f"| {part} MiB{' (default)' if part == default else ''} | " + " | ".join(cells)
                   + f" | {(inflight + 1) * part} MiB |")
    return "\n".join(out) + "\n"


STEADY_LABELS = {"append": "append (stateless)", "dedup": "dedup (HDFS-backed state)",
                 "dedup-rocksdb": "dedup-rocksdb"}
_CHECKPOINT_PREFIXES = ("checkpoint", "state", "rocksdb files")


def steady_state() -> str:
    """The shim's steady state under rule 3 of the probe rule (steady_state.json), with its all-keys requests per
    batch before rule 3 (the shim's rows of spark.json)."""
    doc, before = _load("steady_state"), _load("spark")
    earlier = {r["query"]: r for r in before["results"] if r["manager"] == "shim" and r["latency_ms_per_request"] == 0}
    out = [f"pyspark {doc.get('pyspark', '?')}, {doc['files']} input files, {doc['runs']} run per query\n",
           "| query | checkpoint files per batch | requests on checkpoint keys per batch | per checkpoint file | "
           "all requests per batch (sink and its log included; before rule 3) |",
           "|---|---|---|---|---|"]
    for r in doc["results"]:
        if r["manager"] != "shim":
            continue
        by_op: dict[str, float] = {}
        for prefix in _CHECKPOINT_PREFIXES:
            for op, n in r["requests_per_batch_by_prefix_and_operation"].get(prefix, {}).items():
                by_op[op] = round(by_op.get(op, 0.0) + n, 2)
        old = earlier.get(r["query"])
        out.append(f"| {STEADY_LABELS.get(r['query'], r['query'])} | {r['checkpoint_files_per_batch']:.3g} | "
                   f"{sum(by_op.values()):.2f} ({_ops(by_op)}) | {r['checkpoint_requests_per_file']:.2f} | "
                   f"{r['requests_per_batch']:.1f}" + (f" ({old['requests_per_batch']:.1f})" if old else "") + " |")
    return "\n".join(out) + "\n"


CLOUD_STORES = {"gs": "gs://", "abfs": "abfs://"}
CLOUD_OPERATIONS = {"CreateMultipartUpload": "resumable start", "CompleteMultipartUpload": "resumable final chunk"}
"""The recording proxy's S3 names of a GCS resumable upload's requests, as the table gives them."""
CLOUD_CONTENDERS = {"spark_filecontext": "Spark default (FileContext: temp object, rename)",
                    "spark_filesystem": "Spark FileSystem manager", "jvm_shim": "**checkpointfs shim**"}


def jvm_cloud() -> str:
    """bench_jvm_cloud: small commits on gs:// and abfs:// emulators, with and without the latency model."""
    doc = _load("jvm_cloud")
    model = doc["latency_model"]
    out = [f"Run {doc['started_utc']} UTC, {doc['seconds']} s, {doc['cpus']} cores; {doc['spark']}; "
           f"{doc['rounds']} rounds of {doc['commits_per_round']['local']} commits without and "
           f"{doc['commits_per_round']['latency']} with the latency model ({model['per_request_s'] * 1000:g} ms a "
           f"request) per contender\n",
           "| store | contender | requests per commit | commit ms, no latency model: median (min-max) | commit ms, "
           "latency model: median (min-max) [round medians] | x default (latency model) |",
           "|---|---|---|---|---|---|"]
    for store, part in doc["stores"].items():
        local, latency = part["local"]["small"], part["latency"]["small"]
        anchor = latency["spark_filecontext"]["commit_ms_median"]
        for name, r in latency.items():
            lo = local[name]
            rounds = ", ".join(f"{m:.1f}" for m in r["round_medians_ms"])
            ops = {CLOUD_OPERATIONS.get(op, op): n for op, n in r["requests_per_commit_by_operation"].items()}
            out.append(f"| {CLOUD_STORES.get(store, store)} | {CLOUD_CONTENDERS.get(name, r['label'])} | "
                       f"{r['requests_per_commit']:g} ({_ops(ops)}) | "
                       f"{lo['commit_ms_median']:.1f} ({lo['commit_ms_min']:.1f}-{lo['commit_ms_max']:.1f}) | "
                       f"{r['commit_ms_median']:.1f} ({r['commit_ms_min']:.1f}-{r['commit_ms_max']:.1f}) [{rounds}] | "
                       f"{r['commit_ms_median'] / anchor:.3g} |")
    return "\n".join(out) + "\n"


LINES = ("3.5", "4.0", "4.1", "4.2", "4.3")
"""The Spark lines of benchmarks/results/lines/spark-<line>.json."""


def lines() -> str:
    """bench_spark on every line (lines/spark-<line>.json): the dedup query's requests, shim against default."""
    out = ["| line (pyspark) | default: requests / batch | shim: requests / batch | shim / default | default: "
           "checkpoint requests per checkpoint file | shim: checkpoint requests per checkpoint file | COPY per batch "
           "(default / shim) | batches measured |",
           "|---|---|---|---|---|---|---|---|"]
    for line in LINES:
        doc = _load(f"lines/spark-{line}")
        by = {r["manager"]: r for r in doc["results"]}
        d, s = by["default"], by["shim"]
        copies = [r["requests_per_batch_by_operation"].get("CopyObject", 0) for r in (d, s)]
        out.append(f"| {line} ({doc['pyspark']}) | {d['requests_per_batch']:.1f} | {s['requests_per_batch']:.1f} | "
                   f"{s['requests_per_batch'] / d['requests_per_batch']:.2f}x | "
                   f"{d['checkpoint_requests_per_file']:.1f} | {s['checkpoint_requests_per_file']:.2f} | "
                   f"{copies[0]:g} / {copies[1]:g} | {s['batches_measured']} |")
    return "\n".join(out) + "\n"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value / 1000:.2f}"


def scale() -> str:
    """benchmarks/bench_scale.py: batch times, requests, overhead over local disk and the latency overhead over the
    floor, and the monthly bill, by partitions, changelog checkpointing, latency and store rate limit."""
    doc = _load("scale")
    out = [f"Results file last merged {doc.get('measured_utc', '?')} (pyspark {doc.get('pyspark', '?')}); its last "
           f"invocation's method: {doc['method']}. Batch times in seconds over every run's batches after batch 0: "
           "median (min-max), p95.\n",
           "| partitions | changelog | latency | limit (writes/s) | contender | runs | batch s median (min-max) | p95 "
           "| x default | batch minus local disk s | latency overhead s | floor s | latency overhead / floor | "
           "requests / batch | x default | checkpoint requests / batch | checkpoint requests per checkpoint file | "
           "throttled per run | $ / month (all requests; checkpoint keys) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        b = r["batch_ms"]
        overhead = r.get("checkpoint_overhead_ms")
        month = (f"{r['monthly_usd']:,.0f}; {r['monthly_usd_checkpoint']:,.0f}" if "monthly_usd" in r else "")
        per_file = r.get("checkpoint_requests_per_file")
        out.append(
            f"| {r['partitions']} | {'on' if r['changelog'] else 'off'} | {r['latency_ms_per_request']:g} ms | "
            f"{r['throttle_writes_per_s'] or ''} | {r['contender']} | {r['runs']} | "
            f"{_ms(b['median'])} ({_ms(b['min'])}-{_ms(b['max'])}) | {_ms(b['p95'])} | "
            f"{r.get('batch_time_vs_default', '')} | {_ms(overhead)} | {_ms(r.get('latency_overhead_ms'))} | "
            f"{_ms(r.get('floor_ms'))} | {r.get('latency_overhead_vs_floor') or ''} | "
            f"{r.get('requests_per_batch', '')} | "
            f"{r.get('requests_vs_default', '')} | "
            f"{r.get('checkpoint_requests_per_batch', '')} | {'' if per_file is None else f'{per_file:.2f}'} | "
            f"{', '.join(map(str, r['throttled_per_run']))} | {month} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the named regions of benchmarks/quote.py (all by default), as they would be written."""
    from benchmarks.quote import QUOTES, render

    names = (argv if argv is not None else sys.argv[1:]) or list(QUOTES)
    for name in names:
        try:
            print(render(name) + "\n")
        except FileNotFoundError as e:
            print(f"<!-- {name}: {e} -->\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
