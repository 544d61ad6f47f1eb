"""The Hadoop settings for ``gs://`` (Google's connector) and ``abfs://`` (hadoop-azure's ABFS) that
:func:`checkpointfs.spark.configure` sets from short keys, as it does for S3A: one function per store, given the
store's mapping and the Spark line (the connector releases and defaults differ by line: :mod:`.lines`).

Secrets in the returned dicts are the ones given: never log them.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

from .lines import (
    GCS_ABSTRACT_FILESYSTEM_CLASS,
    GCS_AUTH,
    GCS_FILESYSTEM_CLASS,
    HADOOP_35_GCS_SIZES,
    SparkLine,
)

StoreSettings = Mapping[str, "str | bool"]
"""A store's settings as :func:`~checkpointfs.spark.configure` takes them: short keys, or the connector's own."""

GCS_KEYS = ("project", "endpoint", "auth", "service_account_key_file", "token_server_url")
"""The short keys of ``configure(gcs=...)``."""
AZURE_KEYS = ("account", "account_key", "sas_token", "endpoint", "hierarchical_namespace")
"""The short keys of ``configure(azure=...)``."""
AZURE_HOST_SUFFIX = ".dfs.core.windows.net"
"""Appended to an ``account`` given without a dot: the host ABFS keys an account's settings by."""


def gcs_settings(gcs: StoreSettings, line: SparkLine) -> dict[str, str]:
    """The ``fs.gs.*`` settings for Google's connector on ``line`` from ``gcs``: ``fs.gs.*`` keys as they are, or
    the short keys ``project`` (``fs.gs.project.id``), ``endpoint`` (``fs.gs.storage.root.url``: another server,
    such as fake-gcs-server), ``auth`` (``none``, ``service_account``, ``application_default``,
    ``compute_engine``), ``service_account_key_file`` (a JSON key; implies ``auth="service_account"``) and
    ``token_server_url`` (``fs.gs.token.server.url``). Always: ``fs.gs.impl`` and ``fs.AbstractFileSystem.gs.impl``
    naming Google's classes (Hadoop 3.5 names its own hadoop-gcp, which the shim does not write directly), and on
    Hadoop 3.5 the sizes its ``core-default.xml`` gives with unit suffixes, as plain bytes
    (:data:`~checkpointfs.spark.lines.HADOOP_35_GCS_SIZES`). The auth settings are named as the line's connector
    release names them (:meth:`~checkpointfs.spark.lines.GcsConnector.auth_settings`)."""
    connector = line.gcs_connector
    settings = {"fs.gs.impl": GCS_FILESYSTEM_CLASS, "fs.AbstractFileSystem.gs.impl": GCS_ABSTRACT_FILESYSTEM_CLASS}
    if line.names_hadoop_gcp:
        settings.update(HADOOP_35_GCS_SIZES)
    short = _split(gcs, "fs.gs.", GCS_KEYS, "GCS", settings)
    if "project" in short:
        settings["fs.gs.project.id"] = short["project"]
    if "endpoint" in short:
        settings["fs.gs.storage.root.url"] = _url(short["endpoint"], "GCS endpoint").rstrip("/") + "/"
    if "token_server_url" in short:
        settings["fs.gs.token.server.url"] = _url(short["token_server_url"], "GCS token_server_url")
    key_file = short.get("service_account_key_file")
    auth = short.get("auth", "service_account" if key_file else None)
    if auth is not None:
        if auth not in GCS_AUTH:
            raise ValueError(f"unknown GCS auth {auth!r}: one of {', '.join(GCS_AUTH)}")
        if key_file and auth != "service_account":
            raise ValueError(f"service_account_key_file is for auth='service_account', not {auth!r}")
        settings.update(connector.auth_settings(auth, key_file))
    return settings


def azure_settings(azure: StoreSettings, line: SparkLine) -> dict[str, str]:
    """The ``fs.azure.*`` settings for hadoop-azure's ABFS on ``line`` from ``azure``: ``fs.azure.*`` keys as they
    are, or the short keys ``account`` (the storage account: ``myaccount``, or its host
    ``myaccount.dfs.core.windows.net``), ``account_key`` (Shared Key: what the shim writes directly),
    ``sas_token`` (a fixed SAS token, Hadoop 3.4 and later; the shim then delegates to Spark's manager),
    ``endpoint`` (another Blob endpoint, such as Azurite's ``http://127.0.0.1:10000``) and
    ``hierarchical_namespace`` (False: a flat-namespace account, reached over its Blob endpoint, which the shim writes
    directly on Spark 4.1 and later).

    An ``http://`` endpoint (an emulator: real accounts are https) also sets ``fs.azure.always.use.https=false``,
    ``fs.azure.networking.library=JDK_HTTP_URL_CONNECTION`` (ABFS 3.5's default Apache client needs a TLS socket
    factory that only an https endpoint initializes: "SSL socket factory may not be null"),
    ``fs.azure.metrics.collection.enabled=false`` (ABFS 3.5 sends its metrics to the account from a JVM shutdown
    hook, retried for minutes once an emulator is gone) and, unless given, a flat namespace (Azurite has no DFS
    endpoint)."""
    settings: dict[str, str] = {}
    short = _split(azure, "fs.azure.", AZURE_KEYS, "Azure", settings)
    account = short.get("account", "")
    host = account if "." in account or not account else account + AZURE_HOST_SUFFIX
    for key in ("account_key", "sas_token"):
        if key in short and not host:
            raise ValueError(f"the Azure {key} needs account= (the storage account it belongs to)")
    if "account_key" in short and "sas_token" in short:
        raise ValueError("give the Azure account_key or sas_token, not both")
    if "account_key" in short:
        settings[f"fs.azure.account.auth.type.{host}"] = "SharedKey"
        settings[f"fs.azure.account.key.{host}"] = short["account_key"]
    if "sas_token" in short:
        if line.hadoop.startswith("3.3."):
            raise ValueError(f"a fixed SAS token needs hadoop-azure 3.4 or later; Spark {line.line} ships Hadoop "
                             f"{line.hadoop}: use account_key, or fs.azure.sas.token.provider.type")
        settings[f"fs.azure.account.auth.type.{host}"] = "SAS"
        settings[f"fs.azure.sas.fixed.token.{host}"] = short["sas_token"]
    hns = short.get("hierarchical_namespace")
    if "endpoint" in short:
        endpoint = urllib.parse.urlsplit(_url(short["endpoint"], "Azure endpoint"))
        settings["fs.azure.abfs.endpoint"] = endpoint.netloc
        if endpoint.scheme == "http":
            settings.update({"fs.azure.always.use.https": "false",
                             "fs.azure.networking.library": "JDK_HTTP_URL_CONNECTION",
                             "fs.azure.metrics.collection.enabled": "false"})
            hns = hns or "false"
    if hns is not None:
        if hns not in ("true", "false"):
            raise ValueError(f"Azure hierarchical_namespace {hns!r}: True or False")
        settings["fs.azure.account.hns.enabled"] = hns
        if hns == "false":
            settings["fs.azure.fns.account.service.type"] = "BLOB"
    return settings


def _split(given: StoreSettings, prefix: str, short_keys: tuple[str, ...], store: str,
           into: dict[str, str]) -> dict[str, str]:
    """Put the keys of ``given`` that start with ``prefix`` into ``into`` as they are; return the short ones
    (booleans as ``true``/``false``). A key of neither kind is a ValueError naming the ones allowed."""
    short: dict[str, str] = {}
    for key, value in given.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if key.startswith(prefix):
            into[key] = text
        elif key in short_keys:
            short[key] = text
        else:
            raise ValueError(f"unknown {store} setting {key!r}: use {prefix}* keys or one of {', '.join(short_keys)}")
    return short


def _url(value: str, what: str) -> str:
    if urllib.parse.urlsplit(value).scheme not in ("http", "https"):
        raise ValueError(f"{what} {value!r} is not an http:// or https:// URL")
    return value
