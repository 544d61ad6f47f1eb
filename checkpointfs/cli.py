"""The ``checkpointfs`` command. Subcommands:

- ``s3-server``: serve an embedded S3 on 127.0.0.1 until interrupted (for tests and demos);
- ``ls-committed DIR``: the committed files of a Spark file sink's (or FileSink's) output directory;
- ``inspect``, ``verify``, ``doctor``, ``repair``: the checkpoint tools of :mod:`checkpointfs.tools` (docs/tools.md).

Exit status, every subcommand: 0 fine, 1 found problems, 2 could not run (bad arguments, an unreadable location),
130 interrupted (Ctrl-C), 141 output closed early (``| head``: nothing more is printed, no traceback).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]

DESCRIPTION = "checkpointfs: Spark streaming checkpoints on object stores, and the tools to look after them."
EPILOG = ("Exit status: 0 fine, 1 found problems, 2 could not run, 130 interrupted. "
          "Docs: docs/tools.md (inspect, verify, doctor, repair), docs/testing.md (s3-server), "
          "docs/spark.md (the shim).")
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141


def _s3_server(args: argparse.Namespace) -> int:
    from .testing import TestExtraMissingError, require_test_extra
    from .testing.faults import FaultPlan

    try:
        require_test_extra("checkpointfs s3-server")
        faults = FaultPlan.from_spec(args.faults) if args.faults else None
    except (TestExtraMissingError, ValueError, OSError) as e:
        print(f"checkpointfs s3-server: {e}", file=sys.stderr)
        return 2
    from .testing import EmbeddedS3
    with EmbeddedS3(args.bucket or ["checkpoints"], port=args.port, min_part_size=args.min_part_size,
                    faults=faults) as s3:
        print(f"embedded S3 at {s3.endpoint_url} (region {s3.region}), buckets: {', '.join(s3.buckets)}")
        print(f"  export AWS_ENDPOINT_URL_S3={s3.endpoint_url} AWS_ACCESS_KEY_ID={s3.access_key} "
              f"AWS_SECRET_ACCESS_KEY={s3.secret_key} AWS_DEFAULT_REGION={s3.region}")
        for name, value in s3.hadoop_conf().items():
            print(f"  spark.hadoop.{name}={value}")
        if faults is not None:
            print(f"  faults in force (seed {faults.seed}): {args.faults}")
        print("Ctrl-C stops it.", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


def _tool(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from .tools import commands

        handler: Handler = getattr(commands, name)
        return handler(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``checkpointfs`` command."""
    from .testing.faults import PROFILES

    parser = argparse.ArgumentParser(prog="checkpointfs", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    commands = parser.add_subparsers(dest="command", required=True)

    server = commands.add_parser("s3-server", help="serve an embedded S3 until interrupted")
    server.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    server.add_argument("--bucket", action="append", help="bucket to create (repeatable; default: checkpoints)")
    server.add_argument("--min-part-size", type=int, default=None, help="lower S3's 5 MiB minimum part size")
    server.add_argument("--faults", metavar="SPEC",
                        help="faults to inject: a profile (" + ", ".join(PROFILES) + "), a JSON object or the path "
                             "of a JSON file (docs/testing.md)")
    server.set_defaults(handler=_s3_server)


    committed = commands.add_parser("ls-committed", help="list the committed files of a file sink's output directory")
    committed.add_argument("dir", help="the output directory (s3://, gs://, az://, abfss://, wasbs://, file://, "
                                       "hdfs://, or a local path)")
    committed.add_argument("-l", "--long", action="store_true", help="also print size and modification time (ms)")

    from .tools.commands import add_common

    add_common(committed)
    committed.set_defaults(handler=_tool("run_ls_committed"))

    inspect = commands.add_parser("inspect", help="describe a checkpoint: query id, batches, sources, state, sink")
    inspect.add_argument("checkpoint", help="the checkpoint (s3://, s3a://, gs://, az://, abfss://, wasbs://, "
                         "file://, hdfs://, or a local path)")
    inspect.add_argument("--sink", metavar="OUTPUT_DIR", help="also describe this file sink's output directory")
    add_common(inspect)
    inspect.set_defaults(handler=_tool("run_inspect"))

    verify = commands.add_parser("verify", help="check a checkpoint (and its sink) is intact: exit 0, 1 problems, "
                                                "2 unreadable")
    verify.add_argument("checkpoint", help="the checkpoint (s3://, s3a://, gs://, az://, abfss://, wasbs://, "
                        "file://, hdfs://, or a local path)")
    verify.add_argument("--sink", metavar="OUTPUT_DIR", help="also check this file sink's output against its manifest")
    add_common(verify)
    verify.set_defaults(handler=_tool("run_verify"))

    doctor = commands.add_parser("doctor", help="probe an object store for what direct writes need: exit 0 safe, "
                                                "1 not safe, 2 unreachable")
    doctor.add_argument("prefix", metavar="STORE_PREFIX", help="s3://bucket/prefix, gs://bucket/prefix or "
                                                               "az://container/prefix to work under (a scratch "
                                                               "prefix is made there and removed)")
    doctor.add_argument("--writers", type=_at_least(2), default=8,
                        help="racing writers in the race probe, at least 2 (default 8)")
    doctor.add_argument("--spark-conf", metavar="FILE",
                        help="the job's spark-defaults.conf: probe with its spark.hadoop.fs.s3a.* endpoint, region, "
                             "path-style, SSL and credentials (per-bucket settings win for their bucket; "
                             "--endpoint-url wins over the file)")
    add_common(doctor)
    doctor.set_defaults(handler=_tool("run_doctor_command"))

    repair = commands.add_parser("repair", help="undo what stops a format-v2 query restarting after a crash between "
                                                "its file sink's commit and the commit log (a dry run unless "
                                                "--apply): exit 0 nothing to do or repaired, 1 repairable or refused, "
                                                "2 could not run")
    repair.add_argument("checkpoint", help="the checkpoint (s3://, s3a://, gs://, az://, abfss://, wasbs://, "
                        "file://, hdfs://, or a local path)")
    repair.add_argument("--sink", metavar="OUTPUT_DIR", required=True,
                        help="the file sink's output directory (the checkpoint does not name it)")
    repair.add_argument("--apply", action="store_true", help="delete what the dry run names")
    add_common(repair)
    repair.set_defaults(handler=_tool("run_repair"))
    return parser


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``checkpointfs`` command: the subcommand's exit status; 130 when interrupted, 141 when
    stdout was closed early (its reader stopped: nothing more is written, no traceback)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler: Handler = args.handler
    try:
        status = handler(args)
        sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        print(f"checkpointfs {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): point stdout at /dev/null so that the interpreter's final flush is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLOSED_PIPE


if __name__ == "__main__":
    sys.exit(main())
