"""Connecting to Azure Blob Storage (``az://``, ``abfs[s]://``, ``wasb[s]://``): the account's Blob endpoint and the
credentials for a :class:`~checkpointfs.store.registry.Connection` and the Azure options, and the
:class:`~.store.AzureStore` on them. Needs the ``azure`` extra (``pip install 'checkpointfs[azure]'``).

Paths: ``az://container/key`` names no account (give ``account_name``, ``AZURE_STORAGE_ACCOUNT_NAME``, a connection
string or an ``endpoint_url``); ``abfs[s]://container@account.dfs.core.windows.net/key`` and
``wasb[s]://container@account.blob.core.windows.net/key`` name it in their host. Whatever the scheme, requests go to
the account's Blob endpoint, ``https://<account>.blob.<suffix>`` (the host's suffix after ``.dfs.`` or ``.blob.``:
``core.windows.net``, or a sovereign cloud's), or ``endpoint_url`` (an emulator's, with the account in its path:
``http://127.0.0.1:10000/devstoreaccount1``).

Credentials, the first given: ``credential`` (any credential object of the Azure SDK), ``account_key`` (or
``AZURE_STORAGE_KEY``), ``sas_token`` (or ``AZURE_STORAGE_SAS_TOKEN``), ``connection_string`` (or
``AZURE_STORAGE_CONNECTION_STRING``), else ``DefaultAzureCredential`` when ``azure-identity`` is installed, else none
(anonymous: public containers only). Keys and tokens are redacted from every message (:mod:`checkpointfs.redact`).
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

from ... import paths

try:
    from azure.storage.blob import BlobServiceClient
except ImportError as missing:  # pragma: no cover - exercised by tests/azure/test_azure_connect.py in a subprocess
    raise ImportError("Azure Blob Storage paths (az://, abfs[s]://, wasb[s]://) need the Azure SDK: "
                      "pip install 'checkpointfs[azure]'") from missing

from ..registry import Connection
from .store import AzureStore

log = logging.getLogger(__name__)

__all__ = ["MAX_SINGLE_PUT_BYTES", "account_url", "connect"]

MAX_SINGLE_PUT_BYTES = 5000 * 1024 * 1024
"""The largest Put Blob (service versions 2019-12-12 on): every put of the store is one request, whatever its size."""
_DEFAULT_SUFFIX = "core.windows.net"
def account_url(uri: str, *, account_name: str | None = None, endpoint_url: str | None = None) -> tuple[str, str]:
    """``(Blob endpoint URL, account name)`` for the path ``uri``; ValueError when no account can be told."""
    parsed = paths.parse_object(uri)
    named = parsed.account
    if named and account_name and account_name.lower() != named:
        raise ValueError(f"account_name {account_name!r} differs from the account {named!r} of {uri}")
    account = named or account_name or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME", "")
    if endpoint_url:
        path_account = endpoint_url.split("://", 1)[-1].partition("/")[2].strip("/").split("/", 1)[0]
        return endpoint_url.rstrip("/"), account or path_account
    if not account:
        raise ValueError(f"{uri}: az:// names no storage account: pass account_name (or set "
                         "AZURE_STORAGE_ACCOUNT_NAME), a connection_string, or use "
                         "abfss://container@account.dfs.core.windows.net/...")
    host = parsed.base.partition("@")[2]
    suffix = _DEFAULT_SUFFIX
    for service in (".dfs.", ".blob."):
        if service in host:
            suffix = host.split(service, 1)[1]
    return f"https://{account}.blob.{suffix}", account


def _default_credential() -> Any:
    """``DefaultAzureCredential()`` when azure-identity is installed, else None."""
    try:
        identity = importlib.import_module("azure.identity")
    except ImportError:
        return None
    return identity.DefaultAzureCredential()


def connect(uri: str, connection: Connection, *, account_name: str | None = None, account_key: str | None = None,
            sas_token: str | None = None, connection_string: str | None = None, credential: Any = None,
            api_version: str | None = None) -> AzureStore:
    """The :class:`AzureStore` of the account ``uri`` is in (see the module for how the account and the credentials
    are found). ``api_version``: the Blob service version to send (None: the SDK's newest)."""
    endpoint_url, retry, delete_retry = connection.endpoint_url, connection.retry, connection.delete_retry
    connect_timeout_s, read_timeout_s = connection.connect_timeout_s, connection.read_timeout_s
    client_options: dict[str, Any] = {
        "retry_total": 0, "connection_timeout": connect_timeout_s, "read_timeout": read_timeout_s,
        "max_single_put_size": MAX_SINGLE_PUT_BYTES, "connection_data_block_size": 256 * 1024}
    if api_version:
        client_options["api_version"] = api_version
    account_key = account_key or os.environ.get("AZURE_STORAGE_KEY") or None
    sas_token = sas_token or os.environ.get("AZURE_STORAGE_SAS_TOKEN") or None
    secrets = tuple(s for s in (account_key, sas_token, connection_string) if s)
    explicit = credential is not None or account_key or sas_token
    connection_string = connection_string or (
        None if explicit or endpoint_url else os.environ.get("AZURE_STORAGE_CONNECTION_STRING")) or None
    if connection_string and not explicit:
        fields = [part.split("=", 1) for part in connection_string.split(";") if "=" in part]
        keys = ("accountkey", "sharedaccesssignature")
        secrets += (connection_string, *(value for name, value in fields if name.strip().lower() in keys))
        service = BlobServiceClient.from_connection_string(connection_string, **client_options)
        return AzureStore(service, retry=retry, delete_retry=delete_retry, endpoint=service.url, secrets=secrets)
    url, account = account_url(uri, account_name=account_name, endpoint_url=endpoint_url)
    if credential is None and account_key:
        if not account:
            raise ValueError(f"{uri}: an account_key needs the account's name (account_name)")
        credential = {"account_name": account, "account_key": account_key}
    elif credential is None and sas_token:
        credential = sas_token.lstrip("?")
    elif credential is None:
        credential = _default_credential()
        if credential is None:
            log.warning("%s: no Azure credentials given and azure-identity is not installed: requests are "
                        "anonymous (public containers only)", uri)
    service = BlobServiceClient(url, credential=credential, **client_options)
    return AzureStore(service, retry=retry, delete_retry=delete_retry, endpoint=url, secrets=secrets)
