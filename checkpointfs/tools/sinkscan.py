"""Reading a file sink's manifest (``<output>/_spark_metadata``) as a stream: every batch file is parsed entry by
entry, and the entries of the live set (the latest compaction and the batches after it) go to an external sorter,
so a manifest of any length is read in bounded memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .. import paths
from ..errors import CorruptLogError, PathNotFoundError
from ..log import names
from ..log.sink_log import DELETE, METADATA_DIR, FileStreamSinkLog
from ..sink.manifest_paths import canonical_manifest_path, canonical_store_path
from .extsort import DEFAULT_RUN_SIZE, ExternalSorter
from .scan import Problem
from .store import Location

Report = Callable[[Problem], None]


@dataclass
class SinkLog:
    """The manifest of the output at ``location``: its batch ids, latest batch and compaction interval."""

    location: Location
    log: FileStreamSinkLog
    batch_ids: list[int]
    file_names: dict[int, str] = field(default_factory=dict)
    """Batch id -> the name of its file in ``_spark_metadata`` (``N`` or ``N.compact``)."""

    @property
    def latest(self) -> int | None:
        """The latest batch of the manifest."""
        return self.batch_ids[-1] if self.batch_ids else None

    @property
    def compact_interval(self) -> int | None:
        """The interval read off the ``.compact`` files; None before the first compaction."""
        if not any(self.log.is_compaction_batch(b) and b + 1 >= self.log.compact_interval for b in self.batch_ids):
            return None
        return self.log.compact_interval


def open_sink_log(location: Location) -> SinkLog:
    """The manifest of ``location``; :class:`PathNotFoundError` when the directory has none."""
    log = FileStreamSinkLog(location.manager, location.path(METADATA_DIR), read_only=True, deletion=False)
    files = log.batch_files()
    if not files:
        raise PathNotFoundError(location.path(METADATA_DIR), "no sink manifest here: not the output directory of a "
                                                             "Spark file sink (or it never committed a batch)")
    sink = SinkLog(location, log, [b for b, _ in files], {b: paths.basename(s.path) for b, s in files})
    sink.log._compact_interval = names.compact_interval_from_listing(  # from this listing, no second one
        log.default_compact_interval, [b for b, s in files if s.name.endswith(names.COMPACT_SUFFIX)])
    return sink


def live_entries(sink: SinkLog, report: Report, *, run_size: int = DEFAULT_RUN_SIZE,
                 on_entry: Callable[[], None] | None = None, parse_all: bool = True) -> Iterator[tuple[str, int]]:
    """``(path relative to the output, size)`` of every live file of the manifest, sorted by path (the last entry
    of a path wins; ``delete`` entries remove it). With ``parse_all``, the batch files older than the live set are
    parsed too (for torn files). Problems go to ``report``."""
    latest = sink.latest
    if latest is None:
        return
    interval = sink.log.compact_interval
    live = set(names.valid_batches(latest, interval))
    root = canonical_store_path(sink.location.uri)
    present = set(sink.batch_ids)
    for missing in sorted(live - present):
        report(Problem(sink.log.batch_path(missing), f"batch {missing} of the manifest is missing (the live set "
                                                     f"needs batches {min(live)}..{latest})", "missing_log_batch"))
    with ExternalSorter(run_size) as sorter:
        sequence = 0
        for batch_id in sink.batch_ids:
            in_live = batch_id in live
            if not in_live and not parse_all:
                continue
            path = sink.log.batch_path(batch_id)
            try:
                for entry in sink.log.iter_batch(batch_id):
                    if on_entry is not None:
                        on_entry()
                    if not in_live or entry.is_dir:
                        continue
                    canonical = canonical_manifest_path(entry.path)
                    if not canonical.startswith(root + "/"):
                        report(Problem(entry.path, f"listed by {path} outside the output directory {sink.location.uri}",
                                       "outside_output"))
                        continue
                    sorter.add([canonical[len(root) + 1:], sequence, entry.action == DELETE, entry.size])
                    sequence += 1
            except CorruptLogError as e:
                report(Problem.of_log(e))
            except PathNotFoundError:
                report(Problem(path, f"batch {batch_id} of the manifest is misnamed or vanished while reading "
                                     f"(expected {path}; is a query writing?)", "missing_log_batch"))
        current: list[object] | None = None
        for item in sorter:
            if current is not None and item[0] != current[0] and not current[2]:
                yield str(current[0]), int(current[3])  # type: ignore[call-overload]
            current = item
        if current is not None and not current[2]:
            yield str(current[0]), int(current[3])  # type: ignore[call-overload]
