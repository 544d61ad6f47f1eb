"""The handlers of ``checkpointfs inspect``, ``verify``, ``doctor`` and ``repair``: options in, a report out
(tables, or JSON with ``--json``), an exit status back. Errors are one clear line on stderr, never a traceback,
never a credential."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .. import paths
from ..errors import (
    AccessDeniedError,
    BucketNotFoundError,
    CheckpointFsError,
    InvalidPathError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from ..redact import redact
from ..sink.manifest_paths import from_manifest_path
from ..sink.reader import committed_statuses
from .doctor import run_doctor
from .inspect import inspect_checkpoint, unreadable_files
from .render import Output, Progress, render_doctor, render_inspect, render_repair, render_verify
from .repair import repair_checkpoint
from .sparkconf import read_spark_defaults
from .store import Location, open_location
from .verify import verify_checkpoint

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_UNREADABLE = 2

log = logging.getLogger(__name__)

_UNREADABLE: tuple[tuple[type[CheckpointFsError], str], ...] = (
    (AccessDeniedError, "access denied: "),
    (BucketNotFoundError, "the bucket does not exist: "),
    (StoreUnavailableError, "the store cannot be reached: "),
    (StoreError, "the store refused the request: "),
    (PathNotFoundError, ""),
    (InvalidPathError, ""),
)


def describe(command: str, error: CheckpointFsError, secrets: tuple[str, ...] = ()) -> str:
    """The one line ``checkpointfs COMMAND`` prints for ``error``, from its type: a location that cannot be read
    says so, and why (denied, missing bucket, unreachable store); credentials (the environment's, and ``secrets``)
    redacted. Every such error exits 2."""
    path, cause = redact(error.path, secrets), redact(error.cause, secrets)
    for kind, reason in _UNREADABLE:
        if isinstance(error, kind):
            return f"checkpointfs {command}: cannot read {path}: {reason}{cause}"
    return f"checkpointfs {command}: {path}: {cause}"


def _secrets(opened: list[Location]) -> tuple[str, ...]:
    return tuple(secret for location in opened for secret in location.secrets)


def _guard(command: str, args: argparse.Namespace, body: Callable[[list[Location]], int]) -> int:
    opened: list[Location] = []
    try:
        return body(opened)
    except CheckpointFsError as e:
        print(describe(command, e, _secrets(opened)), file=sys.stderr)
        return EXIT_UNREADABLE
    except KeyboardInterrupt:
        print(f"checkpointfs {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise  # the command's reader went away: main() exits quietly
    except Exception as e:
        log.debug("checkpointfs %s failed", command, exc_info=True)
        print(f"checkpointfs {command}: failed: {type(e).__name__}: {redact(str(e), _secrets(opened))}",
              file=sys.stderr)
        return EXIT_UNREADABLE
    finally:
        for location in opened:
            location.close()


def _emit_json(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _open(opened: list[Location], uri: str, args: argparse.Namespace, spark_conf: Mapping[str, str] | None = None,
          spark_conf_source: str = "") -> Location:
    location = open_location(uri, endpoint_url=args.endpoint_url, spark_conf=spark_conf,
                             spark_conf_source=spark_conf_source)
    opened.append(location)
    return location


def run_ls_committed(args: argparse.Namespace) -> int:
    """``checkpointfs ls-committed DIR [-l]``: the committed files of a file sink's output, one per line (``-l``:
    size, modification time in ms, path; ``--json``: one object); 0, or 2 when unreadable."""

    def body(opened: list[Location]) -> int:
        location = _open(opened, args.dir, args)
        statuses = committed_statuses(location.manager, location.uri)
        files = [(status, from_manifest_path(status.path, s3_scheme="s3")) for status in statuses]
        if args.json:
            _emit_json({"dir": location.uri, "files": [
                {"path": path, "size": status.size, "modification_time_ms": status.modification_time}
                for status, path in files]})
        else:
            for status, path in files:
                sys.stdout.write(f"{status.size}\t{status.modification_time}\t{path}\n" if args.long else f"{path}\n")
        return EXIT_OK

    return _guard("ls-committed", args, body)


def run_inspect(args: argparse.Namespace) -> int:
    """``checkpointfs inspect CHECKPOINT [--sink DIR]``: 0; 1 when a file it reads is torn, corrupt or from a newer
    Spark (named in ``warnings``); 2 when the checkpoint cannot be read at all."""

    def body(opened: list[Location]) -> int:
        checkpoint = _open(opened, args.checkpoint, args)
        sink = _open(opened, args.sink, args) if args.sink else None
        result = inspect_checkpoint(checkpoint, sink)
        if args.json:
            _emit_json(result)
        else:
            render_inspect(result, Output(plain=args.plain))
        return EXIT_PROBLEMS if unreadable_files(result) else EXIT_OK

    return _guard("inspect", args, body)


def run_verify(args: argparse.Namespace) -> int:
    """``checkpointfs verify CHECKPOINT [--sink DIR]``: 0 intact, 1 problems, 2 unreadable."""

    def body(opened: list[Location]) -> int:
        checkpoint = _open(opened, args.checkpoint, args)
        sink = _open(opened, args.sink, args) if args.sink else None
        progress = Progress("verify")
        try:
            report = verify_checkpoint(checkpoint, sink, tick=progress.tick)
        finally:
            progress.finish()
        if args.json:
            _emit_json(report.to_json())
        else:
            render_verify(report, Output(plain=args.plain))
        return EXIT_OK if report.ok else EXIT_PROBLEMS

    return _guard("verify", args, body)


def run_doctor_command(args: argparse.Namespace) -> int:
    """``checkpointfs doctor STORE_PREFIX``: 0 safe, 1 not safe, 2 unreachable."""

    def body(opened: list[Location]) -> int:
        conf = read_spark_defaults(args.spark_conf) if args.spark_conf else None
        location = _open(opened, args.prefix, args, conf, args.spark_conf or "")
        report = run_doctor(location, writers=args.writers)
        if args.json:
            _emit_json(report.to_json())
        else:
            render_doctor(report, Output(plain=args.plain))
        return EXIT_OK if report.safe else EXIT_PROBLEMS

    return _guard("doctor", args, body)


def run_repair(args: argparse.Namespace) -> int:
    """``checkpointfs repair CHECKPOINT --sink DIR [--apply]``: 0 nothing to do or repaired, 1 repairable (a dry
    run) or refused, 2 could not run."""

    def body(opened: list[Location]) -> int:
        checkpoint = _open(opened, args.checkpoint, args)
        sink = _open(opened, args.sink, args)
        if _place(checkpoint) == _place(sink):
            raise InvalidPathError(sink.uri, "the sink's output directory is the checkpoint itself: give the file "
                                             "sink's output directory (its path option) as --sink")
        report = repair_checkpoint(checkpoint, sink, apply=args.apply)
        if args.json:
            _emit_json(report.to_json())
        else:
            render_repair(report, Output(plain=args.plain))
        return report.exit_status

    return _guard("repair", args, body)


def _place(location: Location) -> tuple[str, ...]:
    """Where ``location`` is, whatever URI form names it (``s3://`` and ``s3a://`` of one key; a relative and an
    absolute local path)."""
    if location.is_object_store:
        target = paths.parse_object(location.uri)
        return target.family, target.account, target.bucket, target.key
    parsed = paths.parse(location.uri)
    if parsed.scheme in ("", "file", "local"):
        return "file", os.path.abspath(parsed.path)
    return parsed.scheme, parsed.authority, parsed.path.rstrip("/")


def add_common(parser: argparse.ArgumentParser) -> None:
    """The options every tool takes."""
    parser.add_argument("--endpoint-url", help="S3 endpoint (default: the AWS configuration), the GCS JSON API's "
                        "for gs:// (default: $STORAGE_EMULATOR_HOST, else Google's), or an Azure account's Blob "
                        "endpoint (Azurite: http://127.0.0.1:10000/devstoreaccount1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout, nothing else")
    parser.add_argument("--plain", action="store_true", help="plain text tables, even when rich is installed")
