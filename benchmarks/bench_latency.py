"""Batch time across store latencies: :mod:`benchmarks.bench_scale`'s query, made small enough for a 2-core machine
(2 shuffle partitions, one task of each stateful stage per slot; 3 input files; one run of each combination), at 5 ms
a request (S3 Express One Zone), 20 ms and 100 ms, with the checkpoint through the checkpointfs shim, Spark's default
manager (FileContext rename) and Spark's Abortable manager, RocksDB changelog checkpointing on and off; every
combination in one invocation, so that the ratios come from one run of the machine (changelog on first, each setting
on its own cluster and embedded S3).

Per row, beside ``bench_scale``'s figures: the **dependent floor**, the requests of a batch that wait one after
another (:func:`benchmarks.bench_scale.dependent_requests`, from the request log) times the latency; and the CPU time
per batch of the driver and of the cluster's JVMs against the wall time per batch, both between the first and the
last commit-log write (:mod:`benchmarks.cpu_time`): a loaded machine stretches wall time, while CPU time stays what
the work costs.

``python -m benchmarks.bench_latency`` writes ``benchmarks/results/latency.json`` and ``latency.png``;
``--replot`` redraws the plot from the results file."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .bench_scale import run

RESULTS = Path(__file__).parent / "results"
LATENCIES_MS = (5.0, 20.0, 100.0)
MANAGERS = ("shim", "default", "abortable")
NAMES = {"shim": "checkpointfs shim", "default": "Spark's default (rename)", "abortable": "Spark's Abortable"}


def plot(doc: dict[str, Any], path: Path) -> None:
    """Median batch time (solid) and dependent floor (dotted) against the latency, one colour per manager, one panel
    per changelog setting; CPU seconds per batch (driver plus cluster) as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    changelogs = sorted({r["changelog"] for r in doc["results"]})
    fig, axes = plt.subplots(1, len(changelogs), figsize=(6 * len(changelogs), 4.4), squeeze=False, sharey=True)
    colours = {"shim": "tab:green", "default": "tab:red", "abortable": "tab:blue"}
    for ax, changelog in zip(axes[0], changelogs, strict=True):
        for manager in MANAGERS:
            rows = sorted((r for r in doc["results"] if r["contender"] == manager and r["changelog"] == changelog
                           and r["batch_ms"]["median"]), key=lambda r: r["latency_ms_per_request"])
            if not rows:
                continue
            x = [r["latency_ms_per_request"] for r in rows]
            colour = colours.get(manager)
            ax.plot(x, [r["batch_ms"]["median"] / 1000 for r in rows], "-o", color=colour,
                    label=f"{NAMES[manager]}: batch time")
            ax.plot(x, [r.get("dependent_floor_ms", 0) / 1000 for r in rows], ":.", color=colour,
                    label=f"{NAMES[manager]}: dependent floor")
            ax.plot(x, [(r.get("cpu") or {}).get("cpu_s_per_batch_total", 0) for r in rows], "--x", color=colour,
                    alpha=0.6, label=f"{NAMES[manager]}: CPU s a batch")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(list(LATENCIES_MS), [f"{v:g}" for v in LATENCIES_MS])
        ax.set_xlabel("store latency, ms a request")
        ax.set_title(f"changelog checkpointing {'on' if changelog else 'off'}")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylabel("seconds a micro-batch")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    title = f"{doc['results'][0]['partitions']} partitions, two stateful operators on RocksDB, 2 slots, embedded S3"
    fig.suptitle(title)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run and write benchmarks/results/latency.json (and latency.png)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_latency", description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=list(LATENCIES_MS))
    parser.add_argument("--managers", nargs="+", choices=MANAGERS, default=list(MANAGERS))
    parser.add_argument("--rounds", type=int, default=1, help="runs of each combination (default 1)")
    parser.add_argument("--files", type=int, default=3, help="input files, one micro-batch each (default 3)")
    parser.add_argument("--records", type=int, default=500, help="records per input file (default 500)")
    parser.add_argument("--timeout-s", type=float, default=1800.0, help="the longest one driver may run")
    parser.add_argument("--json", type=Path, default=RESULTS / "latency.json", help="results file")
    parser.add_argument("--replot", action="store_true", help="only redraw the plot from the results file")
    parser.add_argument("--collect", action="store_true",
                        help="write the results file from the progress files of a run that was stopped")
    args = parser.parse_args(argv)
    plot_path = args.json.with_suffix(".png")
    if args.replot:
        plot(json.loads(args.json.read_text()), plot_path)
        return 0
    if args.collect:
        write(collected(args.json), args.json)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    document: dict[str, Any] = {}
    for changelog in (True, False):  # changelog on first: Spark's recommended setting, measured whole before the rest
        part = run([args.partitions], args.latency_ms, [changelog], args.managers, args.rounds, args.files,
                   args.records, None, args.timeout_s,
                   progress=args.json.with_name(f"{args.json.stem}-{'on' if changelog else 'off'}.partial.json"))
        document = {**part, "results": [*document.get("results", []), *part["results"]]}
        args.json.with_suffix(".partial.json").write_text(json.dumps(document, indent=2) + "\n")
    import pyspark

    document["pyspark"] = pyspark.__version__
    document["started_utc"] = started
    document["measured_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    document["complete"] = True
    document["invocation"] = "python -m benchmarks.bench_latency " + " ".join(argv or sys.argv[1:])
    write(document, args.json)
    return 0


def collected(target: Path) -> dict[str, Any]:
    """The results document of a stopped run: the rows of its progress files (each changelog setting's), marked as
    not complete."""
    parts = [json.loads(p.read_text()) for p in sorted(target.parent.glob(f"{target.stem}-*.partial.json"))]
    if not parts:
        raise SystemExit(f"no progress files {target.stem}-*.partial.json in {target.parent}")
    import pyspark

    rows = [r for part in parts for r in part["results"]]
    return {**parts[0], "results": rows, "pyspark": pyspark.__version__, "complete": False,
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(max(p.stat().st_mtime for p in
                                          target.parent.glob(f"{target.stem}-*.partial.json"))))}


def write(document: dict[str, Any], target: Path) -> None:
    """Write the results file and its plot; remove the run's progress files."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2) + "\n")
    for leftover in target.parent.glob(f"{target.stem}*.partial.json"):
        leftover.unlink()
    plot(document, target.with_suffix(".png"))
    print(f"wrote {target}")


if __name__ == "__main__":
    raise SystemExit(main())
