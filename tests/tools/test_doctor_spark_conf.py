"""``checkpointfs doctor --spark-conf FILE``: the doctor reaches the store with the job's own S3A settings, read from
the ``spark-defaults.conf`` that ``checkpointfs.spark.submit`` writes, against the embedded S3 with no credentials in
the environment; per-bucket settings win for their bucket, the command line wins over the file, malformed lines are
named, and the secret never shows."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.errors import InvalidConfigError
from checkpointfs.spark.submit import spark_defaults_text
from checkpointfs.testing import EmbeddedS3
from checkpointfs.tools.sparkconf import client_settings, parse_spark_defaults

UNREACHABLE = "http://127.0.0.1:9"
"""Nothing listens on the discard port: connections are refused at once."""


@pytest.fixture
def store(embedded_s3: EmbeddedS3, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> EmbeddedS3:
    """The embedded S3, with no AWS credentials, endpoint or config files in the environment: only the conf file
    can reach it."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", embedded_s3.region)
    return embedded_s3


def conf_file(tmp_path: Path, settings: Mapping[str, str], name: str = "spark-defaults.conf") -> str:
    """``settings`` (``fs.s3a.*`` keys) as ``spark.hadoop.*`` lines, written as checkpointfs.spark.submit writes them,
    beside a setting the doctor ignores."""
    conf = {"spark.sql.streaming.checkpointFileManagerClass": "io.checkpointfs.spark.DirectWriteCheckpointFileManager"}
    conf.update({f"spark.hadoop.{key}": value for key, value in settings.items()})
    path = tmp_path / name
    path.write_text(spark_defaults_text(conf))
    return str(path)


def test_conf_file_credentials_pass(store: EmbeddedS3, cli: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    conf = conf_file(tmp_path, store.hadoop_conf())
    assert cli("doctor", store.uri("team"), "--json").code == 2  # without the file: no credentials at all

    result = cli("doctor", store.uri("team"), "--spark-conf", conf, "--json")
    assert result.code == 0, result.out + result.err
    report = result.json
    assert report["safe"] is True
    settings = report["settings"]
    assert settings["spark_conf"] == conf and settings["bucket"] == "checkpoints"
    assert settings["endpoint"] == store.endpoint_url and settings["region"] == store.region
    assert settings["path_style_access"] is True and settings["ssl"] is False
    assert settings["credentials"] == "fs.s3a.access.key and fs.s3a.secret.key (SimpleAWSCredentialsProvider)"
    assert settings["origins"]["fs.s3a.endpoint"] == "spark.hadoop.fs.s3a.endpoint"
    assert settings["bucket_overrides"] == [] and settings["notes"] == []

    table = cli("doctor", store.uri("team"), "--spark-conf", conf, "--plain")
    assert table.code == 0 and "Settings for bucket checkpoints" in table.out
    assert f"{store.endpoint_url} (spark.hadoop.fs.s3a.endpoint)" in table.out
    printed = table.out + table.err + result.out + result.err + "".join(capsys.readouterr())
    assert store.secret_key not in printed + caplog.text and store.access_key not in printed
    assert store.access_key not in ours(caplog)


def ours(caplog: pytest.LogCaptureFixture) -> str:
    """The log records of checkpointfs (botocore's DEBUG records name the access key id in the signature's scope, as
    AWS's SDKs do: it is an identifier, never the secret)."""
    return "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("checkpointfs"))


def test_wrong_endpoint_fails_naming_it(store: EmbeddedS3, cli: Any, tmp_path: Path) -> None:
    conf = conf_file(tmp_path, {**store.hadoop_conf(), "fs.s3a.endpoint": UNREACHABLE})
    result = cli("doctor", store.uri("team"), "--spark-conf", conf)
    assert result.code == 2 and result.out == ""
    assert "cannot reach the S3 endpoint" in result.err and UNREACHABLE in result.err
    assert store.secret_key not in result.err

    # the command line wins over the file
    result = cli("doctor", store.uri("team"), "--spark-conf", conf, "--endpoint-url", store.endpoint_url, "--json")
    assert result.code == 0, result.err
    assert result.json["settings"]["endpoint"] == store.endpoint_url
    assert result.json["settings"]["origins"]["fs.s3a.endpoint"] == "--endpoint-url"


def test_per_bucket_settings_win_for_their_bucket(store: EmbeddedS3, cli: Any, tmp_path: Path) -> None:
    store.create_bucket("other")
    conf = conf_file(tmp_path, {**store.hadoop_conf(), "fs.s3a.endpoint": UNREACHABLE,
                                "fs.s3a.bucket.checkpoints.endpoint": store.endpoint_url,
                                "fs.s3a.bucket.other.secret.key": "not-the-secret-of-other-0123456789"})
    result = cli("doctor", store.uri("team"), "--spark-conf", conf, "--json")
    assert result.code == 0, result.err
    settings = result.json["settings"]
    assert settings["endpoint"] == store.endpoint_url
    assert settings["origins"]["fs.s3a.endpoint"] == "spark.hadoop.fs.s3a.bucket.checkpoints.endpoint"
    assert settings["bucket_overrides"] == ["spark.hadoop.fs.s3a.bucket.checkpoints.endpoint"]

    other = cli("doctor", store.uri("team", bucket="other"), "--spark-conf", conf)
    assert other.code == 2 and UNREACHABLE in other.err  # bucket "other" takes the global endpoint
    assert "not-the-secret-of-other" not in other.err + other.out


def test_wrong_secret_is_denied_and_never_shown(store: EmbeddedS3, cli: Any, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "wJalrXUtnFEMI-conf-file-secret-0123456789"
    conf = conf_file(tmp_path, {**store.hadoop_conf(), "fs.s3a.access.key": "AKIACONFFILEKEY00001",
                                "fs.s3a.secret.key": secret})
    result = cli("doctor", store.uri("team"), "--spark-conf", conf, "--json")
    assert result.code == 2 and "access denied" in result.err
    for text in (result.out, result.err, caplog.text):
        assert secret not in text
    for text in (result.out, result.err, ours(caplog)):
        assert "AKIACONFFILEKEY00001" not in text


def test_other_credential_providers_fall_back_to_the_default_chain(store: EmbeddedS3, cli: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", store.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", store.secret_key)
    settings = {key: value for key, value in store.hadoop_conf().items() if "key" not in key}
    settings["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider"
    result = cli("doctor", store.uri("team"), "--spark-conf", conf_file(tmp_path, settings), "--json")
    assert result.code == 0, result.err
    found = result.json["settings"]
    assert found["credentials"].startswith("boto3's default chain")
    assert any("IAMInstanceCredentialsProvider" in note and "default credential chain" in note
               for note in found["notes"])


def test_malformed_line_names_file_line_and_problem(store: EmbeddedS3, cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "broken.conf"
    path.write_text("# the job's settings\n\nspark.hadoop.fs.s3a.endpoint http://127.0.0.1:1\n"
                    "spark.hadoop.fs.s3a.path.style.access yes\n")
    result = cli("doctor", store.uri("team"), "--spark-conf", str(path))
    assert result.code == 2 and result.out == ""
    assert result.err.strip() == (f"checkpointfs doctor: {path}: line 4: spark.hadoop.fs.s3a.path.style.access: "
                                  "'yes' is not true or false")
    missing = cli("doctor", store.uri("team"), "--spark-conf", str(tmp_path / "absent.conf"))
    assert missing.code == 2 and "absent.conf: cannot read the settings file" in missing.err


@pytest.mark.parametrize(("text", "problem"), [
    ("spark.hadoop.fs.s3a.endpoint\n", "line 1: spark.hadoop.fs.s3a.endpoint has no value"),
    ("a b\n\nspark.hadoop.fs.s3a.bucket.b.connection.ssl.enabled 1\n",
     "line 3: spark.hadoop.fs.s3a.bucket.b.connection.ssl.enabled: '1' is not true or false"),
    ("spark.app.name \\u12\n", "line 1: malformed \\uXXXX escape"),
    ("= value\n", "line 1: no key before the value"),
])
def test_malformed_lines(text: str, problem: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        parse_spark_defaults(text, "job.conf")
    assert raised.value.path == "job.conf" and raised.value.cause.startswith(problem)


def test_properties_syntax_as_spark_reads_it() -> None:
    text = ("! comment\n  # another\nspark.a=1\nspark.b : two words  \nspark.c\tx\\\n    y\n"
            "spark.d \\u0041\\tB\nspark.e   \n")
    assert parse_spark_defaults(text, "f") == {"spark.a": "1", "spark.b": "two words", "spark.c": "xy",
                                               "spark.d": "A\tB", "spark.e": ""}


def test_client_settings_follow_s3a() -> None:
    conf = {"spark.hadoop.fs.s3a.endpoint": "minio.internal:9000",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.access.key": "AK", "spark.hadoop.fs.s3a.secret.key": "SK",
            "spark.hadoop.fs.s3a.session.token": "TOKEN",
            "spark.hadoop.fs.s3a.bucket.team.endpoint.region": "eu-west-3",
            "spark.hadoop.fs.s3a.bucket.team.path.style.access": "true"}
    team = client_settings(conf, "team", "f")
    assert (team.endpoint_url, team.region, team.path_style, team.use_ssl) == (
        "http://minio.internal:9000", "eu-west-3", True, False)
    assert team.secrets == ("AK", "SK", "TOKEN") and "TemporaryAWSCredentialsProvider" in team.credentials
    assert team.bucket_overrides == ["spark.hadoop.fs.s3a.bucket.team.endpoint.region",
                                     "spark.hadoop.fs.s3a.bucket.team.path.style.access"]
    other = client_settings(conf, "other", "f")
    assert (other.region, other.path_style) == (None, False)
    simple = client_settings({**conf, "spark.hadoop.fs.s3a.aws.credentials.provider":
                              "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}, "team", "f")
    assert simple.session_token is None and "SimpleAWSCredentialsProvider" in simple.credentials
    assert "SK" not in str(team.to_json()) and "AK" not in str(team.to_json()) and "TOKEN" not in str(team.to_json())


def test_credential_providers_in_s3a_order() -> None:
    """The first provider in fs.s3a.aws.credentials.provider whose keys the file holds wins, as in S3A: Temporary
    without a token passes to Simple; named providers that find no keys leave boto3's chain, with a note."""
    keys = {"spark.hadoop.fs.s3a.access.key": "AK", "spark.hadoop.fs.s3a.secret.key": "SK"}
    providers = "spark.hadoop.fs.s3a.aws.credentials.provider"
    both = client_settings({**keys, providers: "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider, "
                                               "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}, "b", "f")
    assert both.secrets == ("AK", "SK") and "(SimpleAWSCredentialsProvider)" in both.credentials
    none = client_settings({providers: "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}, "b", "f")
    assert none.secrets == () and none.credentials.startswith("boto3's default chain")
    assert any("found its keys" in note for note in none.notes)
    unset = client_settings({}, "b", "f")  # S3A's default list goes on to the environment: no note
    assert unset.credentials.startswith("boto3's default chain") and unset.notes == []
