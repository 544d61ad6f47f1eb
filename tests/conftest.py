"""Fixtures shared by the whole suite: one SparkSession for every test marked ``spark``."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .xdist_groups import prepare as prepare_xdist_groups
from .xdist_groups import pytest_configure_node as pytest_configure_node  # hooks of xdist, defined there
from .xdist_groups import pytest_xdist_make_scheduler as pytest_xdist_make_scheduler
from .xdist_groups import write_groups

EVERY_LINE = "every_line"
"""Marker of the tests ``make lines`` runs on every supported Spark line, each in that line's environment: the JVM
conformance cases, a SIGKILL/restart exactly-once test and the query shapes (tests/spark_e2e/test_query_shapes.py)."""
UPGRADE = "upgrade"
"""Marker of the tests that take one checkpoint across Spark lines, each line in its own venv: ``make upgrade`` runs
them after ``make lines`` has made the venvs; ``make unit`` leaves them out."""
SLOW = "slow"
"""Marker of the tests that need no Spark, JVM or real store but take minutes: the whole contract under every fault
kind, the logs under faults, the memory-bound runs over a million entries. ``make unit`` runs them; ``make check``
(the fast loop) leaves them out."""


EMULATOR = "emulator"
"""Marker of the tests that need a store emulator and nothing else (no Spark, no JVM): fake-gcs-server for the
Python GCS store, Azurite's Blob service for the Azure store. Excluded from ``make check``, run in ``make unit``'s
parallel pure-Python group. Not the ``gcs`` marker, which means Google's JVM connector and puts a test in `make
unit`'s serial JVM group."""
EMULATOR_FIXTURES = ("gcs_emulator", "azurite_server", "logged_azurite")
"""The fixtures whose tests carry the ``emulator`` marker."""

# Google's Application Default Credentials look for a GCE metadata server (169.254.169.254) when no credentials are
# configured: never from these tests (the machine sends nothing beyond 127.0.0.1). Set before google.auth is imported
# (it reads them once), inherited by every child process.
for _variable, _value in (("NO_GCE_CHECK", "true"), ("GCE_METADATA_IP", "127.0.0.1:1"),
                          ("GCE_METADATA_HOST", "127.0.0.1:1")):
    os.environ.setdefault(_variable, _value)

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
"""Options of every JVM the tests start (the SparkSession's, drivers, executors, the standalone cluster's daemons, the
Connect server), through ``JAVA_TOOL_OPTIONS`` unless it is set already: the JIT's first tier only and the serial
collector, as the HDFS and Kafka fixtures already start theirs. The tests' JVMs are short-lived and small, so
C2's compilations and G1's threads cost two cores more than they return: a SIGKILL/restart test and a metrics
test took 81 s together with the defaults and 54 s with these (measured 2026-11-28). Behaviour is unchanged."""
os.environ.setdefault("JAVA_TOOL_OPTIONS", TEST_JVM_OPTIONS)
# Every Spark JVM the tests start binds its driver, block manager and UI ports to loopback (without it a driver picks
# the machine's external address, as the extended MinIO kill tests' drivers did).
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

INSTALLED_ENV = "CHECKPOINTFS_TEST_INSTALLED"
"""Set to 1 (``make lines`` does, for venvs given the wheel): the session refuses to run unless ``checkpointfs`` is
imported from the installed wheel, not from this checkout."""
REPO = Path(__file__).resolve().parent.parent


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the session as Ctrl-C does: pytest then tears down every fixture, so the servers, clusters and
    drivers they started are stopped by their pids instead of outliving a run ended from outside (``timeout``, CI)."""
    raise KeyboardInterrupt(f"pytest received signal {signum}")


SPARK_SCRATCH_ENV = "SPARK_LOCAL_DIRS"
_SCRATCH_KEY = pytest.StashKey[Path]()


def _spark_scratch(config: pytest.Config) -> None:
    """Spark's scratch space (``spark-<uuid>/userFiles-*``: a copy of every jar on ``spark.jars``, 14 to 300 MB a
    driver) goes to one folder of the session, removed at its end: a driver the tests SIGKILL never runs the shutdown
    hook that deletes its own, and /tmp filled the disk over many runs. Set by the first process (xdist's workers
    and every driver, worker and cluster the tests start inherit it); a value already set is kept."""
    if os.environ.get(SPARK_SCRATCH_ENV):
        return
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="checkpointfs-spark-scratch-"))
    os.environ[SPARK_SCRATCH_ENV] = str(scratch)
    config.stash[_SCRATCH_KEY] = scratch


def pytest_unconfigure(config: pytest.Config) -> None:
    scratch = config.stash.get(_SCRATCH_KEY, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
        os.environ.pop(SPARK_SCRATCH_ENV, None)


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    _spark_scratch(config)
    from .timings import register

    register(config)
    prepare_xdist_groups(config)
    config.addinivalue_line(
        "markers", f"{EVERY_LINE}: run on every supported Spark line by `make lines`, in that line's own venv")
    config.addinivalue_line(
        "markers", f"{UPGRADE}: one checkpoint across Spark lines, each in its own venv (`make upgrade`)")
    config.addinivalue_line(
        "markers", "comparison: runs only Spark's own managers, to compare or to show a failure is Spark's; "
        "`make comparisons` runs these, `make test` leaves them out for its time budget")
    config.addinivalue_line(
        "markers", "extended: a variant whose ground another test of `make test` covers (each says which beside its "
        "marker): `make extended` runs these, `make test` leaves them out for its time budget")
    config.addinivalue_line(
        "markers", "shapes: the query shapes in one driver (tests/spark_e2e/test_query_shapes.py); `make lines` "
        "leaves them out on LINES_WITHOUT_SHAPES")
    # here rather than in pyproject.toml, whose change would reinstall every line's venv
    config.addinivalue_line(
        "markers", f"{SLOW}: no Spark, JVM or real store, but minutes long (marked in the module); `make check` leaves "
        "them out, `make unit` runs them")
    config.addinivalue_line(
        "markers", "yarn: runs on Hadoop's MiniYARNCluster (jvm-hdfs/'s MiniYarn: 1 ResourceManager, 2 NodeManagers, "
        "127.0.0.1)")
    config.addinivalue_line(
        "markers", "kafka: runs against Apache Kafka (KRaft, one node; jvm-kafka/, cached in ~/.cache/checkpointfs)")
    config.addinivalue_line(
        "markers", "gcs: runs against fake-gcs-server through Google's Cloud Storage connector (gs://; built and "
        "fetched once into ~/.cache/checkpointfs: harness/servers/fake_gcs.py)")
    config.addinivalue_line(
        "markers", f"{EMULATOR}: runs against a store emulator alone (fake-gcs-server: the gcs_emulator fixture; "
        "Azurite: npm, cached in ~/.cache/checkpointfs), no Spark, no JVM; `make check` leaves them out, `make unit` "
        "runs them with the pure-Python tests")
    config.addinivalue_line(
        "markers", "directory_bucket: runs on the embedded S3's directory-bucket profiles (S3 Express One Zone's "
        "rules), so that `make lines ... LINE_MARKER=\"spark and directory_bucket\"` runs them on another line")
    if os.environ.get(INSTALLED_ENV) == "1":
        import checkpointfs

        origin = Path(checkpointfs.__file__).resolve()
        if origin.parent == REPO / "checkpointfs":
            raise pytest.UsageError(
                f"{INSTALLED_ENV}=1 but checkpointfs is imported from the checkout ({origin}), not the installed "
                "wheel: run pytest with --import-mode=append and without the checkout first on sys.path")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The Spark line under test and where checkpointfs comes from (per-line runs use their own venvs)."""
    import checkpointfs

    try:
        import pyspark

        spark = f"pyspark {pyspark.__version__}"
    except ImportError:
        spark = "no pyspark"
    return [f"checkpointfs: {spark}; checkpointfs from {Path(checkpointfs.__file__).resolve().parent}"]


def conformance_jars() -> list[Path]:
    """spark-hadoop-cloud of the running line, from this checkout's build (jvm-shim/target/test-deps), also when
    checkpointfs itself comes from an installed wheel."""
    from checkpointfs.spark._jars import conformance_jars as built

    return [*built(shim_dir=REPO / "jvm-shim"), *gcs_connector_jars(), *abfs_jars()]


def abfs_jars() -> list[Path]:
    """hadoop-azure and what it needs beside Spark for the running line's Hadoop, when jvm-shim/build.sh gathered
    them (Hadoop 3.4.2 and later): on the session's class path so that the shim's ``jvm-shim|azurite`` conformance
    case can open ``abfs://``. Without them that case skips."""
    try:
        from checkpointfs.spark._jars import abfs_jars as built
        from checkpointfs.spark._jars import running_line

        return built(running_line(), shim_dir=REPO / "jvm-shim")
    except ImportError:  # pragma: no cover - pyspark missing: no session either
        return []


def abfs_settings(host: str, account_name: str, account_key: str) -> dict[str, str]:
    """ABFS's settings for a flat-namespace account over the Blob endpoint at ``host``
    (:func:`harness.servers.azurite.abfs_hadoop_conf`)."""
    from harness.servers.azurite import abfs_hadoop_conf

    return abfs_hadoop_conf(host, account_name, account_key)


def gcs_connector_jars() -> list[Path]:
    """Google's GCS connector for the running line's Hadoop, when it is cached (``make backends`` fetches it): on the
    session's class path so that the shim's ``jvm-shim|gcs`` conformance case can open ``gs://`` (every class of it
    is relocated: nothing clashes with Spark's). Without it that case skips, saying so."""
    try:
        from harness.servers.fake_gcs import connector_jar_path, running_connector

        jar = connector_jar_path(running_connector())
    except ImportError:  # pragma: no cover - pyspark missing: no session either
        return []
    return [jar] if jar.is_file() else []


@pytest.fixture(scope="session")
def spark(embedded_s3_server: Any) -> Iterator[Any]:
    """One local SparkSession (local[2], no UI, 2 shuffle partitions) for the whole session. Tests set streaming
    confs (compact intervals, retention) with ``spark.conf.set`` and restore them.

    It carries checkpointfs's JVM shim (``checkpointfs.spark.configure``): the shim jar, hadoop-aws and the AWS SDK
    on ``spark.jars``, the shim as ``spark.sql.streaming.checkpointFileManagerClass`` (it delegates to Spark's own
    manager on file://), and s3a:// settings for the session's embedded S3; plus spark-hadoop-cloud for the
    conformance suite. S3A's multipart block is its 5 MiB minimum, so the suite's large files span parts."""
    pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is not installed (extra 'spark')")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH: Spark cannot start")
    builder = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("checkpointfs-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.adaptive.enabled", "false")
    )
    from checkpointfs.spark import configure

    # This JVM serves the whole session (hundreds of conformance cases through py4j): C2 pays off here, so it
    # starts without TEST_JVM_OPTIONS (the conformance cases took 66 s with C2 and 104 s with C1 alone).
    own = os.environ.get("JAVA_TOOL_OPTIONS") == TEST_JVM_OPTIONS
    if own:
        del os.environ["JAVA_TOOL_OPTIONS"]
    try:
        session = (
            configure(builder, embedded_s3_server, extra_jars=conformance_jars())
            .config("spark.hadoop.fs.s3a.multipart.size", "5M")
            .getOrCreate()
        )
    finally:
        if own:
            os.environ["JAVA_TOOL_OPTIONS"] = TEST_JVM_OPTIONS
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def minio_server() -> Iterator[Any]:
    """One real MinIO server for the session (harness.servers.minio.MinioServer): 127.0.0.1, free ports, a temp
    data directory, random root credentials, bucket ``checkpointfs-minio``; stopped by its pid at the end. The binary
    is built once with ``go install`` into ~/.cache/checkpointfs (``make setup`` does it ahead)."""
    from harness.servers.minio import MinioServer

    with MinioServer(["checkpointfs-minio"]) as server:
        yield server


@pytest.fixture(scope="session")
def logged_minio(minio_server: Any) -> Iterator[Any]:
    """The session's MinIO server behind a recording proxy (harness.servers.recording_proxy.LoggedMinio): the
    embedded S3's request log, ``client(admin=...)``, ``hadoop_conf()`` and helpers on a real store. Tests share its
    log: take a fresh prefix and the log's length (or ``reset()``) at the start."""
    from harness.servers.recording_proxy import LoggedMinio

    with LoggedMinio(minio_server) as server:
        yield server


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[Any]:
    """One fake-gcs-server for the session's pure-Python GCS tests (harness.servers.fake_gcs): 127.0.0.1, a
    free port, objects in memory, bucket ``checkpointfs-emu``; stopped by its pid at the end. The binary is built
    once with ``go install`` into ~/.cache/checkpointfs (``make backends`` does it ahead). Tests using it carry the
    ``emulator`` marker."""
    from harness.servers.fake_gcs import FakeGcsServer

    with FakeGcsServer(["checkpointfs-emu"]) as server:
        yield server


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[Any]:
    """One Azurite Blob service for the session (harness.servers.azurite.AzuriteServer): 127.0.0.1, a free port,
    in memory, container ``checkpointfs-azure``; stopped by its pid at the end. Installed once with npm into
    ~/.cache/checkpointfs (``make backends`` does it ahead)."""
    from harness.servers.azurite import AzuriteServer

    with AzuriteServer(["checkpointfs-azure"]) as server:
        yield server


@pytest.fixture(scope="session")
def logged_azurite(azurite_server: Any) -> Iterator[Any]:
    """The session's Azurite behind a recording proxy with the Blob service's classifier (tests/azure/logged.py)."""
    from tests.azure.logged import LoggedAzurite

    with LoggedAzurite(azurite_server) as server:
        yield server


@pytest.fixture(scope="session")
def hdfs_server() -> Iterator[Any]:
    """One MiniDFSCluster for the session (tests/backends/hdfs.py), WebHDFS on, in its own JVM on 127.0.0.1; shut
    down by its pid at the end. The launcher is built once by Maven into ~/.cache/checkpointfs (jvm-hdfs/)."""
    from tests.backends.hdfs import MiniHdfs

    with MiniHdfs() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Any]:
    """One Apache Kafka broker for the session (tests/backends/kafka.py): KRaft, one node, in its own JVM on 127.0.0.1,
    ready once it answers a Metadata request; stopped by its pid at the end. Its jars are copied from Maven Central
    once into ~/.cache/checkpointfs/kafka-<version> (jvm-kafka/)."""
    from tests.backends.kafka import KafkaBroker

    with KafkaBroker() as broker:
        yield broker


SERVER_GROUPS: dict[str, str | None] = {
    "yarn_cluster": "yarn", "standalone_cluster": "cluster", "hdfs_server": "hdfs", "kafka_broker": "kafka",
    "fake_gcs_server": "gcs",
    "azurite_server": None, "minio_server": "minio"}
"""The session fixtures that start a server, costliest first, each with the marker of the tests that need it (a
test may ask for its server with ``request.getfixturevalue``, behind a parametrized fixture: its marker says so;
Azurite's ``emulator`` marker is fake-gcs-server's too, so Azurite's tests are known by the fixture alone).
Under ``pytest -n 2 --dist loadgroup`` (the JVM part of ``make unit``) such a test is scheduled with that server's
group (the first that applies, in this order; tests/xdist_groups.py), so that each server starts in one worker only.
Tests using none are spread over the workers one by one."""


def server_group(fixturenames: Iterable[str], markers: Iterable[str]) -> str | None:
    """The xdist group of a test with ``fixturenames`` (its whole fixture closure) and ``markers``, or None."""
    names, marks = set(fixturenames), set(markers)
    return next((fixture for fixture, marker in SERVER_GROUPS.items() if fixture in names or marker in marks), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use a real store's or broker's fixture carry its marker (``pytest -m minio``, ``-m hdfs``,
    ``-m kafka``, ``-m gcs``, ``-m emulator`` for fake-gcs-server's and Azurite's); on an xdist worker under
    ``--dist loadgroup``, each test's server group goes to the controller's scheduler (tests/xdist_groups.py)."""
    groups: dict[str, str] = {}
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "minio_server" in names:
            item.add_marker(pytest.mark.minio)
        if "hdfs_server" in names:
            item.add_marker(pytest.mark.hdfs)
        if "kafka_broker" in names:
            item.add_marker(pytest.mark.kafka)
        if "fake_gcs_server" in names:
            item.add_marker(pytest.mark.gcs)
        if any(name in names for name in EMULATOR_FIXTURES):
            item.add_marker(getattr(pytest.mark, EMULATOR))
        explicit = item.get_closest_marker("xdist_group")  # a module's own group (tests/user_path)
        group = (str(explicit.args[0]) if explicit is not None and explicit.args
                 else server_group(names, (mark.name for mark in item.iter_markers())))
        if group is not None:
            groups[item.nodeid] = group
    write_groups(config, groups)


@pytest.fixture(autouse=True)
def _store_checks_start_afresh() -> None:
    """Each test starts as a new process would: no store verdicts remembered (checkpointfs.store.check, and the
    shim's StoreCheck in a running Spark driver's JVM), so its first create-if-absent to a bucket pays the store
    check whatever ran before it."""
    import sys

    from checkpointfs.store.check import forget_verdicts

    forget_verdicts()
    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    active = getattr(context, "_active_spark_context", None)
    if active is not None:
        try:
            active._jvm.io.checkpointfs.spark.PyBridge.forgetStoreVerdicts()
        except TypeError:  # no shim jar in this session (py4j's JavaPackage is not callable): nothing to forget
            pass
