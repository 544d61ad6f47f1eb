"""checkpointfs.spark.configure / spark_conf: the settings that put the shim in charge, without starting Spark."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import checkpointfs.spark._jars as jars
import checkpointfs.spark.config as config
import checkpointfs.spark.maven as maven
from checkpointfs.spark import (
    MANAGER_CLASS_KEY,
    S3A_CLASS,
    SHIM_CLASS,
    ShimJarMissingError,
    UnsupportedSparkLineError,
    configure,
    hadoop_aws_coordinates,
    shim_jar,
    spark_conf,
)
from checkpointfs.spark.config import S3A_CLASS_KEY
from checkpointfs.testing import EmbeddedS3

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pyspark") is None,
                                reason="the configuration reads the Spark line off the installed pyspark")


def test_conf_for_the_embedded_s3_names_jars_manager_and_endpoint(embedded_s3_server: EmbeddedS3) -> None:
    conf = spark_conf(embedded_s3_server)
    spark_jars = conf["spark.jars"].split(",")
    assert spark_jars[0] == str(shim_jar())
    assert any(Path(j).name == "hadoop-aws-3.5.0.jar" for j in spark_jars)
    assert any(Path(j).name.startswith("s3-2.") for j in spark_jars)  # the AWS SDK v2 S3 client
    assert "spark.jars.packages" not in conf
    assert conf[MANAGER_CLASS_KEY] == SHIM_CLASS
    assert conf["spark.hadoop.fs.s3a.endpoint"] == embedded_s3_server.endpoint_url
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.create.conditional.enabled"] == "true"
    assert conf["spark.hadoop.fs.s3a.access.key"] == embedded_s3_server.access_key


def test_default_manager_is_kept_when_asked(embedded_s3_server: EmbeddedS3) -> None:
    conf = spark_conf(embedded_s3_server, manager_class=None)
    assert MANAGER_CLASS_KEY not in conf
    assert S3A_CLASS_KEY not in conf  # S3A's own class where the shim is not the manager


def test_the_shim_comes_with_its_s3a_class_unless_declined(embedded_s3_server: EmbeddedS3) -> None:
    assert spark_conf(embedded_s3_server)[S3A_CLASS_KEY] == S3A_CLASS
    assert S3A_CLASS_KEY not in spark_conf(embedded_s3_server, s3a_class=None)


def test_short_keys_for_an_http_endpoint() -> None:
    conf = spark_conf({"endpoint": "http://minio.local:9000", "access_key": "ak", "secret_key": "sk",
                       "region": "eu-west-1"})
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio.local:9000"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(".SimpleAWSCredentialsProvider")
    with_token = spark_conf({"access_key": "ak", "secret_key": "sk", "session_token": "t"})
    assert with_token["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(".TemporaryAWSCredentialsProvider")


def test_no_s3_settings_leaves_credentials_to_the_cluster() -> None:
    conf = spark_conf(None)
    assert not any(k.startswith("spark.hadoop.fs.s3a.access") or "endpoint" in k for k in conf)
    assert conf["spark.hadoop.fs.s3a.create.conditional.enabled"] == "true"


def test_unknown_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown S3 setting 'endpoint_uri'"):
        spark_conf({"endpoint_uri": "http://x"})


def test_without_local_s3a_jars_every_jar_is_named_on_spark_jars(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No repository build: hadoop-aws matching Spark's Hadoop and the AWS SDK modules come from Spark's own Maven
    resolution, cached outside the repository, and are all named on spark.jars (which executors load), never on
    spark.jars.packages (which pyspark's builder keeps from reaching executors); Spark's own jars are left out."""
    monkeypatch.setattr(jars, "REPO_SHIM_DIR", tmp_path / "no-build")
    monkeypatch.delenv(jars.DEPS_ENV, raising=False)
    conf = spark_conf(None)
    assert "spark.jars.packages" not in conf
    spark_jars = [Path(j) for j in conf["spark.jars"].split(",")]
    assert spark_jars[0] == shim_jar()
    names = [j.name for j in spark_jars[1:]]
    assert "hadoop-aws-3.5.0.jar" in names
    assert {"s3-2.35.4.jar", "s3-transfer-manager-2.35.4.jar", "sts-2.35.4.jar"} <= set(names)
    assert not [n for n in names if "bundle" in n or n.startswith(("netty-buffer-", "netty-common-", "slf4j-"))]
    assert all(j.is_file() and maven.cache_root() in j.parents for j in spark_jars[1:])
    assert hadoop_aws_coordinates() == "org.apache.hadoop:hadoop-aws:3.5.0"  # what the docs' --packages names

    def no_resolution(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached resolution ran again")

    monkeypatch.setattr(maven, "_spark_resolve", no_resolution)
    assert spark_conf(None)["spark.jars"] == conf["spark.jars"]


def test_a_missing_shim_jar_says_how_to_build_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(jars, "JARS_DIR", tmp_path)
    with pytest.raises(ShimJarMissingError, match=r"bash jvm-shim/build\.sh"):
        spark_conf(None)


def test_configure_sets_a_real_builder(embedded_s3_server: EmbeddedS3) -> None:
    from pyspark.sql import SparkSession

    builder = configure(SparkSession.Builder(), embedded_s3_server)
    assert builder._options[MANAGER_CLASS_KEY] == SHIM_CLASS
    assert builder._options["spark.jars"] == spark_conf(embedded_s3_server)["spark.jars"]


def test_settings_for_spark_submit_and_a_properties_file(embedded_s3_server: EmbeddedS3) -> None:
    from checkpointfs.spark.submit import spark_defaults_text, submit_args

    conf = spark_conf(embedded_s3_server)
    lines = spark_defaults_text(conf).splitlines()
    assert f"spark.jars {conf['spark.jars']}" in lines
    assert f"{MANAGER_CLASS_KEY} {SHIM_CLASS}" in lines
    assert len(lines) == len(conf)
    args = submit_args(conf)
    assert args[args.index("--jars") + 1] == conf["spark.jars"]
    assert f"{MANAGER_CLASS_KEY}={SHIM_CLASS}" in args


def test_each_line_gets_its_shim_jar_and_matching_hadoop_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(jars, "REPO_SHIM_DIR", tmp_path / "no-build")
    monkeypatch.delenv(jars.DEPS_ENV, raising=False)
    expected = {
        "3.5": ("checkpointfs-spark35.jar",
                "org.apache.hadoop:hadoop-aws:3.3.4,com.amazonaws:aws-java-sdk-bundle:1.12.262"),
        "4.0": ("checkpointfs-spark40.jar", "org.apache.hadoop:hadoop-aws:3.4.1"),
        "4.1": ("checkpointfs-spark41.jar", "org.apache.hadoop:hadoop-aws:3.4.2"),
        "4.2.1": ("checkpointfs-spark41.jar", "org.apache.hadoop:hadoop-aws:3.5.0"),
    }
    fetched: list[str] = []

    def fake_resolution(hadoop: str) -> list[Path]:
        fetched.append(hadoop)
        jar = tmp_path / f"hadoop-aws-{hadoop}.jar"
        jar.write_bytes(b"")  # configure() checks that every jar it names exists
        return [jar]

    monkeypatch.setattr(config, "resolved_s3a_jars", fake_resolution)
    for line, (jar, packages) in expected.items():
        conf = spark_conf(None, line=line)
        shim, aws = conf["spark.jars"].split(",")
        assert Path(shim).name == jar, line
        hadoop = packages.split(",")[0].rsplit(":", 1)[1]
        assert fetched[-1] == hadoop and Path(aws).name == f"hadoop-aws-{hadoop}.jar", line
        assert "spark.jars.packages" not in conf, line
        assert hadoop_aws_coordinates(line) == packages, line  # what the docs' --packages names


def test_an_unsupported_line_names_the_supported_ones() -> None:
    with pytest.raises(UnsupportedSparkLineError, match=r"3\.5, 4\.0, 4\.1, 4\.2, 4\.3"):
        spark_conf(None, line="3.4.1")


def test_a_deps_folder_of_another_hadoop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hadoop-aws-3.5.0.jar").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"another Hadoop .*hadoop-aws-3\.5\.0\.jar.*Hadoop 3\.3\.4"):
        spark_conf(None, deps_dir=tmp_path, line="3.5")


def test_a_deps_folder_per_hadoop_version_serves_every_line(tmp_path: Path) -> None:
    for version in ("3.3.4", "3.5.0"):
        (tmp_path / f"hadoop-{version}").mkdir()
        (tmp_path / f"hadoop-{version}" / f"hadoop-aws-{version}.jar").write_bytes(b"")
    for line, version in (("3.5", "3.3.4"), ("4.3", "3.5.0")):
        conf = spark_conf(None, deps_dir=tmp_path, line=line)
        assert conf["spark.jars"].split(",")[1] == str(tmp_path / f"hadoop-{version}" / f"hadoop-aws-{version}.jar")
        assert "spark.jars.packages" not in conf


def test_the_shim_brings_its_metrics_plugin_and_request_counter(embedded_s3_server: EmbeddedS3) -> None:
    """With the shim: the plugin that puts its metrics in Spark's metrics system, and on Hadoop 3.4+ lines the S3A
    interceptor that counts requests (Hadoop 3.3.4's S3A loads none unless its auditing is on); without it, neither."""
    conf = spark_conf(embedded_s3_server)
    assert conf[config.PLUGINS_KEY] == config.PLUGIN_CLASS == "io.checkpointfs.spark.CheckpointfsPlugin"
    assert conf[config.INTERCEPTORS_KEY] == config.REQUEST_COUNTER_CLASS == "io.checkpointfs.spark.RequestCounter"
    assert config.INTERCEPTORS_KEY == "spark.hadoop.fs.s3a.audit.execution.interceptors"
    on_35 = spark_conf(embedded_s3_server, line="3.5", deps_dir=None)
    assert on_35[config.PLUGINS_KEY] == config.PLUGIN_CLASS and config.INTERCEPTORS_KEY not in on_35
    without = spark_conf(embedded_s3_server, manager_class=None)
    assert config.PLUGINS_KEY not in without and config.INTERCEPTORS_KEY not in without


def test_configure_appends_to_the_plugins_and_interceptors_a_builder_has(embedded_s3_server: EmbeddedS3) -> None:
    from pyspark.sql import SparkSession

    builder = (SparkSession.Builder().config(config.PLUGINS_KEY, "com.example.Mine")
               .config(config.INTERCEPTORS_KEY, "com.example.Audit"))
    options = configure(builder, embedded_s3_server)._options
    assert options[config.PLUGINS_KEY] == f"com.example.Mine,{config.PLUGIN_CLASS}"
    assert options[config.INTERCEPTORS_KEY] == f"com.example.Audit,{config.REQUEST_COUNTER_CLASS}"
    again = configure(builder, embedded_s3_server)._options  # configured twice: listed once
    assert again[config.PLUGINS_KEY] == f"com.example.Mine,{config.PLUGIN_CLASS}"


@pytest.mark.parametrize(("key", "theirs"), [
    ("spark.jars", "{tmp}/gcs-connector-hadoop3-3.1.18-shaded.jar,{tmp}/mine.jar"),
    ("spark.jars.packages", "org.example:lib_2.13:1.0"),
    ("spark.jars.repositories", "https://repo.example.org/maven"),
    (config.PLUGINS_KEY, "com.example.Mine"),
    (config.INTERCEPTORS_KEY, "com.example.Audit"),
])
def test_configure_keeps_every_list_a_builder_has(key: str, theirs: str, embedded_s3_server: EmbeddedS3,
                                                  tmp_path: Path) -> None:
    """A list-valued setting the builder already has is kept and added to, never replaced (a user's connector jar on
    spark.jars beside the shim's, say), whichever way configure names the shim (local jars or packages)."""
    from pyspark.sql import SparkSession

    theirs = theirs.format(tmp=tmp_path)
    if key == "spark.jars":  # jars that exist: configure() refuses a spark.jars naming a missing file
        for jar in theirs.split(","):
            Path(jar).write_bytes(b"")

    packages = key in ("spark.jars.packages", "spark.jars.repositories")
    extra = {"packages": True, "repositories": "file:///tmp/checkpointfs-maven"} if packages else {}
    ours = spark_conf(embedded_s3_server, **extra)[key].split(",")  # type: ignore[arg-type]
    options = configure(SparkSession.Builder().config(key, theirs), embedded_s3_server, **extra)._options  # type: ignore[arg-type]
    assert options[key].split(",") == [*theirs.split(","), *ours]
    again = configure(SparkSession.Builder().config(key, options[key]), embedded_s3_server, **extra)._options  # type: ignore[arg-type]
    assert again[key] == options[key]  # configured twice: each item once
