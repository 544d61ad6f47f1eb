"""``checkpointfs inspect``: where a streaming query is: its id, batches, sources, state layout and sink, and which
manager wrote its logs (:mod:`checkpointfs.tools.writers`)."""

from __future__ import annotations

from typing import Any

from ..errors import CheckpointFsError, CorruptLogError
from ..log import names
from ..log.sink_log import METADATA_DIR
from .layout import provider_of
from .scan import Problem, Scan, scan
from .sinkscan import SinkLog, live_entries, open_sink_log
from .store import Location
from .writers import describe_writers


def inspect_checkpoint(checkpoint: Location, sink: Location | None = None) -> dict[str, Any]:
    """The description of ``checkpoint`` (and of the sink output ``sink``) as a JSON-ready dict: the keys of
    docs/tools.md. Raises the :mod:`checkpointfs.errors` error of the failure when it cannot
    be read."""
    found = scan(checkpoint)
    result = _describe(found)
    logs = [(checkpoint, directory, found.tree.batch_ids(directory)) for directory in ("offsets", "commits")]
    if sink is not None:
        sink_log = open_sink_log(sink)
        result["sink"] = _describe_sink(sink_log)
        logs.append((sink, METADATA_DIR, sorted(sink_log.file_names.items())))
    writers = describe_writers(logs)
    result["warnings"] += writers.pop("warnings")
    result["writers"] = writers
    return result


def unreadable_files(result: dict[str, Any]) -> list[str]:
    """The files ``result``'s warnings name as unreadable (torn, corrupt, from a newer Spark): every warning but the
    notes on which managers wrote the logs."""
    warnings = result["warnings"] + result.get("sink", {}).get("warnings", [])
    return [w["path"] for w in warnings if w.get("kind") != "mixed_writers"]


def _describe(found: Scan) -> dict[str, Any]:
    warnings = [p.to_json() for p in found.problems]
    if found.offsets_problem is not None:
        warnings.append(found.offsets_problem.to_json())
    metadata = found.latest_offsets.metadata if found.latest_offsets else None
    result: dict[str, Any] = {
        "checkpoint": found.location.uri,
        "query_id": found.query_id,
        "offsets": {"latest": found.offsets[-1] if found.offsets else None, "count": len(found.offsets),
                    "version": found.latest_offsets.version if found.latest_offsets else None},
        "commits": {"latest": found.last_committed, "count": len(found.commits), "version": None},
        "sinks": [],
        "uncommitted": found.uncommitted,
        "watermark_ms": metadata.batch_watermark_ms if metadata else None,
        "batch_timestamp_ms": metadata.batch_timestamp_ms if metadata else None,
        "sources": [],
        "state": {"operators": []},
    }
    _describe_latest_commit(found, result, warnings)
    for source in found.source_ids():
        result["sources"].append(_describe_source(found, source, warnings))
    for operator in found.operators():
        entry: dict[str, Any] = {"id": operator.id, "partitions": len(operator.partitions),
                                 "latest_version": operator.latest_version,
                                 "provider": provider_of(found.conf, found.tree, operator), "name": None,
                                 "stores": None}
        try:
            meta = found.operator_metadata(operator)
        except CorruptLogError as e:
            warnings.append(Problem.of_log(e).to_json())
            meta = None
        if meta is not None:
            info = meta.get("operatorInfo") or {}
            stores = meta.get("stateStoreInfo") or []
            entry["name"] = info.get("operatorName")
            entry["stores"] = [s.get("storeName") for s in stores if isinstance(s, dict)]
        result["state"]["operators"].append(entry)
    result["warnings"] = warnings
    return result


def _describe_latest_commit(found: Scan, result: dict[str, Any], warnings: list[dict[str, str]]) -> None:
    """The latest commit's format version and, from version 3 on, the query's named sinks (one read)."""
    if found.last_committed is None:
        return
    try:
        commit = found.commit_log().get(found.last_committed)
    except CorruptLogError as e:
        warnings.append(Problem.of_log(e).to_json())
        return
    if commit is None:
        return
    result["commits"]["version"] = commit.version
    sinks = commit.sink_metadata if isinstance(commit.sink_metadata, dict) else {}
    result["sinks"] = [{"name": name, "provider": info.get("providerName"), "api": info.get("apiVersion"),
                        "active": info.get("isActive"), "commit_offset": info.get("commitOffset")}
                       for name, info in sinks.items() if isinstance(info, dict)]


def _describe_source(found: Scan, source: str, warnings: list[dict[str, str]]) -> dict[str, Any]:
    """One source: ``id`` its index (a number) or, for a named source, its name (a string)."""
    directory = f"sources/{source}"
    ids = found.tree.batch_ids(directory, compactible=True)
    latest = ids[-1][0] if ids else None
    files: int | None = None
    if found.is_file_source(source) and latest is not None:
        log = found.source_log(source)
        files = 0
        try:
            for batch_id in names.valid_batches(latest, log.compact_interval):
                files += sum(1 for _ in log.iter_batch(batch_id))
        except CheckpointFsError as e:
            warnings.append(Problem.of_log(e).to_json())
            files = None
    return {"id": int(source) if source.isdigit() else source, "latest": latest, "files": files,
            "offset": found.source_offset(source)}


def _describe_sink(sink: SinkLog) -> dict[str, Any]:
    location = sink.location
    problems: list[dict[str, str]] = []
    files = sum(1 for _ in live_entries(sink, lambda p: problems.append(p.to_json()), parse_all=False))
    return {"path": location.uri, "latest": sink.latest, "files": files, "compact_interval": sink.compact_interval,
            "warnings": problems}
