"""The store contract (tests/store/integration.py) over every store and wrapper: the embedded S3, MinIO, GCS on
fake-gcs-server, Azure on Azurite, and the wrapper stores (the store check, read-your-writes) around the embedded S3.
Each store is connected through :func:`checkpointfs.store.connect` and given a fresh prefix; a store that needs a
server carries that server's marker at its parameter (``minio``; ``emulator`` for fake-gcs-server and Azurite), so
``make check`` and ``make unit`` select its tests as they select the store's own.

A new store: write a builder that connects it and states its :class:`StoreCaps`, and add it as a parameter of
``target`` below, with its server's marker (docs/testing.md, "The store contract")."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from checkpointfs.store import Connection, ObjectPath, ObjectStore, RetryPolicy, connect
from checkpointfs.store.check import CheckedStore
from checkpointfs.store.read_your_writes import ReadYourWritesStore
from checkpointfs.testing.faults import FaultPlan

from .integration import FaultLayer, Rule, StoreCaps, rules

FAST = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=10)
"""Retries enough for a lost answer's one retry, short enough that a store that keeps failing fails the test fast."""
WINDOW_S = 5.0
"""The read-your-writes wrapper's window, on a :class:`StillClock`: every write of a rule is within it."""


class StillClock:
    """A clock that moves only by its own ``sleep``: the read-your-writes window never lapses while a rule runs,
    however slow the machine, and waiting it out (for a write of ours that a lost answer may have landed, and that
    the object does not show) takes no time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Target:
    """A store under test, the prefix its rules write under, and what differs about it."""

    store: ObjectStore
    root: ObjectPath
    caps: StoreCaps


Builder = Callable[[pytest.FixtureRequest, contextlib.ExitStack], Target]


def _fresh_root(uri_of: Callable[[str], str]) -> ObjectPath:
    """A prefix of the store no other test writes under (the servers are shared by the session's tests)."""
    return ObjectPath.parse(uri_of(f"store-suite/{uuid.uuid4().hex[:12]}"))


def _s3_options(options: dict[str, Any]) -> tuple[Connection, dict[str, Any]]:
    """A Connection and S3's own keywords from a server's ``manager_options()``."""
    own = {k: v for k, v in options.items() if k != "endpoint_url"}
    return Connection(endpoint_url=options["endpoint_url"], retry=FAST), own


def _connected(stack: contextlib.ExitStack, uri: str, connection: Connection, **options: Any) -> ObjectStore:
    store = connect(uri, connection, **options)
    stack.callback(store.close)
    return store


def s3_embedded(request: pytest.FixtureRequest, stack: contextlib.ExitStack) -> Target:
    """The embedded S3 (moto behind the project's gateway), emptied for the test; its fault layer is the gateway's.
    Its minimum part size is moto's setting, which the ``embedded_s3_server`` fixture lowers."""
    import moto.s3.models

    server = request.getfixturevalue("embedded_s3")
    connection, own = _s3_options(server.manager_options())
    store = _connected(stack, server.uri(), connection, **own)

    def inject(plan: FaultPlan | None) -> None:
        server.faults = plan or FaultPlan()

    minimum = int(moto.s3.models.S3_UPLOAD_PART_MIN_SIZE)  # type: ignore[attr-defined]
    caps = StoreCaps("s3-embedded", part_size=minimum, lists_uploads=True,
                     open_uploads=lambda prefix: [k for k in server.open_uploads() if k.startswith(prefix)],
                     faults=lambda: FaultLayer(store, inject), gaps={
                         "complete_after_abort": "moto 5.2 answers CompleteMultipartUpload of an aborted upload with "
                         "500 (a KeyError inside moto; S3 and MinIO: 404 NoSuchUpload), which is retried and ends "
                         "as StoreUnavailableError of class settle (docs/testing.md, moto and MinIO)"})
    return Target(store, _fresh_root(server.uri), caps)


def s3_directory_bucket(profile: str) -> Builder:
    """The embedded S3 serving the directory-bucket ``profile`` (S3 Express One Zone's rules; user metadata dropped
    in ``directory-bucket:no-metadata``), in a bucket named as a directory bucket."""

    def build(request: pytest.FixtureRequest, stack: contextlib.ExitStack) -> Target:
        from checkpointfs.testing.embedded_s3 import DIRECTORY_BUCKET

        server = request.getfixturevalue("embedded_s3")
        server.profile = profile
        server.create_bucket(DIRECTORY_BUCKET)
        stack.callback(setattr, server, "profile", None)
        target = s3_embedded(request, stack)
        root = _fresh_root(lambda key: server.uri(key, bucket=DIRECTORY_BUCKET))
        caps = replace(target.caps, name=f"s3-{profile}", keeps_write_id=server.profile.keep_metadata,
                       sorted_listing=False,
                       open_uploads=lambda prefix: [
                           k for k in server.open_uploads(DIRECTORY_BUCKET) if k.startswith(prefix)])
        return Target(target.store, root, caps)

    return build


def s3_minio(request: pytest.FixtureRequest, stack: contextlib.ExitStack) -> Target:
    """MinIO, a real S3-compatible server (parts but the last at least 5 MiB, as on S3); lost answers through a
    recording proxy in front of it (harness.servers.recording_proxy), reached by a second store."""
    from harness.servers.recording_proxy import RecordingProxy

    server = request.getfixturevalue("minio_server")
    connection, own = _s3_options(server.manager_options())
    store = _connected(stack, server.uri(), connection, **own)

    def faults() -> FaultLayer:
        proxy = stack.enter_context(RecordingProxy(server.endpoint_url))
        through = _connected(stack, server.uri(), replace(connection, endpoint_url=proxy.endpoint_url), **own)
        return FaultLayer(through, lambda plan: setattr(proxy, "faults", plan))

    caps = StoreCaps("s3-minio", part_size=5 * 1024 * 1024, lists_uploads=True, open_uploads=server.open_uploads,
                     faults=faults, gaps={
                         "open_uploads_listed": "MinIO answers ListMultipartUploads only for an empty prefix or a "
                         "whole key (docs/testing.md, moto and MinIO): S3Store.list_uploads of a directory lists "
                         "nothing there, so the doctor's clean-up and `checkpointfs` tools' open_uploads, which list "
                         "by directory, find no open upload on MinIO"})
    return Target(store, _fresh_root(server.uri), caps)


def gcs(request: pytest.FixtureRequest, stack: contextlib.ExitStack) -> Target:
    """GcsStore on fake-gcs-server (chunks but the last in multiples of 256 KiB; the last goes with the completion;
    resumable sessions cannot be listed); lost answers through a recording proxy in GCS's dialect."""
    pytest.importorskip("google.auth", reason="the Python GCS store needs the gcs extra (google-auth, requests)")
    from checkpointfs.store.gcs.client import CHUNK_MULTIPLE
    from harness.servers.recording_proxy import RecordingProxy, classify_gcs

    server = request.getfixturevalue("gcs_emulator")
    connection = Connection(endpoint_url=server.endpoint_url, retry=FAST, part_size=CHUNK_MULTIPLE)
    store = _connected(stack, server.uri(), connection)

    def faults() -> FaultLayer:
        proxy = stack.enter_context(RecordingProxy(server.endpoint_url, classifier=classify_gcs, dialect="gcs"))
        through = _connected(stack, server.uri(), replace(connection, endpoint_url=proxy.endpoint_url))
        return FaultLayer(through, lambda plan: setattr(proxy, "faults", plan))

    caps = StoreCaps("gcs", part_size=CHUNK_MULTIPLE, lists_uploads=False, faults=faults, gaps={
        "list_page_size": "fake-gcs-server counts only objects towards maxResults and sends every common prefix on "
        "the first page (GCS counts items and prefixes together); GcsStore sends maxResults=page_size"})
    return Target(store, _fresh_root(server.uri), caps)


def azure(request: pytest.FixtureRequest, stack: contextlib.ExitStack) -> Target:
    """AzureStore on Azurite (blocks of any size; uncommitted blocks cannot be listed nor dropped); lost answers
    through the recording proxy in Azure's dialect (tests/azure/logged.py)."""
    pytest.importorskip("azure.storage.blob", reason="the azure extra (azure-storage-blob) is not installed")
    from tests.azure.logged import LoggedAzurite

    server = request.getfixturevalue("azurite_server")
    options = server.manager_options()
    connection = Connection(endpoint_url=options.pop("endpoint_url"), retry=FAST)
    store = _connected(stack, server.uri(), connection, **options)

    def faults() -> FaultLayer:
        logged = stack.enter_context(LoggedAzurite(server))
        through = _connected(stack, server.uri(), replace(connection, endpoint_url=logged.endpoint_url), **options)
        return FaultLayer(through, logged.set_faults)

    def open_uploads(prefix: str) -> list[str]:  # names with uncommitted blocks only (tests/azure/logged.py)
        return sorted(set(server.keys(prefix, uncommitted=True)) - set(server.keys(prefix)))

    caps = StoreCaps("azure", part_size=4096, lists_uploads=False, open_uploads=open_uploads, faults=faults, gaps={
        "missing_bucket": "AzureStore.head_bucket raises BucketNotFoundError for an absent container (its translate "
        "turns 404 ContainerNotFound into it), where ObjectStore.head_bucket says PathNotFoundError; "
        "DirectWriteManager.exists reaches BucketNotFoundError either way"})
    return Target(store, _fresh_root(server.uri), caps)


def wrapped(name: str, wrap: Callable[[ObjectStore], ObjectStore], inner: Builder, **gaps: str) -> Builder:
    """``inner``'s store seen through the wrapper ``wrap`` makes (its fault layer too: the server's own), with the
    inner store's gaps and the wrapper's own ``gaps``."""

    def build(request: pytest.FixtureRequest, stack: contextlib.ExitStack) -> Target:
        target = inner(request, stack)
        store = wrap(target.store)
        layer = target.caps.faults
        assert layer is not None and layer().store is target.store, "a wrapper needs a fault layer in the server"
        inject = layer().inject
        caps = replace(target.caps, name=f"{name}({target.caps.name})",
                       faults=lambda: FaultLayer(store, inject), gaps={**target.caps.gaps, **gaps})
        return Target(store, target.root, caps)

    return build


def _read_your_writes(store: ObjectStore) -> ObjectStore:
    clock = StillClock()
    return ReadYourWritesStore(store, WINDOW_S, clock=clock, sleep=clock.sleep)


def _clean(store: ObjectStore, root: ObjectPath) -> None:
    """Delete what a rule left under its root (the servers are shared across tests): objects and open uploads."""
    below = root.below(root.key + "/")
    for upload in store.list_uploads(below):
        store.abort_multipart(root.at(upload.key), upload.upload_id)
    keys = [o.key for o in store.list(below).objects]
    for first in range(0, len(keys), 1000):
        store.delete_many(root, keys[first:first + 1000])


@pytest.fixture(params=[
    pytest.param(s3_embedded, id="s3-embedded"),
    pytest.param(s3_directory_bucket("directory-bucket"), id="s3-directory-bucket"),
    pytest.param(s3_directory_bucket("directory-bucket:no-metadata"), id="s3-directory-bucket:no-metadata"),
    pytest.param(s3_minio, id="s3-minio", marks=pytest.mark.minio),
    pytest.param(gcs, id="gcs", marks=pytest.mark.emulator),
    pytest.param(azure, id="azure", marks=pytest.mark.emulator),
    pytest.param(wrapped("checked", CheckedStore, s3_embedded), id="checked(s3-embedded)"),
    pytest.param(wrapped(
        "read-your-writes", _read_your_writes, s3_embedded,
        list_page_size="within its window after a write under the prefix, ReadYourWritesStore.list_pages reads the "
        "whole listing and yields it as one page, whatever page_size (its _WHOLE_PAGE), where ObjectStore.list_pages "
        "says page_size entries a request"), id="read-your-writes(s3-embedded)"),
])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The store the parameter's builder connects, with a fresh root; what it left there is deleted after the
    test."""
    build: Builder = request.param
    with contextlib.ExitStack() as stack:
        built = build(request, stack)
        yield built
        _clean(built.store, built.root)


@pytest.mark.parametrize("rule", rules(), ids=lambda rule: rule.__name__)
def test_contract(rule: Rule, target: Target, request: pytest.FixtureRequest) -> None:
    """The rule holds on the store (a gap of the store's: a strict xfail, so that a store that starts keeping the rule
    is noticed)."""
    gap = target.caps.gaps.get(rule.__name__)
    if gap:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{target.caps.name}: {gap}"))
    rule(target.store, target.root, target.caps)
