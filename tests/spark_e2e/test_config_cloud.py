"""configure(gcs=..., azure=...) and the jar set check, without starting Spark: the short keys per line, the
connectors named on spark.jars (each file name once), the fetch of Google's connector from a Maven repository, and
the refusals that name a missing jar and its version."""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import checkpointfs.spark.config as config
import checkpointfs.spark.maven as maven
from checkpointfs.spark import JarSetError, configure, spark_conf
from checkpointfs.spark._jars import REPO_SHIM_DIR, check_jar_set
from checkpointfs.spark.lines import AZURE_DEPS, LINES, GcsConnector, SparkLine, line_of
from checkpointfs.spark.stores import azure_settings, gcs_settings

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pyspark") is None,
                                reason="the configuration reads the Spark line off the installed pyspark")

FAKE_GCS = {"endpoint": "http://127.0.0.1:4443", "project": "p", "auth": "none"}
AZURITE = {"endpoint": "http://127.0.0.1:10000", "account": "devstoreaccount1", "account_key": "a2V5"}


def test_gcs_short_keys_name_the_lines_connector_settings() -> None:
    on_43 = gcs_settings(FAKE_GCS, line_of("4.3"))
    assert on_43["fs.gs.impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
    assert on_43["fs.AbstractFileSystem.gs.impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"
    assert on_43["fs.gs.storage.root.url"] == "http://127.0.0.1:4443/"
    assert on_43["fs.gs.project.id"] == "p"
    assert on_43["fs.gs.auth.type"] == "UNAUTHENTICATED"
    assert on_43["fs.gs.block.size"] == str(64 * 1024 * 1024)  # Hadoop 3.5's "64m" as bytes
    on_41 = gcs_settings(FAKE_GCS, line_of("4.1"))  # Hadoop 3.4.2 names no GCS connector of its own
    assert "fs.gs.block.size" not in on_41 and on_41["fs.gs.auth.type"] == "UNAUTHENTICATED"
    on_35 = gcs_settings(FAKE_GCS, line_of("3.5"))  # connector 2.2.x: booleans, no fs.gs.auth.type
    assert on_35["fs.gs.auth.null.enable"] == "true" and on_35["fs.gs.auth.service.account.enable"] == "false"
    assert "fs.gs.auth.type" not in on_35


def test_a_service_account_key_file_per_connector_release() -> None:
    key = {"service_account_key_file": "/secrets/sa.json"}
    assert gcs_settings(key, line_of("4.3"))["fs.gs.auth.type"] == "SERVICE_ACCOUNT_JSON_KEYFILE"
    on_35 = gcs_settings(key, line_of("3.5"))
    assert on_35["fs.gs.auth.service.account.enable"] == "true"
    for settings in (on_35, gcs_settings(key, line_of("4.3"))):
        assert settings["fs.gs.auth.service.account.json.keyfile"] == "/secrets/sa.json"
    with pytest.raises(ValueError, match=r"needs gcs-connector 3\.x; hadoop3-2\.2\.28"):
        gcs_settings({"auth": "application_default"}, line_of("3.5"))


def test_azure_short_keys_for_an_emulator_and_for_an_account() -> None:
    emulator = azure_settings(AZURITE, line_of("4.3"))
    host = "devstoreaccount1.dfs.core.windows.net"
    assert emulator[f"fs.azure.account.key.{host}"] == "a2V5"
    assert emulator[f"fs.azure.account.auth.type.{host}"] == "SharedKey"
    assert emulator["fs.azure.abfs.endpoint"] == "127.0.0.1:10000"
    assert emulator["fs.azure.always.use.https"] == "false"
    assert emulator["fs.azure.networking.library"] == "JDK_HTTP_URL_CONNECTION"
    assert emulator["fs.azure.account.hns.enabled"] == "false"
    assert emulator["fs.azure.fns.account.service.type"] == "BLOB"
    real = azure_settings({"account": "prod", "sas_token": "sv=1", "hierarchical_namespace": True}, line_of("4.3"))
    assert real == {"fs.azure.account.auth.type.prod.dfs.core.windows.net": "SAS",
                    "fs.azure.sas.fixed.token.prod.dfs.core.windows.net": "sv=1",
                    "fs.azure.account.hns.enabled": "true"}
    with pytest.raises(ValueError, match=r"fixed SAS token needs hadoop-azure 3\.4"):
        azure_settings({"account": "prod", "sas_token": "sv=1"}, line_of("3.5"))
    with pytest.raises(ValueError, match="needs account="):
        azure_settings({"account_key": "a2V5"}, line_of("4.3"))


@pytest.mark.parametrize(("store", "given"), [("gcs", {"bucket": "b"}), ("azure", {"container": "c"})])
def test_an_unknown_store_setting_names_the_short_keys(store: str, given: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=rf"unknown (GCS|Azure) setting '{next(iter(given))}'"):
        spark_conf(None, **{store: given})  # type: ignore[arg-type]


@pytest.fixture()
def fetched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, list[str]]:
    """configure()'s connector fetches, standing in: jar files under ``tmp_path`` named as the real ones, hadoop-azure
    3.5.0's including the wildfly-openssl that hadoop-aws 3.5.0's folder holds too; the calls recorded."""
    calls: dict[str, list[str]] = {"gcs": [], "azure": []}

    def jar(name: str) -> Path:
        path = tmp_path / "fetched" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"")
        return path

    def gcs(connector: GcsConnector) -> Path:
        calls["gcs"].append(connector.version)
        return jar(connector.jar_name)

    def azure(hadoop: str) -> list[Path]:
        calls["azure"].append(hadoop)
        return [jar(name) for name in AZURE_DEPS[hadoop].jar_names]

    monkeypatch.setattr(config, "gcs_connector_jar", gcs)
    monkeypatch.setattr(config, "resolved_azure_jars", azure)
    return calls


@pytest.mark.parametrize("line", LINES, ids=lambda line: f"spark-{line.line}")
def test_each_line_gets_its_connectors_on_spark_jars_each_name_once(line: SparkLine, fetched: dict[str, list[str]],
                                                                     tmp_path: Path) -> None:
    deps = tmp_path / "deps"
    hadoop = line.hadoop
    (deps / f"hadoop-{hadoop}").mkdir(parents=True)
    for name in (f"hadoop-aws-{hadoop}.jar", "wildfly-openssl-2.2.5.Final.jar"):
        (deps / f"hadoop-{hadoop}" / name).write_bytes(b"")
    conf = spark_conf(None, gcs=FAKE_GCS, azure=AZURITE, deps_dir=deps, line=line)
    names = [Path(j).name for j in conf["spark.jars"].split(",")]
    assert len(names) == len(set(names)), names
    assert line.gcs_connector.jar_name in names and f"hadoop-azure-{hadoop}.jar" in names
    assert set(AZURE_DEPS[hadoop].jar_names) <= set(names)
    assert fetched == {"gcs": [line.gcs_connector.version], "azure": [hadoop]}
    assert conf["spark.hadoop.fs.gs.storage.root.url"] == "http://127.0.0.1:4443/"
    assert conf["spark.hadoop.fs.azure.abfs.endpoint"] == "127.0.0.1:10000"


def test_a_connector_of_the_users_own_is_not_fetched_again(fetched: dict[str, list[str]], tmp_path: Path) -> None:
    mine = tmp_path / "gcs-connector-3.1.20-shaded.jar"
    mine.write_bytes(b"")
    conf = spark_conf(None, gcs={}, extra_jars=[mine])
    assert str(mine) in conf["spark.jars"].split(",") and fetched["gcs"] == []


def test_packages_mode_refuses_the_cloud_connectors() -> None:
    with pytest.raises(ValueError, match=r"gcs= and azure= name their connectors' jars on spark\.jars"):
        spark_conf(None, gcs=FAKE_GCS, packages=True)


def test_a_missing_jar_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(JarSetError, match=rf"{tmp_path}/gone\.jar does not exist"):
        spark_conf(None, extra_jars=[tmp_path / "gone.jar"])


def test_a_builders_hadoop_aws_of_another_hadoop_is_refused_before_the_session(tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    old = tmp_path / "hadoop-aws-3.3.4.jar"
    old.write_bytes(b"")
    line = line_of("4.3")
    with pytest.raises(JarSetError, match=r"hadoop-aws-3\.3\.4\.jar, but Spark 4\.3 ships Hadoop 3\.5\.0: s3a:// "
                                          r"needs hadoop-aws-3\.5\.0\.jar"):
        configure(SparkSession.Builder().config("spark.jars", str(old)), line=line)


def test_the_jar_set_names_hadoop_aws_and_hadoop_azure_that_are_missing(tmp_path: Path) -> None:
    line = line_of("4.1")
    shim = tmp_path / "checkpointfs-spark41.jar"
    aws = tmp_path / "hadoop-aws-3.4.2.jar"
    for jar in (shim, aws):
        jar.write_bytes(b"")
    with pytest.raises(JarSetError, match=r"no hadoop-aws-3\.4\.2\.jar: s3a:// needs it"):
        check_jar_set([str(shim)], line)
    with pytest.raises(JarSetError, match=r"no hadoop-azure-3\.4\.2\.jar: abfs:// needs it"):
        check_jar_set([str(shim), f"file://{aws}"], line, wanted=("hadoop-aws", "hadoop-azure"))
    check_jar_set([str(shim), str(aws), "hdfs://cluster/jars/other.jar"], line)  # a cluster's URL is its to fetch


@pytest.mark.parametrize("hadoop", ["3.4.2", "3.5.0"])
def test_hadoop_azure_facts_agree_with_the_builds_gathering(hadoop: str) -> None:
    """lines.py's jars beside hadoop-azure are those jvm-shim/deps/azure-pom.xml gathers (the build does it for the
    Hadoop versions whose shim writes abfs:// directly)."""
    folder = REPO_SHIM_DIR / "target" / "deps" / f"hadoop-azure-{hadoop}"
    if not folder.is_dir():
        pytest.skip(f"{folder} was not gathered: `make setup` (jvm-shim/build.sh) does it")
    assert sorted(AZURE_DEPS[hadoop].jar_names) == sorted(p.name for p in folder.glob("*.jar"))


class _Repository(http.server.ThreadingHTTPServer):
    """A Maven repository on 127.0.0.1: ``files`` by path; every request path recorded."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.asked.append(self.path)
                body = outer.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture()
def repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[_Repository]:
    """A repository serving a connector jar; the cache and ``~/.m2`` under ``tmp_path`` (empty)."""
    server = _Repository({})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(maven.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(maven.REPOSITORY_ENV, f"http://127.0.0.1:{server.server_address[1]}/maven2/")
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_googles_connector_is_downloaded_once_and_checked(repository: _Repository) -> None:
    connector = GcsConnector("9.9.9", "test")
    body = b"PK\x03\x04 a jar"
    path = f"/maven2/com/google/cloud/bigdataoss/gcs-connector/9.9.9/{connector.jar_name}"
    repository.files.update({path: body, path + ".sha1": hashlib.sha1(body).hexdigest().encode() + b"  x.jar\n"})
    jar = maven.gcs_connector_jar(connector)
    assert jar.read_bytes() == body and jar.name == "gcs-connector-9.9.9-shaded.jar"
    assert maven.gcs_connector_jar(connector) == jar and len(repository.asked) == 2  # the cache answers


def test_a_download_that_does_not_match_its_checksum_is_refused(repository: _Repository) -> None:
    connector = GcsConnector("9.9.8", "test")
    path = f"/maven2/com/google/cloud/bigdataoss/gcs-connector/9.9.8/{connector.jar_name}"
    repository.files.update({path: b"cut sho", path + ".sha1": hashlib.sha1(b"cut short").hexdigest().encode()})
    with pytest.raises(maven.JarResolutionError, match=r"SHA-1 \w+ differs from the repository's"):
        maven.gcs_connector_jar(connector)
    assert not list(maven.gcs_connector_dir(connector).glob("*.jar"))
    with pytest.raises(maven.JarResolutionError, match=r"could not download .*gcs-connector:9\.9\.7.*HTTP Error 404"):
        maven.gcs_connector_jar(GcsConnector("9.9.7", "test"))
