"""Commit time against file size, 1 KiB to 512 MiB: DirectWriteManager against the rename baseline (PUT a temp key,
COPY it, DELETE it) and the floor (one PutObject of the whole file), on the embedded S3 without and with the
latency model. A rename moves the data again (the COPY); a direct write does not. Above its part size the direct
write is a multipart upload whose parts go up concurrently (``max_inflight_parts``).

Each size runs the three contenders interleaved in ``repeat`` rounds, their order rotating every round, in one
process; figures are medians with their min and max, and ratios compare contenders measured side by side (the
direct write over the floor also per round: its min and max). ``--part-sizes`` adds DirectWriteManagers with other
part sizes as further contenders (``direct_write_<n>MiB``), to choose the default. Every object is deleted after
its commit (untimed), so the store's memory does not grow with the rounds.

The embedded S3 runs in a child process of its own (:class:`~checkpointfs.testing.EmbeddedS3Process`) for the whole
benchmark, every size: a distant store's CPU is not the client's, and in one process moto's work (parsing, hashing,
assembling a multipart object: about half a second of CPU at 128 MiB) would hold the client's GIL and slow the
contender that happens to run beside it. The child keeps bodies in memory (no temporary files). ``--in-process``
serves the store in the benchmark's own process instead, as runs before this option did."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from benchmarks.baselines import raw_put, rename_commit
from benchmarks.latency import KIB, LATENCY, MIB
from benchmarks.rotation import rotated
from checkpointfs import DirectWriteManager
from checkpointfs.direct.manager import DEFAULT_MAX_INFLIGHT_PARTS, DEFAULT_PART_SIZE
from checkpointfs.testing import EmbeddedS3, EmbeddedS3Process, FaultPlan
from checkpointfs.testing.faults import Latency
from checkpointfs.testing.requests import Request

RESULTS = Path(__file__).parent / "results"
BUCKET = "checkpoints"
SIZES = [KIB, 64 * KIB, MIB, 8 * MIB, 64 * MIB, 128 * MIB, 512 * MIB]
CHUNK = 4 * MIB
"""The direct write receives the file in writes of this size (slices of one buffer, not copies)."""


class Store(Protocol):
    """What the benchmark uses of an embedded S3: :class:`EmbeddedS3Process` or :class:`InProcess`."""

    def client(self, admin: bool = False) -> Any: ...
    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str: ...
    def manager_options(self) -> dict[str, Any]: ...
    def requests(self) -> list[Request]: ...
    def clear_requests(self) -> None: ...
    def set_faults(self, spec: dict[str, Any] | str | None) -> None: ...
    def reset(self) -> None: ...


class InProcess:
    """An :class:`EmbeddedS3` in this process behind the interface of :class:`EmbeddedS3Process`."""

    def __init__(self, s3: EmbeddedS3) -> None:
        self.s3 = s3

    def client(self, admin: bool = False) -> Any:
        """A client of the store."""
        return self.s3.client(admin)

    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str:
        """The URI of ``key``."""
        return self.s3.uri(key, bucket, scheme)

    def manager_options(self) -> dict[str, Any]:
        """DirectWriteManager's options for the store."""
        return self.s3.manager_options()

    def requests(self) -> list[Request]:
        """The requests counted."""
        return self.s3.requests.all()

    def clear_requests(self) -> None:
        """Forget the requests counted."""
        self.s3.requests.clear()

    def set_faults(self, spec: dict[str, Any] | str | None) -> None:
        """Put a fault plan in force."""
        self.s3.faults = FaultPlan.from_spec(spec) if spec is not None else FaultPlan()

    def reset(self) -> None:
        """Empty the store; the fault plan stays."""
        plan = self.s3.faults
        self.s3.reset()
        self.s3.faults = plan


def measure(s3: Store, directs: dict[str, DirectWriteManager], size: int, repeat: int) -> dict[str, Any]:
    """The contenders at one size: each DirectWriteManager of ``directs``, the rename and the floor."""
    client, admin = s3.client(), s3.client(admin=True)
    data = os.urandom(min(size, 8 * MIB)) * max(1, size // (8 * MIB))
    counter = [0]

    def key(name: str) -> str:
        counter[0] += 1
        return f"{name}/{size}/{counter[0]}"

    def direct_commit(manager: DirectWriteManager) -> None:
        view = memoryview(data)
        with manager.create_atomic(s3.uri(key("direct"))) as out:
            for start in range(0, len(data), CHUNK):
                out.write(view[start:start + CHUNK])

    contenders: dict[str, Callable[[], None]] = {
        **{name: functools.partial(direct_commit, manager) for name, manager in directs.items()},
        "rename_baseline": lambda: rename_commit(client, BUCKET, key("rename"), data),
        "raw_put_floor": lambda: raw_put(client, BUCKET, key("raw"), data),
    }
    row: dict[str, Any] = {"size_bytes": len(data), "runs": repeat}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    requests = dict.fromkeys(contenders, 0)
    for r in range(repeat):  # interleaved rounds, the contenders taking turns at going first
        for name in rotated(list(contenders), r):
            s3.clear_requests()
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
            requests[name] += len(s3.requests())
            for page in admin.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):  # free the store's memory
                for obj in page.get("Contents", []):
                    admin.delete_object(Bucket=BUCKET, Key=obj["Key"])
    for name in contenders:
        row[f"{name}_s"] = statistics.median(times[name])
        row[f"{name}_min_s"], row[f"{name}_max_s"] = min(times[name]), max(times[name])
        row[f"{name}_requests"] = requests[name] / repeat
    row["rename_over_direct"] = row["rename_baseline_s"] / row["direct_write_s"]
    for name in directs:
        suffix = name.removeprefix("direct_write")
        per_round = [d / f for d, f in zip(times[name], times["raw_put_floor"], strict=True)]
        row[f"direct{suffix}_over_floor"] = row[f"{name}_s"] / row["raw_put_floor_s"]
        row[f"direct{suffix}_over_floor_min"], row[f"direct{suffix}_over_floor_max"] = min(per_round), max(per_round)
    return row


def run(sizes: Sequence[int], repeat: int, latency: Latency | None, part_sizes: Sequence[int] = (),
        inflight: Sequence[int] = (), in_process: bool = False) -> list[dict[str, Any]]:
    """One series of measurements, the store in a child process (``in_process``: in this one); a row per size."""
    if in_process:
        with EmbeddedS3([BUCKET]) as embedded:
            return _series(InProcess(embedded), sizes, repeat, latency, part_sizes, inflight)
    with EmbeddedS3Process([BUCKET]) as child:
        return _series(child, sizes, repeat, latency, part_sizes, inflight)


def _series(s3: Store, sizes: Sequence[int], repeat: int, latency: Latency | None, part_sizes: Sequence[int],
            inflight: Sequence[int]) -> list[dict[str, Any]]:
    s3.set_faults({"latency": dataclasses.asdict(latency)} if latency is not None else None)
    options = s3.manager_options()
    directs = {"direct_write": DirectWriteManager(**options),
               **{f"direct_write_{p // MIB}MiB": DirectWriteManager(**options, part_size=p) for p in part_sizes},
               **{f"direct_write_{n}inflight": DirectWriteManager(**options, max_inflight_parts=n) for n in inflight}}
    rows = []
    for size in sizes:
        rows.append(measure(s3, directs, size, repeat))
        s3.reset()  # frees the store's memory between sizes
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
    parser.add_argument("--min-size", type=int, default=min(SIZES))
    parser.add_argument("--part-sizes", default="", help="extra direct contenders' part sizes in MiB, e.g. 16,64")
    parser.add_argument("--inflight", default="",
                        help="extra direct contenders' max_inflight_parts, e.g. 8 (named direct_write_<n>inflight)")
    parser.add_argument("--in-process", action="store_true",
                        help="serve the embedded S3 in this process (default: in a child process of its own)")
    parser.add_argument("--series", choices=("both", "latency"), default="both")
    parser.add_argument("--json", type=Path, default=RESULTS / "sizes.json")
    args = parser.parse_args(argv)
    sizes = [s for s in SIZES if args.min_size <= s <= args.max_size]
    part_sizes = [int(p) * MIB for p in args.part_sizes.split(",") if p]
    inflight = [int(n) for n in args.inflight.split(",") if n]
    load_before = os.getloadavg()
    one_series = functools.partial(run, sizes, args.repeat, part_sizes=part_sizes, inflight=inflight,
                               in_process=args.in_process)
    doc = {"latency_model": LATENCY.__dict__, "repeat": args.repeat,
           "part_size": DEFAULT_PART_SIZE, "max_inflight_parts": DEFAULT_MAX_INFLIGHT_PARTS,
           "store": "in-process" if args.in_process else "child-process",
           "local": one_series(None) if args.series == "both" else [],
           "latency": one_series(LATENCY)}
    doc["load_average"] = {"before": list(load_before), "after": list(os.getloadavg())}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    if args.json == RESULTS / "sizes.json":
        plot(doc, RESULTS / "sizes.png")
    for series in ("local", "latency"):
        print(f"-- {series}")
        print(f"{'size':>10} {'direct s':>9} {'rename s':>9} {'floor s':>9} {'rename/direct':>14} {'direct/floor':>13}"
              " (per-round min-max)")
        for r in doc[series]:
            print(f"{r['size_bytes']:>10} {r['direct_write_s']:>9.3f} {r['rename_baseline_s']:>9.3f} "
                  f"{r['raw_put_floor_s']:>9.3f} {r['rename_over_direct']:>14.2f} {r['direct_over_floor']:>13.2f} "
                  f"({r['direct_over_floor_min']:.2f}-{r['direct_over_floor_max']:.2f})")
            for n in [f"_{p // MIB}MiB" for p in part_sizes] + [f"_{k}inflight" for k in inflight]:
                print(f"{'':>10} {n[1:]}: {r[f'direct_write{n}_s']:.3f} s, x floor "
                      f"{r[f'direct{n}_over_floor']:.2f} ({r[f'direct{n}_over_floor_min']:.2f}-"
                      f"{r[f'direct{n}_over_floor_max']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
