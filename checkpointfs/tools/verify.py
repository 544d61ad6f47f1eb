"""``checkpointfs verify``: whether a checkpoint (and its file sink's output) is intact.

Checks, each problem named by its path: every log file parses at a supported version; every commit has its offsets,
the offsets have no holes, and at most one batch is uncommitted; the state of the last committed batch can be loaded
for every partition of every stateful operator; every file the sink's manifest lists as committed exists, with the
size it recorded. Reported without failing: files in the output the manifest does not list (orphans) and leftover
temp files (``.<name>.<uuid>.tmp``, ``_temporary/``, open multipart uploads).

Existence is decided by listing: the manifest's live entries are sorted externally (bounded memory) and merged with
the output's sorted listing; no file is probed on its own.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..errors import CorruptLogError, PathNotFoundError
from ..log.sink_log import METADATA_DIR
from .extsort import DEFAULT_RUN_SIZE, ExternalSorter
from .layout import VERSION_FILE, provider_of
from .rocksdb import MAX_ZIP_BYTES, shared_files
from .scan import Problem, Scan, scan
from .sinkscan import live_entries, open_sink_log
from .store import TEMP_NAME, Location

MAX_LISTED = 1000
"""How many problems, orphans and temp files a report names (the counts are always complete)."""

Tick = Callable[[int], None]


@dataclass
class Listing:
    """A capped list of paths with the full count."""

    count: int = 0
    paths: list[str] = field(default_factory=list)

    def add(self, path: str) -> None:
        """Count ``path``, and keep it while under the cap."""
        self.count += 1
        if len(self.paths) < MAX_LISTED:
            self.paths.append(path)

    def to_json(self) -> dict[str, Any]:
        """``{"count": n, "paths": [...]}``."""
        return {"count": self.count, "paths": self.paths}


@dataclass
class VerifyReport:
    """What verify found. ``ok`` is True when there is no problem; orphans and temp files are information."""

    checkpoint: str
    sink: str | None = None
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    orphans: Listing = field(default_factory=Listing)
    temp_files: Listing = field(default_factory=Listing)
    checked: Counter[str] = field(default_factory=Counter)
    last_committed: int | None = None
    uncommitted: list[int] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return self.problem_count == 0

    def report(self, problem: Problem) -> None:
        """Record ``problem`` (named while under the cap, always counted)."""
        self.problem_count += 1
        self.kinds[problem.kind] += 1
        if len(self.problems) < MAX_LISTED:
            self.problems.append(problem)

    def to_json(self) -> dict[str, Any]:
        """The JSON form (docs/tools.md)."""
        return {"ok": self.ok, "checkpoint": self.checkpoint, "sink": self.sink,
                "problems": [p.to_json() for p in self.problems], "problem_count": self.problem_count,
                "problem_kinds": dict(sorted(self.kinds.items())),
                "last_committed": self.last_committed, "uncommitted": self.uncommitted,
                "orphans": self.orphans.to_json(), "temp_files": self.temp_files.to_json(),
                "checked": dict(sorted(self.checked.items())), "elapsed_s": round(self.elapsed_s, 3)}


def verify_checkpoint(checkpoint: Location, sink: Location | None = None, *, tick: Tick | None = None,
                      run_size: int = DEFAULT_RUN_SIZE) -> VerifyReport:
    """Verify ``checkpoint`` (and the output ``sink``). Raises the :mod:`checkpointfs.errors` error of the failure
    when either cannot be read at all. ``tick(n)`` is called as work is done (for a progress display); ``run_size`` is
    the number of entries sorted in memory at once."""
    started = time.monotonic()
    report = VerifyReport(checkpoint.uri, sink.uri if sink else None)
    progress = tick or (lambda n: None)
    found = scan(checkpoint)
    for problem in found.problems:
        report.report(problem)
    report.last_committed = found.last_committed
    report.uncommitted = found.uncommitted
    _check_logs(found, report, progress)
    _check_batches(found, report)
    _check_state(found, report)
    _check_rocksdb(found, report, progress)
    for rel in found.tree.temp_files():
        report.temp_files.add(checkpoint.path(rel))
    for upload in checkpoint.open_uploads():
        report.temp_files.add(f"{upload} (open multipart upload)")
    if sink is not None:
        _check_sink(sink, report, progress, run_size)
    report.elapsed_s = time.monotonic() - started
    return report


def _check_logs(found: Scan, report: VerifyReport, tick: Tick) -> None:
    """Parse every file of offsets/, commits/ and the file sources' logs."""
    for directory, log in (("offsets", found.offsets_log()), ("commits", found.commit_log())):
        for batch_id, name in found.tree.batch_ids(directory):
            path = found.path(f"{directory}/{name}")
            try:
                log.read_file(path)
            except CorruptLogError as e:
                report.report(Problem.of_log(e))
            except PathNotFoundError:
                report.report(Problem(path, f"batch {batch_id} was listed but vanished (is a query running?)",
                                      "missing_log_batch"))
            report.checked["log_files"] += 1
            tick(1)
    for source in found.source_ids():
        if not found.is_file_source(source):
            continue
        source_log = found.source_log(source)
        for batch_id, _ in found.tree.batch_ids(f"sources/{source}", compactible=True):
            try:
                for _entry in source_log.iter_batch(batch_id):
                    pass
            except CorruptLogError as e:
                report.report(Problem.of_log(e))
            except PathNotFoundError:
                report.report(Problem(source_log.batch_path(batch_id), f"batch {batch_id} is misnamed or vanished",
                                      "missing_log_batch"))
            report.checked["log_files"] += 1
            tick(1)


def _check_batches(found: Scan, report: VerifyReport) -> None:
    """Commits have offsets, offsets have no holes, at most one batch is uncommitted."""
    offsets = set(found.offsets)
    for batch_id in found.commits:
        if batch_id not in offsets and (not found.offsets or batch_id >= found.offsets[0]):
            report.report(Problem(found.path(f"commits/{batch_id}"), f"batch {batch_id} is committed but has no "
                                                                     f"offsets (offsets/{batch_id} is missing)",
                                  "commit_without_offsets"))
    if found.offsets:
        holes = sorted(set(range(found.offsets[0], found.offsets[-1] + 1)) - offsets)
        for batch_id in holes:
            report.report(Problem(found.path(f"offsets/{batch_id}"), f"batch {batch_id} is missing between "
                                                                     f"{found.offsets[0]} and {found.offsets[-1]}",
                                  "missing_log_batch"))
    uncommitted = found.uncommitted
    if len(uncommitted) > 1:
        shown = ", ".join(str(b) for b in uncommitted[:10])
        report.report(Problem(found.path("offsets"), f"{len(uncommitted)} batches have offsets but no commit ({shown}"
                                                     f"); Spark leaves at most one", "uncommitted_batches"))


def _check_state(found: Scan, report: VerifyReport) -> None:
    """The state version of the last committed batch can be loaded in every partition of every operator."""
    last = found.last_committed
    conf_partitions = found.conf.get("spark.sql.shuffle.partitions")
    for operator in found.operators():
        expected: int | None = int(conf_partitions) if conf_partitions and conf_partitions.isdigit() else None
        try:
            meta = found.operator_metadata(operator)
        except CorruptLogError as e:
            report.report(Problem.of_log(e))
            meta = None
        if meta is not None:
            counts: list[int] = [s["numPartitions"] for s in meta.get("stateStoreInfo") or []
                                 if isinstance(s, dict) and isinstance(s.get("numPartitions"), int)]
            expected = max(counts) if counts else expected
        if last is None:
            continue
        version = last + 1
        provider = provider_of(found.conf, found.tree, operator) or "state store"
        partitions = range(expected) if expected is not None else sorted(operator.partitions)
        for partition in partitions:
            rel = f"{operator.rel}/{partition}"
            stores = operator.partitions.get(partition)
            report.checked["state_partitions"] += 1
            if not stores or all(s.latest is None for s in stores):
                report.report(Problem(found.path(rel), f"partition {partition} of operator {operator.id} has no state "
                                                       f"files; version {version} (batch {last}) cannot be loaded",
                                      "missing_state"))
                continue
            for store in stores:
                if not store.loadable(version):
                    report.report(Problem(found.path(store.rel), f"state version {version} (batch {last}) cannot be "
                                                                 f"loaded: its files are missing (latest version here: "
                                                                 f"{store.latest}; {provider.rsplit('.', 1)[-1]})",
                                          "missing_state"))


def _check_rocksdb(found: Scan, report: VerifyReport, tick: Tick) -> None:
    """Every shared file (``SSTs/``, ``logs/``) a RocksDB version zip names is listed beside it, with the size the zip
    recorded: one GetObject per zip, existence and sizes from the listing."""
    for operator in found.operators():
        for stores in operator.partitions.values():
            for store in stores:
                for name in sorted(found.tree.names(store.rel)):
                    match = VERSION_FILE.match(name)
                    if match is None or match.group(3) != "zip":
                        continue
                    _check_zip(found, report, store.rel, name, int(match.group(1)))
                    tick(1)


def _check_zip(found: Scan, report: VerifyReport, directory: str, name: str, version: int) -> None:
    path = found.path(f"{directory}/{name}")
    try:
        with found.location.manager.open(path) as stream:
            data = _read_at_most(stream, MAX_ZIP_BYTES + 1)
        if len(data) > MAX_ZIP_BYTES:
            raise CorruptLogError(path, f"larger than {MAX_ZIP_BYTES} bytes: not a RocksDB state version zip")
        needed = shared_files(data, path)
    except PathNotFoundError:
        return  # removed since the listing: the query's maintenance deletes old versions
    except CorruptLogError as e:
        report.report(Problem(e.path, e.cause, "torn_state"))
        return
    report.checked["state_zips"] += 1
    for shared in needed:
        report.checked["state_shared_files"] += 1
        folder, _, file_name = shared.rel.rpartition("/")
        size = found.tree.names(f"{directory}/{folder}").get(file_name)
        shared_path = found.path(f"{directory}/{shared.rel}")
        if size is None:
            report.report(Problem(shared_path, f"named by {path} but missing from the store: state version "
                                               f"{version} cannot be loaded", "missing_sst"))
        elif size != shared.size:
            report.report(Problem(shared_path, f"size on the store {size} differs from the {shared.size} bytes "
                                               f"{path} recorded (truncated or rewritten): state version {version} "
                                               "cannot be loaded", "sst_size_mismatch"))


def _read_at_most(stream: BinaryIO, limit: int) -> bytes:
    """The stream's bytes up to ``limit`` (a stream's ``read(n)`` may return less than ``n`` before its end)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _check_sink(location: Location, report: VerifyReport, tick: Tick, run_size: int) -> None:
    """Every live manifest entry exists with its size; unlisted files are orphans; temp files are reported."""
    sink = open_sink_log(location)
    listed = _sorted_listing(location, run_size, report, tick)
    pending = next(listed, None)
    for rel, size in live_entries(sink, report.report, run_size=run_size, on_entry=lambda: tick(1)):
        while pending is not None and pending[0] < rel:
            report.orphans.add(location.path(pending[0]))
            pending = next(listed, None)
        report.checked["sink_files"] += 1
        if pending is not None and pending[0] == rel:
            if pending[1] != size:
                report.report(Problem(location.path(rel), f"size on the store {pending[1]} differs from the "
                                                          f"{size} bytes the manifest recorded (truncated or "
                                                          "rewritten)", "size_mismatch"))
            pending = next(listed, None)
        else:
            report.report(Problem(location.path(rel), "listed as committed by the manifest but missing from the "
                                                      "store", "missing_file"))
    while pending is not None:
        report.orphans.add(location.path(pending[0]))
        pending = next(listed, None)
    for upload in location.open_uploads():
        report.temp_files.add(f"{upload} (open multipart upload)")


def _sorted_listing(location: Location, run_size: int, report: VerifyReport,
                    tick: Tick) -> Iterator[tuple[str, int]]:
    """The output's data files, sorted by path; hidden names (``_``/``.``, the manifest included) are skipped, temp
    files among them go to the report."""

    def data_files() -> Iterator[tuple[str, int]]:
        for item in location.walk():
            report.checked["listed"] += 1
            tick(1)
            if item.rel.startswith(METADATA_DIR + "/"):
                continue
            parts = item.rel.split("/")
            if any(p.startswith(("_", ".")) for p in parts):
                if "_temporary" in parts or TEMP_NAME.match(parts[-1]):
                    report.temp_files.add(location.path(item.rel))
                continue
            yield item.rel, item.size

    if location.walk_is_sorted:
        previous = ""
        for rel, size in data_files():
            if rel < previous:
                raise RuntimeError(f"{location.uri}: the store listed {rel!r} after {previous!r}: its listing is not "
                                   "sorted, which S3 guarantees")
            previous = rel
            yield rel, size
        return
    with ExternalSorter(run_size) as sorter:
        for rel, size in data_files():
            sorter.add([rel, size])
        for item in sorter:
            yield str(item[0]), int(item[1])
