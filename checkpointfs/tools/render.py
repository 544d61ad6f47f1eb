"""Output for people: tables on stdout (with rich when it is installed, the ``tools`` extra; plain aligned text
otherwise), and a progress line on stderr only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .doctor import DoctorReport
from .repair import NOTHING_TO_DO, REFUSED, REPAIRABLE, RepairReport
from .verify import VerifyReport
from .writers import DESCRIPTIONS, NO_METADATA

SHOWN = 20
"""How many orphans and temp files the tables name (``--json`` has up to 1000 and the full counts)."""


def _rich() -> Any:
    try:
        import rich.console
        import rich.table
    except ImportError:
        return None
    return rich


def _console(rich: Any, out: TextIO) -> Any:
    """A rich console on ``out`` that lets a closed pipe raise BrokenPipeError (rich's own exits with status 1, which
    would read as "problems found"); the command line then exits quietly with its own status."""

    class Console(rich.console.Console):  # type: ignore[misc,name-defined]
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return Console(file=out, width=max(120, rich.console.Console().width), highlight=False)


class Output:
    """Writes titled tables and lines to ``out``; ``plain`` forces the fallback renderer."""

    def __init__(self, out: TextIO | None = None, *, plain: bool = False) -> None:
        self.out = out or sys.stdout
        rich = None if plain else _rich()
        self.console = _console(rich, self.out) if rich else None
        self._rich = rich

    def line(self, text: str = "") -> None:
        """One line of text."""
        if self.console is not None:
            self.console.print(text, markup=False, soft_wrap=True)
        else:
            self.out.write(text + "\n")

    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], *,
              show_header: bool = True) -> None:
        """A table with a title."""
        cells = [["" if c is None else str(c) for c in row] for row in rows]
        if self.console is not None and self._rich is not None:
            table = self._rich.table.Table(title=title, title_justify="left", show_header=show_header)
            for header in headers:
                table.add_column(header, overflow="fold")
            for row in cells:
                table.add_row(*row)
            self.console.print(table)
            return
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
        self.out.write(f"{title}\n")
        if show_header:
            self.out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
            self.out.write("  ".join("-" * w for w in widths) + "\n")
        for row in cells:
            self.out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
        self.out.write("\n")


class Progress:
    """A count of work done, redrawn on stderr at most ten times a second, only when stderr is a terminal."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self.done = 0
        self._shown = 0.0
        self._started = time.monotonic()

    def tick(self, n: int = 1) -> None:
        """Count ``n`` more items."""
        self.done += n
        if self.enabled:
            now = time.monotonic()
            if now - self._shown >= 0.1:
                self._shown = now
                rate = self.done / max(now - self._started, 1e-9)
                self.stream.write(f"\r{self.label}: {self.done:,} files ({rate:,.0f}/s)\x1b[K")
                self.stream.flush()

    def finish(self) -> None:
        """Clear the progress line."""
        if self.enabled and self.done:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def render_inspect(result: dict[str, Any], out: Output) -> None:
    """The tables of ``checkpointfs inspect``."""
    offsets, commits = result["offsets"], result["commits"]
    rows: list[list[object]] = [
        ["checkpoint", result["checkpoint"]],
        ["query id", result["query_id"] or "(no metadata file)"],
        ["offsets", f"latest {offsets['latest']}, {offsets['count']} files "
         + (f"(log v{offsets['version']})" if offsets["version"] else "(the latest cannot be read: see below)")
         if offsets["latest"] is not None else "none"],
        ["commits", f"latest {commits['latest']}, {commits['count']} files"
         + (f" (log v{commits['version']})" if commits.get("version") else "") if commits["latest"] is not None
         else "none"],
        ["uncommitted", ", ".join(str(b) for b in result["uncommitted"]) or "none"],
        ["watermark (ms)", result["watermark_ms"]],
    ]
    out.table("Query", ["", ""], rows, show_header=False)
    if result.get("sinks"):
        out.table("Named sinks (commit log v3)", ["name", "provider", "api", "active", "commit offset"],
                  [[s["name"], (s["provider"] or "").rsplit(".", 1)[-1], s["api"], s["active"], s["commit_offset"]]
                   for s in result["sinks"]])
    if result["sources"]:
        out.table("Sources", ["id", "latest batch", "files", "latest offset"],
                  [[s["id"], s["latest"], "-" if s["files"] is None else s["files"], s["offset"]]
                   for s in result["sources"]])
    operators = result["state"]["operators"]
    if operators:
        out.table("State", ["operator", "name", "stores", "partitions", "latest version", "provider"],
                  [[o["id"], o["name"], ", ".join(o["stores"] or []) or None, o["partitions"], o["latest_version"],
                    (o["provider"] or "").rsplit(".", 1)[-1]] for o in operators])
    else:
        out.line("State: none (no stateful operator)")
    if "sink" in result:
        sink = result["sink"]
        out.table("Sink", ["output", "latest batch", "committed files", "compact interval"],
                  [[sink["path"], sink["latest"], sink["files"], sink["compact_interval"] or "(no compaction yet)"]])
    if "writers" in result:
        _render_writers(result["writers"], out)
    warnings = result.get("warnings", []) + result.get("sink", {}).get("warnings", [])
    for warning in warnings:
        out.line(f"warning: {warning['path']}: {warning['problem']}")


def _render_writers(writers: dict[str, Any], out: Output) -> None:
    """Which manager wrote each log, and the requests that cost."""
    logs = writers["logs"]
    if not any(log["batches"] for log in logs):
        return
    if all(log["method"] == NO_METADATA for log in logs if log["batches"]):
        out.line(f"Writers: unknown ({NO_METADATA}: the write id cannot be read)")
        return
    requests = ", ".join(f"{count} {operation}" for operation, count in writers["requests"].items()) or "none"
    rows = []
    for log in logs:
        history = ", ".join(
            (f"{s['first']}" if s["first"] == s["last"] else f"{s['first']}-{s['last']}") + f" {s['writer']}"
            for s in log["segments"])
        rows.append([log["log"], log["latest"], DESCRIPTIONS.get(log["latest_writer"], log["latest_writer"]),
                     history or "-", log["method"]])
    out.table(f"Writers ({requests} requests)", ["log", "latest batch", "latest writer", "batches read",
                                                 "how"], rows)


def render_verify(report: VerifyReport, out: Output) -> None:
    """The tables of ``checkpointfs verify``."""
    checked = report.checked
    out.line(f"checkpoint {report.checkpoint}" + (f", sink {report.sink}" if report.sink else ""))
    zips = (f", {checked['state_zips']} RocksDB versions ({checked.get('state_shared_files', 0)} SST/log "
            f"references)" if checked.get("state_zips") else "")
    out.line(f"checked {checked.get('log_files', 0)} log files, {checked.get('state_partitions', 0)} state "
             f"partitions{zips}" + (f", {checked.get('sink_files', 0)} committed sink files against "
                              f"{checked.get('listed', 0)} listed" if report.sink else "") +
             f" in {report.elapsed_s:.1f} s")
    if report.problems:
        out.table(f"Problems ({report.problem_count})", ["kind", "path", "problem"],
                  [[p.kind, p.path, p.problem] for p in report.problems])
    for title, listing, note in (("Orphans", report.orphans, "not in the manifest; readers ignore them"),
                                 ("Temp files", report.temp_files, "left by interrupted writes")):
        if listing.count:
            rows = [[p] for p in listing.paths[:SHOWN]]
            if listing.count > SHOWN:
                rows.append([f"... and {listing.count - SHOWN} more"])
            out.table(f"{title} ({listing.count}, {note})", ["path"], rows)
    out.line("verdict: intact" if report.ok else f"verdict: {report.problem_count} problem(s) found")


def _origin(value: object, settings: dict[str, Any], option: str) -> str:
    origin = settings["origins"].get(option)
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"{text} ({origin})" if origin else text


def render_doctor(report: DoctorReport, out: Output) -> None:
    """The table of ``checkpointfs doctor``."""
    settings = report.settings
    if settings is not None:
        rows: list[list[object]] = [
            ["spark conf", settings["spark_conf"]],
            ["endpoint", _origin(settings["endpoint"] or "AWS (from the region)", settings, "fs.s3a.endpoint")],
            ["region", _origin(settings["region"] or "boto3's default", settings, "fs.s3a.endpoint.region")],
            ["path-style access", _origin(settings["path_style_access"], settings, "fs.s3a.path.style.access")],
            ["SSL", _origin(settings["ssl"], settings, "fs.s3a.connection.ssl.enabled")],
            ["credentials", settings["credentials"]],
        ]
        if settings["bucket_overrides"]:
            rows.append(["bucket overrides", ", ".join(settings["bucket_overrides"])])
        out.table(f"Settings for bucket {settings['bucket']}", ["", ""], rows, show_header=False)
        for note in settings["notes"]:
            out.line(f"note: {note}")
    out.table(f"Store {report.store}", ["check", "result", "detail"],
              [[c.name, "ok" if c.ok else "FAIL", c.detail] for c in report.checks])
    out.line("verdict: safe for direct writes" if report.safe else
             "verdict: NOT safe for direct writes (see the failed checks)")


_VERDICTS = {NOTHING_TO_DO: "nothing to do", REPAIRABLE: "repairable", REFUSED: "left alone"}


def render_repair(report: RepairReport, out: Output) -> None:
    """The table and verdict of ``checkpointfs repair``."""
    rows: list[list[object]] = [["checkpoint", report.checkpoint], ["sink", report.sink]]
    rows += [[name, text] for name, text in report.facts.items()]
    out.table("Repair", ["", ""], rows, show_header=False)
    out.line(f"verdict: {_VERDICTS.get(report.verdict, report.verdict)}: {report.reason}")
    for path in report.deletes:
        out.line(f"{'deleted' if report.applied else 'would delete'} {path}")
    if report.verdict == REPAIRABLE:
        out.line("dry run: nothing was changed; run again with --apply to delete it, then restart the query")
    elif report.applied:
        out.line("repaired: restart the query")
