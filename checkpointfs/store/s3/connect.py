"""Connecting to S3 (``s3://``, ``s3a://``): the boto3 client for a :class:`~checkpointfs.store.registry.Connection`
and the S3 options (credentials, region, encryption), and the :class:`~.store.S3Store` on it."""

from __future__ import annotations

import datetime
import threading
from typing import TYPE_CHECKING, Any, Literal

import boto3
import botocore.session
from botocore.config import Config
from botocore.utils import parse_timestamp

from ..registry import Connection
from .store import Encryption, S3Store

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

__all__ = ["client_for", "connect", "fast_timestamp", "new_session"]

_shared_loader: Any = None
_loader_lock = threading.Lock()


def fast_timestamp(value: str) -> datetime.datetime:
    """botocore's timestamp parser for S3's answers, without dateutil where the text is ISO 8601: a listing's
    ``LastModified`` (``2026-11-28T15:00:00.000Z``) parses about 20 times faster, which is most of the CPU of a long
    listing; anything else (a HeadObject's HTTP date) goes to botocore's own parser."""
    try:
        return datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        return parse_timestamp(value)


def new_session(**settings: Any) -> boto3.Session:
    """A boto3 session (``settings``: boto3.Session's keywords) whose botocore model loader is the one every session
    made here shares. A fresh session parses S3's service model and endpoint rules again, about 0.14 s of CPU (the
    larger part of a DirectWriteManager's construction); shared, that happens once a process. The loader caches
    parsed JSON that no client changes. Timestamps are parsed by :func:`fast_timestamp`."""
    global _shared_loader
    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=fast_timestamp)
    with _loader_lock:
        if _shared_loader is None:
            _shared_loader = core.get_component("data_loader")
        else:
            core.register_component("data_loader", _shared_loader)
    return boto3.Session(botocore_session=core, **settings)


def client_for(*, endpoint_url: str | None, region: str | None, session: boto3.Session | None,
               aws_access_key_id: str | None, aws_secret_access_key: str | None, aws_session_token: str | None,
               connect_timeout_s: float, read_timeout_s: float, max_pool_connections: int,
               path_style: bool | None = None) -> tuple[S3Client, tuple[str, ...]]:
    """A boto3 S3 client for these settings (one attempt per call: the store retries, seeing every attempt) and the
    credentials it signs with, to be redacted from messages. ``path_style``: path-style addressing (None: when an
    ``endpoint_url`` is set, as S3-compatible stores expect; virtual-hosted on AWS)."""
    secrets = [aws_access_key_id or "", aws_secret_access_key or "", aws_session_token or ""]
    session = session or new_session(aws_access_key_id=aws_access_key_id, aws_secret_access_key=aws_secret_access_key,
                                     aws_session_token=aws_session_token, region_name=region)
    config = Config(
        region_name=region or session.region_name or "us-east-1",
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=connect_timeout_s,
        read_timeout=read_timeout_s,
        max_pool_connections=max_pool_connections,
        s3={"addressing_style": "path" if path_style else "virtual"} if path_style is not None
        else {"addressing_style": "path"} if endpoint_url else {},
    )
    client = session.client("s3", endpoint_url=endpoint_url, config=config)
    credentials = session.get_credentials()
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        secrets += [frozen.access_key or "", frozen.secret_key or "", frozen.token or ""]
    return client, tuple(s for s in secrets if s)


def connect(uri: str, connection: Connection, *, region: str | None = None,
            sse: Literal["AES256", "aws:kms"] | None = None, sse_kms_key_id: str | None = None,
            aws_access_key_id: str | None = None, aws_secret_access_key: str | None = None,
            aws_session_token: str | None = None, session: boto3.Session | None = None, client: Any = None,
            path_style: bool | None = None) -> S3Store:
    """The S3 store of ``uri``: on ``client`` (a prepared boto3 S3 client, whose credentials are then unknown here
    and so redacted only where given explicitly), else on one built from ``connection`` and the credentials
    (``session``'s, the three keys given, or boto3's standard chain). ``sse``: server-side encryption of every write,
    ``"AES256"`` or ``"aws:kms"`` with ``sse_kms_key_id`` (None: the bucket's default). ``path_style``: path-style
    addressing (None: when the connection names an endpoint)."""
    if sse not in (None, "AES256", "aws:kms"):
        raise ValueError(f"sse must be None, 'AES256' or 'aws:kms', got {sse!r}")
    if sse_kms_key_id and sse != "aws:kms":
        raise ValueError("sse_kms_key_id needs sse='aws:kms'")
    secrets = tuple(s for s in (aws_access_key_id, aws_secret_access_key, aws_session_token) if s)
    if client is None:
        client, secrets = client_for(
            endpoint_url=connection.endpoint_url, region=region, session=session,
            aws_access_key_id=aws_access_key_id, aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token, connect_timeout_s=connection.connect_timeout_s,
            read_timeout_s=connection.read_timeout_s, max_pool_connections=connection.max_pool_connections,
            path_style=path_style)
    return S3Store(client, retry=connection.retry, delete_retry=connection.delete_retry,
                   encryption=Encryption(sse, sse_kms_key_id) if sse else None, secrets=secrets)
