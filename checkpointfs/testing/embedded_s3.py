"""EmbeddedS3: moto's S3 server in this process, on 127.0.0.1 and a free port, behind a gateway that

- counts every request at the server, by S3 operation (:attr:`EmbeddedS3.requests`);
- refuses an unknown access key with 403 InvalidAccessKeyId, as S3 does (moto alone accepts any);
- makes writes atomic, as S3's are: moto checks ``If-None-Match`` and then stores, so two racing writers could
  both pass; the gateway serializes mutating requests so that exactly one wins;
- injects faults on demand (:attr:`EmbeddedS3.faults`, see :mod:`checkpointfs.testing.faults`): errors, resets,
  lost and truncated answers, eventual consistency and latency (the layer is :mod:`checkpointfs.testing.gateway`);
- with ``profile="directory-bucket"``, serves every bucket by S3 Express One Zone's rules
  (:mod:`checkpointfs.testing.directory_bucket`);
- with ``denied=("s3:ListBucket",)``, answers as S3 answers a caller whose policy lacks it: a listing, and a HEAD or
  GET of a missing key, are refused 403 (:mod:`checkpointfs.testing.policy`).

moto keeps its buckets per process: every EmbeddedS3 of one process serves the same store.
"""

from __future__ import annotations

import importlib
import logging
import threading
import urllib.request
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import boto3
import moto.s3.models
from botocore.config import Config
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from . import endpoint
from .clock import AdjustableClock
from .directory_bucket import DirectoryBucket
from .faults import FaultPlan
from .gateway import ADMIN_HEADER, Gateway
from .policy import denied as checked_denied
from .requests import RequestLog
from .server import TestServer

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

log = logging.getLogger(__name__)

# moto 5.2.5 serves through its own request handler (it keeps S3 metadata header names that hold underscores);
# earlier releases have none and serve through werkzeug's. checkpointfs's own metadata keys have no underscores.
_REQUEST_HANDLER: type[WSGIRequestHandler] = getattr(
    importlib.import_module("moto.moto_server.werkzeug_app"), "MotoRequestHandler", WSGIRequestHandler)

DIRECTORY_BUCKET = "checkpoints--use1-az4--x-s3"
"""The bucket of an EmbeddedS3 with the directory-bucket profile and no buckets given: named as AWS names directory
buckets (``<base>--<zone id>--x-s3``), by which clients (boto3, the AWS SDK for Java, checkpointfs) tell one."""
DEFAULT_ACCESS_KEY = "checkpointfs-embedded"
DEFAULT_SECRET_KEY = "checkpointfs-embedded-secret"


def _mark_admin(request: Any, **_: Any) -> None:
    request.headers[ADMIN_HEADER] = "1"


def s3_client(endpoint_url: str, region: str, access_key: str, secret_key: str, admin: bool = False) -> Any:
    """A boto3 S3 client for an embedded S3 at ``endpoint_url`` (path style, botocore's retries off); an ``admin``
    client's requests are marked as the harness's own (not counted, never faulted)."""
    client = boto3.client(
        "s3", endpoint_url=endpoint_url, region_name=region,
        aws_access_key_id=access_key, aws_secret_access_key=secret_key,
        config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}),
    )
    if admin:
        client.meta.events.register("before-sign.s3", _mark_admin)
    return client


class EmbeddedS3(TestServer):
    """An S3 endpoint in this process for tests, users' tests and demos. Use as a context manager or call
    :meth:`start`/:meth:`stop`. ``profile="directory-bucket"`` serves S3 Express One Zone's rules (unordered
    listings, random ETags, no Content-MD5; ``"directory-bucket:no-metadata"`` also drops user metadata). Gives
    :attr:`endpoint_url`, :meth:`client`, :meth:`manager_options` for DirectWriteManager, and :meth:`hadoop_conf`
    for Spark's S3A."""

    def __init__(
        self,
        buckets: Iterable[str] | None = None,
        *,
        port: int = 0,
        region: str = "us-east-1",
        access_key: str = DEFAULT_ACCESS_KEY,
        secret_key: str = DEFAULT_SECRET_KEY,
        check_access_key: bool = True,
        min_part_size: int | None = None,
        faults: FaultPlan | None = None,
        profile: str | DirectoryBucket | None = None,
        denied: Iterable[str] = (),
    ) -> None:
        self._profile = self._initial_profile = DirectoryBucket.named(profile)
        self._denied = self._initial_denied = checked_denied(denied)
        self.buckets = list(buckets) if buckets is not None else [
            DIRECTORY_BUCKET if self._profile is not None else "checkpoints"]
        self.region = region
        self.access_key = access_key
        self.secret_key = secret_key
        self.requests = RequestLog()
        self.clock = AdjustableClock()
        """The store's time (consistency lags, multipart upload times): tests advance it instead of sleeping."""
        self._faults = faults or FaultPlan()
        self._gateway: Gateway | None = None
        self._port = port
        self._check_access_key = check_access_key
        self._min_part_size = min_part_size
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start serving and create the buckets."""
        if self._server is not None:
            return self
        if self._min_part_size is not None:
            moto.s3.models.S3_UPLOAD_PART_MIN_SIZE = self._min_part_size  # type: ignore[attr-defined]
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._gateway = Gateway(DomainDispatcherApplication(create_backend_app),
                                self.access_key if self._check_access_key else None, self.requests, self._faults,
                                self.clock, self._profile)
        self._gateway.denied = self._denied
        self._server = make_server("127.0.0.1", self._port, self._gateway, threaded=True,
                                   request_handler=_REQUEST_HANDLER)
        self._thread = threading.Thread(target=self._server.serve_forever, name="embedded-s3", daemon=True)
        self._thread.start()
        for bucket in self.buckets:
            self.create_bucket(bucket)
        log.info("embedded S3 serving at %s", self.endpoint_url)
        return self

    def stop(self) -> None:
        """Stop serving (the store's contents stay in this process until :meth:`reset`)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def faults(self) -> FaultPlan:
        """The faults in force (errors, lags, latency) and the log of what was injected."""
        return self._faults

    @faults.setter
    def faults(self, plan: FaultPlan) -> None:
        self._faults = plan
        if self._gateway is not None:
            self._gateway.faults = plan

    @property
    def profile(self) -> DirectoryBucket | None:
        """The store's rules: None for S3 Standard's, or the directory-bucket profile (set as ``"directory-bucket"``,
        ``"directory-bucket:no-metadata"`` or a :class:`~checkpointfs.testing.directory_bucket.DirectoryBucket`);
        :meth:`reset` puts back the one given at construction."""
        return self._profile

    @profile.setter
    def profile(self, profile: str | DirectoryBucket | None) -> None:
        self._profile = DirectoryBucket.named(profile)
        if self._gateway is not None:
            self._gateway.profile = self._profile

    @property
    def denied(self) -> frozenset[str]:
        """The IAM actions the caller is denied (:mod:`checkpointfs.testing.policy`; set as any iterable of them);
        :meth:`reset` puts back the ones given at construction."""
        return self._denied

    @denied.setter
    def denied(self, actions: Iterable[str]) -> None:
        self._denied = checked_denied(actions)
        if self._gateway is not None:
            self._gateway.denied = self._denied

    @property
    def sessions_created(self) -> int:
        """CreateSession requests answered (clients send one per directory bucket, ``--x-s3``, before their first
        request to it); not in :attr:`requests`, whose counts are per operation."""
        return self._gateway.sessions_created if self._gateway is not None else 0

    # -- what clients need --------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port served on."""
        if self._server is None:
            raise RuntimeError("EmbeddedS3 is not started")
        return int(self._server.server_address[1])

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def client(self, admin: bool = False) -> Any:
        """A boto3 S3 client for this endpoint (botocore's own retries off, so every request is visible).
        An ``admin`` client's requests are neither counted in :attr:`requests` nor given faults."""
        return s3_client(self.endpoint_url, self.region, self.access_key, self.secret_key, admin)

    def manager_options(self) -> dict[str, Any]:
        """Keyword options for :class:`~checkpointfs.DirectWriteManager` or ``manager_for`` to reach this endpoint."""
        return endpoint.manager_options(self.endpoint_url, self.region, self.access_key, self.secret_key)

    def hadoop_conf(self) -> dict[str, str]:
        """The ``fs.s3a.*`` settings for Hadoop's S3A (Spark: prefix each with ``spark.hadoop.``). For the directory
        bucket :data:`DIRECTORY_BUCKET`, as for a real one, S3A's Content-MD5 header is turned off
        (``fs.s3a.bucket.<bucket>.request.md5.header=false``, Hadoop 3.4.2+): a directory bucket does not support
        Content-MD5, which S3A adds by default to requests that need a checksum (the DeleteObjects of a directory
        delete); without it the AWS SDK sends a CRC32 checksum."""
        return {**endpoint.hadoop_conf(self.endpoint_url, self.region, self.access_key, self.secret_key),
                f"fs.s3a.bucket.{DIRECTORY_BUCKET}.request.md5.header": "false"}

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (no error if it exists)."""
        client = self.client(admin=True)
        try:
            client.create_bucket(Bucket=name)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass

    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str:
        """``s3://<bucket>/<key>`` for this store (the first bucket by default)."""
        return f"{scheme}://{bucket or self.buckets[0]}/{key.lstrip('/')}"

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Every key under ``prefix`` (read with the admin client; not counted in :attr:`requests`)."""
        client = self.client(admin=True)
        out: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket or self.buckets[0], Prefix=prefix):
            out.extend(obj["Key"] for obj in page.get("Contents", []))
        return out

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        """Keys of multipart uploads not completed nor aborted."""
        answer = self.client(admin=True).list_multipart_uploads(Bucket=bucket or self.buckets[0])
        return [u["Key"] for u in answer.get("Uploads", [])]

    def reset(self) -> None:
        """Empty the store (every bucket and object of this process), recreate the buckets, clear the request log
        and the faults, and set the clock back to real time."""
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")).read()
        for bucket in self.buckets:
            self.create_bucket(bucket)
        self.requests.clear()
        self.faults = FaultPlan()
        self.profile = self._initial_profile
        self.denied = self._initial_denied
        self.clock.reset()
