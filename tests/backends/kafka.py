"""KafkaBroker: Apache Kafka in KRaft mode (one node, broker and controller combined) in its own JVM on 127.0.0.1.

Kafka's jars come from Maven Central, copied once into ``~/.cache/checkpointfs/kafka-<version>/libs`` by
jvm-kafka/build.sh (with KafkaTool, the small client this fixture creates topics, produces and consumes with). The
fixture formats a temporary log folder with Kafka's ``kafka.tools.StorageTool``, starts ``kafka.Kafka`` on free
ports, waits until the broker answers a Metadata request listing itself (a real API round trip), and stops the pid it
started. It lives beside MiniHdfs, not in ``checkpointfs.testing``: like it, it needs this checkout's jvm-kafka/.

:func:`connector_jars` gathers Spark's Kafka connector of the running line the same way (``KAFKA_CONNECTORS`` in
:mod:`checkpointfs.spark.lines`).
"""

from __future__ import annotations

import base64
import logging
import shutil
import socket
import struct
import subprocess
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Self

from checkpointfs.spark.lines import KAFKA_CONNECTORS, line_of
from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, ServerNotReadyError, wait_ready
from checkpointfs.testing.server import ProcessServer

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "jvm-kafka" / "build.sh"
TOOL_CLASS = "io.checkpointfs.kafka.KafkaTool"
TOOL_TIMEOUT_S = 180.0
_METADATA = 3
_METADATA_VERSION = 4  # non-flexible, understood by Kafka 2.x to 4.x (4.0 dropped Metadata v0-v3)


class KafkaUnavailableError(RuntimeError):
    """Kafka could not be built or did not start; the message says why."""


def _build(*args: str) -> Path:
    done = subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise KafkaUnavailableError(f"jvm-kafka/build.sh {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def new_cluster_id() -> str:
    """A random KRaft cluster id as Kafka's own `Uuid.randomUuid()` makes one: 16 random bytes, URL-safe base64 without
    padding, redrawn while it starts with '-' (a command line would read such an id as an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def broker_home() -> Path:
    """The cached Kafka (``libs/`` holds its jars and KafkaTool), built with Maven first if absent."""
    return _build("broker")


def connector_jars(pyspark_version: str) -> list[Path]:
    """spark-sql-kafka-0-10 for ``pyspark_version``'s line and the jars it needs beyond pyspark's (its token
    provider, kafka-clients, commons-pool2), gathered from Maven Central into the cache on first use."""
    line = line_of(pyspark_version)
    folder = _build("connector", line.scala, KAFKA_CONNECTORS[line.line])
    return sorted(folder.glob("*.jar"))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metadata_brokers(port: int, timeout: float = 2.0) -> int:
    """How many brokers the listener on ``port`` lists in its answer to a Metadata request (no topics asked)."""
    client_id = b"checkpointfs-readiness"
    # request header v1 (api key, version, correlation id, client id) + Metadata v4 (topics: empty, no auto-create)
    body = struct.pack(">hhih", _METADATA, _METADATA_VERSION, 7, len(client_id)) + client_id
    body += struct.pack(">i?", 0, False)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(struct.pack(">i", len(body)) + body)
        answer = b""
        while len(answer) < 16:  # size, correlation id, throttle time, broker count
            chunk = conn.recv(4096)
            if not chunk:
                raise ConnectionError("connection closed before the Metadata answer")
            answer += chunk
    _size, correlation, _throttle, brokers = struct.unpack(">iiii", answer[:16])
    if correlation != 7:
        raise ConnectionError(f"unexpected correlation id {correlation}")
    return int(brokers)


class KafkaBroker(ProcessServer):
    """A one-node KRaft Kafka for tests. Use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.port = 0
        self.controller_port = 0
        self._startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._base: Path | None = None
        self._home: Path | None = None
        self.log_path: Path | None = None

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``: Kafka's ``bootstrap.servers``."""
        return f"127.0.0.1:{self.port}"

    def _java(self, main: str, *args: str, memory: str = "256m") -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise KafkaUnavailableError("no Java runtime (java) on PATH")
        assert self._home is not None and self._base is not None
        return [java, f"-Xmx{memory}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
                f"-Dlog4j.configuration=file:{self._base / 'log4j.properties'}",
                "-cp", str(self._home / "libs" / "*"), main, *args]

    def _write_config(self) -> Path:
        assert self._base is not None
        (self._base / "log4j.properties").write_text(
            "log4j.rootLogger=INFO,file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={self._base / 'kafka.log'}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n\n"
            "log4j.logger.kafka=INFO\nlog4j.logger.org.apache.kafka=WARN\n")
        config = self._base / "server.properties"
        config.write_text("\n".join([
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={self._base / 'data'}",
            "num.partitions=1",
            "auto.create.topics.enable=false",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "",
        ]))
        return config

    def start(self) -> Self:
        """Build Kafka if needed, format a temp log folder, start the broker and wait until it answers Metadata."""
        if self._process is not None:
            return self
        self._home = broker_home()
        self._base = Path(tempfile.mkdtemp(prefix="checkpointfs-kafka-"))
        self.log_path = self._base / "kafka.log"
        try:
            self._start_process()
        except BaseException:
            self.stop()
            raise
        log.info("Kafka (pid %s) serving at %s", self.pid, self.bootstrap)
        return self

    def _start_process(self) -> None:
        assert self._base is not None
        for attempt in range(3):  # ports picked free just before the start; on the rare clash (an exit), new ones
            self.port, self.controller_port = _free_port(), _free_port()
            config = self._write_config()
            shutil.rmtree(self._base / "data", ignore_errors=True)
            formatted = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", f"--cluster-id={new_cluster_id()}",
                           f"--config={config}"),
                capture_output=True, text=True, check=False, timeout=TOOL_TIMEOUT_S)
            if formatted.returncode != 0:
                raise KafkaUnavailableError(f"kafka-storage format failed:\n{formatted.stdout}{formatted.stderr}")
            with open(self._base / "stdout.log", "ab") as out:
                self._process = subprocess.Popen(self._java("kafka.Kafka", str(config), memory="512m"),
                                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            try:
                self._wait_ready()
                return
            except ServerNotReadyError as e:
                self._terminate(grace_s=30)
                if e.exit_code is None or attempt == 2:
                    raise KafkaUnavailableError(str(e)) from None
                log.warning("Kafka exited while starting (%s), trying new ports", e.exit_code)

    def _wait_ready(self) -> None:
        """Until the broker answers a Metadata request that lists itself (registered and unfenced)."""
        assert self._process is not None

        def listed() -> None:
            try:
                brokers = _metadata_brokers(self.port)
            except (OSError, ConnectionError, struct.error) as e:
                raise NotReady(f"Metadata on {self.bootstrap}: {type(e).__name__}: {e}") from None
            if brokers < 1:
                raise NotReady(f"Metadata on {self.bootstrap} lists {brokers} brokers")

        wait_ready(f"Kafka (pid {self._process.pid}, {self.bootstrap})", listed, self._startup_timeout_s,
                   exit_code=self._process.poll, log_path=self.log_path)

    def stop(self) -> None:
        """Stop the broker by its pid (SIGTERM, then SIGKILL) and delete its files."""
        self._terminate(grace_s=30)
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    # -- clients (KafkaTool, one JVM a call) ---------------------------------------------------------------------
    def _tool(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(self._java(TOOL_CLASS, args[0], self.bootstrap, *args[1:]), input=stdin,
                              capture_output=True, text=True, check=False, timeout=TOOL_TIMEOUT_S)
        if done.returncode != 0:
            raise KafkaUnavailableError(f"KafkaTool {args[0]} failed:\n{done.stderr[-4000:]}")
        return done.stdout

    def create_topic(self, name: str, partitions: int = 2) -> str:
        """Create topic ``name`` (replication factor 1); returns the name."""
        self._tool("create", name, str(partitions))
        return name

    def produce(self, topic: str, values: Iterable[str]) -> int:
        """Send each value (one line, no newline in it) as a record, acks=all; returns how many were sent."""
        out = self._tool("produce", topic, stdin="".join(f"{v}\n" for v in values))
        return int(out.strip().rsplit(" ", 1)[-1])

    def consume(self, topic: str) -> list[str]:
        """Every record value of ``topic``, from the beginning to its end offsets at the call."""
        return self._tool("consume", topic).splitlines()
