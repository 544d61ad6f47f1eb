"""Where ``make test``'s time goes, from the timings file a gate run wrote (harness/parts.sh, tests/timings.py).

    python -m harness.suite_times TIMINGS.jsonl [--out benchmarks/results/suite_times.json] [--docs docs/testing.md]

Aggregates the run's records into one results file: each part's wall time; per test module its tests and seconds
(set-up, call and teardown summed, by Spark line); the costly fixture set-ups by kind (JVM and SparkSession starts,
each server's start, the standalone cluster); and the slowest tests. Then regenerates the table in docs/testing.md
from that file, so the page quotes the file and nothing else: its ``suite_times`` region, which
``python -m benchmarks.quote`` also writes (with :func:`body`) and ``--check`` compares with the file.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "suite_times.json"
DOCS = REPO / "docs" / "testing.md"
BEGIN = ("<!-- results:suite_times: written by `python -m benchmarks.quote` from "
         "benchmarks/results/suite_times.json -->")
"""The markers of docs/testing.md's section, as benchmarks/quote.py writes them (it renders the section with
:func:`body` too)."""
END = "<!-- /results:suite_times -->"

FIXTURE_KINDS = {
    "spark": "SparkSession (local, one JVM), with the shim jars",
    "minio_server": "MinIO server start",
    "hdfs_server": "MiniDFSCluster start (a JVM)",
    "kafka_broker": "Kafka broker start (KRaft, a JVM)",
    "fake_gcs_server": "fake-gcs-server start",
    "gcs_emulator": "fake-gcs-server start (Python store tests)",
    "azurite_server": "Azurite start",
    "standalone_cluster": "Spark standalone master and 2 workers",
    "embedded_s3_server": "embedded S3 start",
    "logged_minio": "MinIO behind the recording proxy",
}
"""The fixtures whose set-up is a server or JVM start, with what each starts."""

log = logging.getLogger("checkpointfs.suite_times")


@dataclass
class Totals:
    """A count and a sum of seconds."""

    count: int = 0
    seconds: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "seconds": round(self.seconds, 1)}


def read(path: Path) -> list[dict[str, Any]]:
    """The records of one timings file (a torn last line, from a run ended midway, is skipped)."""
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            log.warning("%s:%d: not a JSON record, skipped", path, number)
    return records


def _part_at(parts: list[dict[str, Any]], at: float | None) -> str:
    """The part that was running at time ``at`` (records carry the time they were written)."""
    for part in parts:
        if at is not None and "start" in part and part["start"] <= at <= part["end"] + 1:
            return str(part["part"])
    return "-"


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The results file's content: parts, modules, fixtures and slowest tests."""
    parts: list[dict[str, Any]] = [{k: r[k] for k in ("gate", "part", "seconds", "exit", "start", "end") if k in r}
             for r in records if r["kind"] == "part"]
    modules: dict[tuple[str, str], Totals] = defaultdict(Totals)
    tests: dict[tuple[str, str], float] = defaultdict(float)
    outcomes: dict[str, int] = defaultdict(int)
    for r in records:
        if r["kind"] != "test":
            continue
        module = r["nodeid"].split("::", 1)[0]
        key = (module, r["line"])
        if r["phase"] == "call":
            modules[key].count += 1
            outcomes[r["outcome"]] += 1
        elif r["phase"] == "setup" and r["outcome"] == "skipped":
            modules[key].count += 1
            outcomes["skipped"] += 1
        modules[key].seconds += r["seconds"]
        tests[(r["nodeid"], r["line"])] += r["seconds"]
    fixtures: dict[str, Totals] = defaultdict(Totals)
    for r in records:
        if r["kind"] == "fixture" and r["fixture"] in FIXTURE_KINDS:
            fixtures[r["fixture"]].add(r["seconds"])
    slowest = sorted(tests.items(), key=lambda item: -item[1])[:25]
    drivers = [r for r in records if r["kind"] == "driver"]
    by_part: dict[str, Totals] = defaultdict(Totals)
    for r in records:
        if r["kind"] == "test" and r["phase"] == "call":
            by_part[_part_at(parts, r.get("at"))].add(r["seconds"])
    return {
        "parts": parts,
        "total_seconds": sum(p["seconds"] for p in parts),
        "outcomes": dict(sorted(outcomes.items())),
        "tests_by_part": {part: totals.as_dict() for part, totals in by_part.items()},
        "drivers": {"started": len(drivers), "sigkilled": sum(1 for d in drivers if d["killed"]),
                    "seconds": round(sum(d["seconds"] for d in drivers), 1)},
        "fixtures": {name: {"what": FIXTURE_KINDS[name], **totals.as_dict()}
                     for name, totals in sorted(fixtures.items(), key=lambda item: -item[1].seconds)},
        "modules": [{"module": module, "line": line, **totals.as_dict()}
                    for (module, line), totals in sorted(modules.items(), key=lambda item: -item[1].seconds)],
        "slowest_tests": [{"test": nodeid, "line": line, "seconds": round(seconds, 1)}
                          for (nodeid, line), seconds in slowest],
    }


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def table(results: dict[str, Any], modules: int = 15) -> str:
    """docs/testing.md's generated section, markers included, from the results file's content."""
    return "\n".join([BEGIN, "", body(results, modules), "", END])


def body(results: dict[str, Any], modules: int = 15) -> str:
    """The tables between the section's markers."""
    by_part = {part: t for part, t in results["tests_by_part"].items() if part != "-"}  # "-": no part window
    lines = ["| part of the gate | wall |" + (" tests run (their seconds) |" if by_part else ""),
             "|---|---|" + ("---|" if by_part else "")]
    for p in results["parts"]:
        tests = by_part.get(p["part"], {})
        lines.append(f"| `make {p['part']}` | {_minutes(p['seconds'])} |"
                     + (f" {tests.get('count', 0)} ({tests.get('seconds', 0)} s) |" if by_part else ""))
    lines += [f"| **total** | **{_minutes(results['total_seconds'])}** |" + (" |" if by_part else ""), ""]
    drivers = results["drivers"]
    if drivers["started"]:  # runs recorded before harness/driver.py wrote its records have none
        lines += [f"Spark driver processes started by the tests: {drivers['started']} ({drivers['sigkilled']} of "
                  f"them SIGKILLed), alive {_minutes(drivers['seconds'])} in all.", ""]
    lines += ["| server or JVM start (fixture) | starts | seconds in all |", "|---|---|---|"]
    lines += [f"| {f['what']} (`{name}`) | {f['count']} | {f['seconds']} |" for name, f in results["fixtures"].items()]
    lines += ["", "| test module (line) | tests | seconds (set-up, call, teardown) |", "|---|---|---|"]
    lines += [f"| `{m['module']}` ({m['line']}) | {m['count']} | {m['seconds']} |"
              for m in results["modules"][:modules]]
    return "\n".join(lines)


def write_docs(results: dict[str, Any], docs: Path) -> None:
    """Replaces the ``suite_times`` region of ``docs`` (markers included) with :func:`table`."""
    from benchmarks.quote import regions

    text = docs.read_text()
    found = [r for r in regions(text, docs) if r.name == "suite_times"]
    if not found:
        raise SystemExit(f"{docs}: no suite_times region ({BEGIN!r} ... {END!r})")
    docs.write_text(text[:found[0].start] + table(results) + text[found[0].end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.suite_times", description=__doc__.split("\n\n")[0])
    parser.add_argument("timings", type=Path, nargs="?", help="a gate run's timings file (omit to redo the docs)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.timings is not None:
        results = aggregate(read(args.timings))
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        log.info("wrote %s", args.out)
    results = json.loads(args.out.read_text())
    write_docs(results, args.docs)
    log.info("wrote %s", args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
