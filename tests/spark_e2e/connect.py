"""A Spark Connect server started from a command line, for the tests that run a streaming query through a Connect
client: ready once a client's first request is answered, stopped by the pid (process group) it was started with."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, wait_ready

from .conftest import Pipeline

STOP_TIMEOUT_S = 20


def connect_answers(port: int) -> None:
    """A Connect client's first request (the server's Spark version, over gRPC) answered; :class:`NotReady` while
    the port refuses connections (the server binds it once its SparkContext is up)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError as e:
        raise NotReady(f"127.0.0.1:{port}: {e}") from None
    session: Any = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").create()
    try:
        assert session.version
    finally:
        session.stop()


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def connect_server(command: Sequence[str], port: int, log_path: Path, *, env: Mapping[str, str],
                   cwd: Path | None = None) -> Iterator[str]:
    """``sc://127.0.0.1:PORT`` of the Connect server that ``command`` starts (in a session of its own, its output
    in ``log_path``), once it answers; at the end its process group gets SIGTERM, then SIGKILL, and the context
    fails if anything of that group is still alive."""
    with log_path.open("wb") as log:
        server = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, env=dict(env), cwd=cwd,
                                  start_new_session=True)
    try:
        wait_ready(f"Spark Connect server (pid {server.pid}, port {port})", lambda: connect_answers(port),
                   STARTUP_TIMEOUT_S, exit_code=server.poll, log_path=log_path)
        yield f"sc://127.0.0.1:{port}"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if _alive(server.pid):
                os.killpg(server.pid, sig)
                try:
                    server.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
    server.wait(timeout=STOP_TIMEOUT_S)

    def gone() -> None:
        if _alive(server.pid):
            raise NotReady(f"process group {server.pid} still has processes")

    wait_ready(f"the end of the Connect server's process group {server.pid}", gone, STOP_TIMEOUT_S)


def dedup_query_checkpoints_through_the_shim(url: str, p: Pipeline, partitions: int, batches: int = 3) -> None:
    """A dropDuplicates query (HDFS-backed state store) submitted from a Connect client at ``url`` runs
    ``batches`` micro-batches into a file sink on ``p``'s store: the output holds every id once, and the shim wrote
    the checkpoint (:meth:`Pipeline.assert_written_by_shim`; ``partitions``: the server's shuffle partitions)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    for b in range(batches):
        p.add_input(b, [*range(b * 4, b * 4 + 4), 0])  # id 0 again in every batch
    spark: Any = ConnectSession.builder.remote(url).getOrCreate()
    try:
        frame = (spark.readStream.schema("id LONG, key STRING").option("maxFilesPerTrigger", 1)
                 .json(str(p.input_dir)).dropDuplicates(["id"]))
        query = (frame.writeStream.format("json").option("path", p.output)
                 .option("checkpointLocation", p.checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
        ids = sorted(int(r.id) for r in spark.read.schema("id LONG, key STRING").json(p.output).collect())
    finally:
        spark.stop()
    assert ids == list(range(batches * 4))
    p.assert_written_by_shim(batches, partitions)
