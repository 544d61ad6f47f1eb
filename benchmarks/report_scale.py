"""What docs/benchmarks.md section 6 quotes of bench_scale's results (scale.json) beside its full table
(:func:`benchmarks.report.scale`): requests per micro-batch by partitions, the batch times compared, the time lost
under a store's rate limit, and the monthly bill."""

from __future__ import annotations

from typing import Any

from benchmarks.bill import PRICE_PER_1000_USD, monthly_bill
from benchmarks.report import _load

LATENCY_MS = 20.0
"""The store latency of the rows these quotes compare."""


def _rows(doc: dict[str, Any], throttled: bool = False) -> list[dict[str, Any]]:
    return [r for r in doc["results"] if r["latency_ms_per_request"] == LATENCY_MS and r["changelog"]
            and bool(r["throttle_writes_per_s"]) is throttled]


def _row(doc: dict[str, Any], contender: str, partitions: int, latency: float = LATENCY_MS,
         throttled: bool = False) -> dict[str, Any] | None:
    return next((r for r in doc["results"] if r["contender"] == contender and r["partitions"] == partitions
                 and r["latency_ms_per_request"] == latency and bool(r["throttle_writes_per_s"]) is throttled), None)


def _s(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def _spread(r: dict[str, Any]) -> str:
    """A row's median batch time with its runs and min-max."""
    b = r["batch_ms"]
    return (f"{_s(b['median'])} ({r['runs']} run{'s' if r['runs'] > 1 else ''}, {b['min'] / 1000:.1f}-"
            f"{_s(b['max'])})")


def extrapolated(points: list[tuple[float, float]], x: float) -> float:
    """The least-squares line through ``points`` at ``x``."""
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    slope = sum((p[0] - mx) * (p[1] - my) for p in points) / sum((p[0] - mx) ** 2 for p in points)
    return my + slope * (x - mx)


def _about(value: float) -> str:
    """``value`` to three significant figures, with thousands separators."""
    return f"{float(f'{value:.3g}'):,.0f}"


def default_extrapolated(doc: dict[str, Any], field: str, partitions: int) -> tuple[float, int] | None:
    """Spark's default manager's ``field`` at ``partitions`` by the line through its runs at other partition counts
    (latency model, no limit), with the number of runs it rests on; None with fewer than two."""
    points = [(r["partitions"], r[field]) for r in _rows(doc) if r["contender"] == "default"]
    return (extrapolated(points, partitions), len(points)) if len(points) >= 2 else None


def requests() -> str:
    """Requests per micro-batch at each partition count: the shim against Spark's default manager."""
    doc = _load("scale")
    out = ["| partitions | checkpoint files a batch | shim: requests a batch | shim: checkpoint requests per "
           "checkpoint "
           "file | Spark's default: requests a batch | default: checkpoint requests per checkpoint file | shim / "
           "default |",
           "|---|---|---|---|---|---|---|"]
    for partitions in sorted({r["partitions"] for r in _rows(doc) if r["contender"] == "shim"}):
        shim, default = _row(doc, "shim", partitions), _row(doc, "default", partitions)
        assert shim is not None
        if default is not None:
            rest = (f"{default['requests_per_batch']:,.1f} | {default['checkpoint_requests_per_file']:.2f} | "
                    f"{shim['requests_per_batch'] / default['requests_per_batch']:.3f}")
        else:
            guess = default_extrapolated(doc, "requests_per_batch", partitions)
            rest = ("not run" + (f" (about {_about(guess[0])} by the line through its {guess[1]} runs above)"
                                 if guess else "") + " | | ")
        out.append(f"| {partitions:,} | {shim['checkpoint_files_per_batch']:,.2f} | "
                   f"{shim['requests_per_batch']:,.1f} | "
                   f"{shim['checkpoint_requests_per_file']:.2f} | {rest} |")
    return "\n".join(out) + "\n"


def times() -> str:
    """The batch times compared: the shim against Spark's managers, the local-disk runs, the latency overhead."""
    doc = _load("scale")
    out = []
    for partitions in sorted({r["partitions"] for r in _rows(doc) if r["contender"] == "default"}, reverse=True):
        shim, default = _row(doc, "shim", partitions), _row(doc, "default", partitions)
        if shim is None or default is None:
            continue
        text = (f"- {partitions} partitions, {LATENCY_MS:g} ms a request: shim {_spread(shim)}, Spark's default "
                f"manager {_spread(default)}: **{shim['batch_ms']['median'] / default['batch_ms']['median']:.2f}x**")
        abortable = _row(doc, "abortable", partitions)
        if abortable is not None:
            text += (f"; the Abortable manager {_spread(abortable)} "
                     f"({abortable['batch_ms']['median'] / default['batch_ms']['median']:.2f}x)")
        out.append(text + ".")
    for partitions in sorted({r["partitions"] for r in _rows(doc) if r["contender"] == "local"}, reverse=True):
        shim, local = _row(doc, "shim", partitions), _row(doc, "local", partitions)
        if shim is not None and local is not None and local["runs"] > 1:
            medians = ", ".join(_s(m) for m in local["batch_ms"]["run_medians"])
            shims = ", ".join(_s(m) for m in shim["batch_ms"]["run_medians"])
            out.append(f"- {partitions} partitions, local disk: Spark's own manager on `file://` "
                       f"{_s(local['batch_ms']['median'])} "
                       f"(run medians {medians}) against the shim's {_s(shim['batch_ms']['median'])} on the store "
                       f"(run medians {shims}).")
    for r in doc["results"]:
        if r["contender"] == "shim" and r.get("latency_overhead_ms") is not None:
            zero = _row(doc, "shim", r["partitions"], latency=0.0)
            assert zero is not None
            pairs = [(a - b) for a in r["batch_ms"]["run_medians"] for b in zero["batch_ms"]["run_medians"]]
            out.append(f"- Latency overhead, shim, {r['partitions']} partitions: {_s(r['batch_ms']['median'])} - "
                       f"{_s(zero['batch_ms']['median'])} = **{_s(r['latency_overhead_ms'])}, "
                       f"{r['latency_overhead_vs_floor']:.2f}x the {r['floor_ms'] / 1000:.2f} s floor** (pairing the "
                       "run "
                       f"medians: {_s(min(pairs))} to {_s(max(pairs))}, {min(pairs) / r['floor_ms']:.2f}x to "
                       f"{max(pairs) / r['floor_ms']:.2f}x).")
            where = zero.get("where_ms") or {}
            commit = where.get("tasks.rocksdbChangeLogWriterCommitLatencyMs")
            files = zero.get("checkpoint_files_per_batch")
            if commit and files:
                out.append(f"- The shim at {zero['partitions']} partitions and 0 ms: {_s(commit)} of task time a batch "
                           f"in RocksDB's changelog commits, {commit / files:.0f} ms a checkpoint file.")
    for r in _rows(doc):
        if r["contender"] == "shim" and _row(doc, "default", r["partitions"]) is None:
            where = r.get("where_ms") or {}
            commit = where.get("tasks.rocksdbChangeLogWriterCommitLatencyMs")
            text = (f"- {r['partitions']:,} partitions, the shim alone: {_spread(r)}, "
                    f"{r['requests_per_batch']:,.0f} requests a batch, {r['checkpoint_requests_per_file']:.2f} per "
                    "checkpoint file")
            if commit:
                text += (f"; the changelog commits {_s(commit)} of task time a batch, "
                         f"{commit / r['checkpoint_files_per_batch']:.0f} ms a file")
            out.append(text + ".")
    return "\n".join(out)


def throttle() -> str:
    """Each contender under the store's rate limit against the same contender without it."""
    doc = _load("scale")
    out = ["| partitions, latency | contender | unthrottled (runs) | under the limit | lost | x | SlowDown answers "
           "per run | requests a batch, SlowDowns included (per checkpoint file) |",
           "|---|---|---|---|---|---|---|---|"]
    names = {"shim": "shim", "abortable": "Abortable", "default": "Spark's default", "local": "local disk"}
    for r in _rows(doc, throttled=True):
        free = _row(doc, r["contender"], r["partitions"])
        if free is None or r.get("requests_per_batch") is None:
            continue
        limited, unlimited = r["batch_ms"]["median"], free["batch_ms"]["median"]
        out.append(f"| {r['partitions']}, {LATENCY_MS:g} ms, {r['throttle_writes_per_s']:g} writes/s | "
                   f"{names.get(r['contender'], r['contender'])} | {_s(unlimited)} ({free['runs']}) | "
                   f"**{_s(limited)}** | {_s(limited - unlimited)} | {limited / unlimited:.2f} | "
                   f"{', '.join(f'{n:,}' for n in r['throttled_per_run'])} | {r['requests_per_batch']:,.1f} "
                   f"({r['checkpoint_requests_per_file']:.2f}) |")
    return "\n".join(out) + "\n"


def bill() -> str:
    """The monthly bill at each partition count, by manager, and the request classes behind it at 200."""
    doc = _load("scale")
    prices = " and ".join(f"{cls} ${usd:g}" for cls, usd in PRICE_PER_1000_USD.items() if usd)
    out = [f"S3 Standard's list prices per 1,000 requests ({prices}; `benchmarks/bill.py`), one micro-batch every 10 "
           "seconds, every request of the query (the checkpoint's keys alone in brackets):\n",
           "| partitions | Spark's default manager | Spark's Abortable manager | checkpointfs shim | shim / default |",
           "|---|---|---|---|---|"]

    def usd(r: dict[str, Any] | None) -> str:
        return "" if r is None else f"${r['monthly_usd']:,.0f} (${r['monthly_usd_checkpoint']:,.0f})"

    for partitions in sorted({r["partitions"] for r in _rows(doc) if r["contender"] == "shim"}):
        shim, default = _row(doc, "shim", partitions), _row(doc, "default", partitions)
        assert shim is not None
        if default is not None:
            left, ratio = usd(default), f"{shim['monthly_usd'] / default['monthly_usd']:.3f}"
        else:
            guess = default_extrapolated(doc, "monthly_usd", partitions)
            left = f"about ${_about(guess[0])} (extrapolated, not run)" if guess else "not run"
            ratio = f"about {shim['monthly_usd'] / guess[0]:.2f}" if guess else ""
        abortable = usd(_row(doc, "abortable", partitions))
        out.append(f"| {partitions:,} | {left} | {abortable} | **{usd(shim)}** | {ratio} |")
    bills = {c: _row(doc, c, 200) for c in ("default", "abortable", "shim")}
    classes = []
    for contender, r in bills.items():
        if r is not None:
            month = monthly_bill(r["requests_per_batch_by_operation"])
            classes.append(f"{names(contender)} " + " / ".join(_millions(month.requests[c])
                                                               for c in ("write", "read", "free")))
    default, shim = bills["default"], bills["shim"]
    out.append("\nAt 200 partitions, requests a month (write class / read class / free): " + ", ".join(classes) + ".")
    if default is not None and shim is not None:
        out[-1] += (f" With the shim that is ${default['monthly_usd'] - shim['monthly_usd']:,.0f} a month less than "
                    "with Spark's default manager for one query at one batch every 10 seconds.")
    return "\n".join(out) + "\n"


def _millions(n: float) -> str:
    """A count of requests a month in millions: whole ones from 100 M, else three significant figures."""
    if n == 0:
        return "0"
    return f"{n / 1e6:,.0f} M" if n >= 100e6 else f"{n / 1e6:.3g} M"


def names(contender: str) -> str:
    """A contender's name in prose."""
    return {"default": "Spark's default manager", "abortable": "the Abortable manager", "shim": "the shim"}.get(
        contender, contender)
