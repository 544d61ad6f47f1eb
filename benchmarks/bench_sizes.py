"""Commit time against file size, 1 KiB to 512 MiB: DirectWriteManager against the rename baseline (PUT a temp key,
COPY it, DELETE it) and the floor (one PutObject of the whole file), on the embedded S3 without and with the
latency model. A rename moves the data again (the COPY); a direct write does not.

Each size runs the three contenders interleaved in ``repeat`` rounds, their order rotating every round, in one
process; figures are medians, and ratios compare contenders measured side by side."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.baselines import raw_put, rename_commit
from benchmarks.latency import KIB, LATENCY, MIB
from benchmarks.rotation import rotated
from checkpointfs import DirectWriteManager
from checkpointfs.testing import EmbeddedS3, FaultPlan
from checkpointfs.testing.faults import Latency

RESULTS = Path(__file__).parent / "results"
BUCKET = "checkpoints"
SIZES = [KIB, 64 * KIB, MIB, 8 * MIB, 64 * MIB, 512 * MIB]


def measure(s3: EmbeddedS3, direct: DirectWriteManager, size: int, repeat: int) -> dict[str, Any]:
    """The three contenders at one size."""
    client = s3.client()
    data = os.urandom(min(size, 8 * MIB)) * max(1, size // (8 * MIB))
    counter = [0]

    def key(name: str) -> str:
        counter[0] += 1
        return f"{name}/{size}/{counter[0]}"

    def direct_commit() -> None:
        with direct.create_atomic(s3.uri(key("direct"))) as out:
            for start in range(0, len(data), 4 * MIB):
                out.write(data[start:start + 4 * MIB])

    contenders = {
        "direct_write": direct_commit,
        "rename_baseline": lambda: rename_commit(client, BUCKET, key("rename"), data),
        "raw_put_floor": lambda: raw_put(client, BUCKET, key("raw"), data),
    }
    row: dict[str, Any] = {"size_bytes": len(data)}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    requests = dict.fromkeys(contenders, 0)
    for r in range(repeat):  # interleaved rounds, the contenders taking turns at going first
        for name in rotated(list(contenders), r):
            s3.requests.clear()
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
            requests[name] += len(s3.requests)
    for name in contenders:
        row[f"{name}_s"] = statistics.median(times[name])
        row[f"{name}_requests"] = requests[name] / repeat
    row["rename_over_direct"] = row["rename_baseline_s"] / row["direct_write_s"]
    row["direct_over_floor"] = row["direct_write_s"] / row["raw_put_floor_s"]
    return row


def run(sizes: Sequence[int], repeat: int, latency: Latency | None) -> list[dict[str, Any]]:
    """One series of measurements; returns a row per size."""
    rows = []
    with EmbeddedS3([BUCKET]) as s3:
        s3.faults = FaultPlan(latency=latency)
        direct = DirectWriteManager(**s3.manager_options())
        for size in sizes:
            rows.append(measure(s3, direct, size, repeat))
            plan = s3.faults
            s3.reset()  # frees the store's memory between sizes
            s3.faults = plan
    return rows


def plot(doc: dict[str, Any], path: Path) -> None:
    """Commit time against size, one panel per store model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, (title, rows) in zip(axes, (("embedded S3, no latency model", doc["local"]),
                                        ("with latency model", doc["latency"])), strict=True):
        sizes = [r["size_bytes"] for r in rows]
        for name, label in (("direct_write", "DirectWriteManager"), ("rename_baseline", "rename (PUT+COPY+DELETE)"),
                            ("raw_put_floor", "one PutObject (floor)")):
            ax.loglog(sizes, [r[f"{name}_s"] for r in rows], marker="o", label=label)
        ax.set_title(title)
        ax.set_xlabel("file size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("commit time (s, median)")
    axes[0].legend()
    fig.suptitle("Checkpoint-file commit time against size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both series; write benchmarks/results/sizes.json and sizes.png."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-size", type=int, default=max(SIZES))
    args = parser.parse_args(argv)
    sizes = [s for s in SIZES if s <= args.max_size]
    doc = {"latency_model": LATENCY.__dict__, "repeat": args.repeat,
           "local": run(sizes, args.repeat, None), "latency": run(sizes, args.repeat, LATENCY)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sizes.json").write_text(json.dumps(doc, indent=2) + "\n")
    plot(doc, RESULTS / "sizes.png")
    for series in ("local", "latency"):
        print(f"-- {series}")
        print(f"{'size':>10} {'direct s':>9} {'rename s':>9} {'floor s':>9} {'rename/direct':>14} {'direct/floor':>13}")
        for r in doc[series]:
            print(f"{r['size_bytes']:>10} {r['direct_write_s']:>9.3f} {r['rename_baseline_s']:>9.3f} "
                  f"{r['raw_put_floor_s']:>9.3f} {r['rename_over_direct']:>14.2f} {r['direct_over_floor']:>13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
