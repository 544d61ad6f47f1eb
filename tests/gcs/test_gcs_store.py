"""GcsStore (checkpointfs.store.gcs) on fake-gcs-server: what each call sends, what it leaves in the bucket, and the
errors it raises. Requests are counted at the client (the emulator keeps no request log)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("google.auth", reason="the Python GCS store needs the gcs extra (google-auth, requests)")
import requests

from checkpointfs import DirectWriteManager, RetryPolicy, manager_for, protocol
from checkpointfs.errors import (
    BucketNotFoundError,
    FileAlreadyExistsError,
    StoreError,
)
from checkpointfs.store.base import ObjectPath, PutMode
from checkpointfs.store.check import GCS_MULTIPART_CHECK_REQUESTS, CheckedStore
from checkpointfs.store.gcs.client import CHUNK_MULTIPLE, authorized_session
from checkpointfs.store.gcs.store import GcsStore
from harness.servers.fake_gcs import FakeGcsServer

REPO = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=5)
MiB = 1024 * 1024


@pytest.fixture
def store(gcs_emulator: FakeGcsServer) -> Iterator[GcsStore]:
    session, _ = authorized_session(endpoint_url=gcs_emulator.endpoint_url, credentials=None, token=None)
    gcs = GcsStore(session, endpoint_url=gcs_emulator.endpoint_url, retry=FAST)
    yield gcs
    gcs.close()


@pytest.fixture
def prefix() -> str:
    return f"store/{uuid.uuid4().hex}"


def at(server: FakeGcsServer, key: str) -> ObjectPath:
    return ObjectPath.parse(server.uri(key))


def resource(server: FakeGcsServer, key: str) -> dict[str, object]:
    """The object's JSON resource as the emulator keeps it (uncounted)."""
    return next(o for o in server.objects(key) if o["name"] == key)


def test_put_if_absent_is_one_request_with_the_write_id_base64_encoded(store: GcsStore, gcs_emulator: FakeGcsServer,
                                                                       prefix: str) -> None:
    where = at(gcs_emulator, f"{prefix}/offsets/0")
    store.put(where, b"v1\n{}", mode=PutMode.CREATE, write_id="abc123")
    assert store.requests.snapshot() == {"PutObject": 1}
    assert gcs_emulator.read(where.key) == b"v1\n{}"
    stored = resource(gcs_emulator, where.key)["metadata"]
    assert stored == {protocol.WRITE_ID_KEY: base64.b64encode(b"abc123").decode()}  # as Google's connector stores it
    meta = store.head(where)
    assert (meta.size, meta.write_id, meta.etag) == (5, "abc123", str(resource(gcs_emulator, where.key)["generation"]))


def test_a_file_between_8_and_16_mib_is_still_one_request(store: GcsStore, gcs_emulator: FakeGcsServer,
                                                          prefix: str) -> None:
    """The SDK switches to a resumable upload (2 requests) above 8 MiB; the store sends one multipart POST up to the
    part size."""
    data = os.urandom(12 * MiB)
    where = at(gcs_emulator, f"{prefix}/state/1.snapshot")
    store.put(where, data, mode=PutMode.CREATE, write_id="w")
    assert store.requests.snapshot() == {"PutObject": 1}
    assert gcs_emulator.read(where.key) == data


def test_resumable_upload_sends_chunks_in_order_and_finalizes_with_the_tail(store: GcsStore,
                                                                            gcs_emulator: FakeGcsServer,
                                                                            prefix: str) -> None:
    where = at(gcs_emulator, f"{prefix}/state/2.zip")
    chunks = [os.urandom(CHUNK_MULTIPLE), os.urandom(2 * CHUNK_MULTIPLE)]
    upload = store.create_multipart(where, mode=PutMode.CREATE, write_id="big")
    assert "upload_id" not in upload.upload_id and not upload.lost_attempts  # the session URI stays in the store
    parts = [store.upload_part(where, upload.upload_id, n, chunk) for n, chunk in enumerate(chunks, 1)]
    assert gcs_emulator.keys(where.key) == []  # nothing visible before the final chunk
    store.complete_multipart(where, upload.upload_id, parts, mode=PutMode.CREATE, tail=b"tail")
    assert gcs_emulator.read(where.key) == b"".join(chunks) + b"tail"
    assert store.head(where).write_id == "big"
    assert store.requests.snapshot() == {"CreateMultipartUpload": 1, "UploadPart": 2, "CompleteMultipartUpload": 1,
                                         "HeadObject": 1}


def test_resumable_put_if_absent_is_refused_at_finalize_and_the_session_cancelled(
        store: GcsStore, gcs_emulator: FakeGcsServer, prefix: str) -> None:
    where = at(gcs_emulator, f"{prefix}/state/3.zip")
    store.put(where, b"existing", mode=PutMode.CREATE, write_id="first")
    upload = store.create_multipart(where, mode=PutMode.CREATE, write_id="second")
    part = store.upload_part(where, upload.upload_id, 1, b"x" * CHUNK_MULTIPLE)
    with pytest.raises(FileAlreadyExistsError):
        store.complete_multipart(where, upload.upload_id, [part], mode=PutMode.CREATE, tail=b"y")
    store.abort_multipart(where, upload.upload_id)  # the stream cancels after a failed completion
    assert gcs_emulator.read(where.key) == b"existing"
    with pytest.raises(StoreError) as gone:  # the store forgot the session: a second cancel finds it gone
        store.abort_multipart(where, upload.upload_id)
    assert gone.value.answer_class is not None and gone.value.answer_class.name == "upload-gone"


def test_a_cancelled_session_publishes_nothing_and_costs_one_delete(store: GcsStore, gcs_emulator: FakeGcsServer,
                                                                    prefix: str) -> None:
    where = at(gcs_emulator, f"{prefix}/state/4.zip")
    upload = store.create_multipart(where, mode=PutMode.CREATE, write_id="w")
    store.upload_part(where, upload.upload_id, 1, b"p" * CHUNK_MULTIPLE)
    store.requests.reset()
    store.abort_multipart(where, upload.upload_id)
    assert store.requests.snapshot() == {"AbortMultipartUpload": 1}
    assert gcs_emulator.keys(where.key) == [] and store.list_uploads(where) == []


def test_chunks_not_multiple_of_256_kib_are_refused_before_sending(store: GcsStore, gcs_emulator: FakeGcsServer,
                                                                   prefix: str) -> None:
    where = at(gcs_emulator, f"{prefix}/x")
    upload = store.create_multipart(where, mode=PutMode.CREATE, write_id="w")
    with pytest.raises(ValueError, match="262144"):
        store.upload_part(where, upload.upload_id, 1, b"short")
    store.abort_multipart(where, upload.upload_id)


def test_listing_pages_with_delimiter_gives_each_prefix_once(store: GcsStore, gcs_emulator: FakeGcsServer,
                                                             prefix: str) -> None:
    """fake-gcs-server pages objects only and sends every prefix after the page token again on each page (GCS
    pages both together): the store joins pages with each prefix once."""
    names = ("0", "1", "a/1", "a/2", "b/1")
    for name in names:
        gcs_emulator.write(f"{prefix}/{name}", b"x")
    store.requests.reset()
    below = at(gcs_emulator, prefix).below(prefix + "/")
    listing = store.list(below, delimiter="/", page_size=1)
    assert listing.prefixes == [f"{prefix}/a/", f"{prefix}/b/"]
    assert [o.key for o in listing.objects] == [f"{prefix}/0", f"{prefix}/1"]
    assert store.requests.snapshot() == {"ListObjectsV2": 2}  # one request a page
    flat = store.list(below)
    assert [o.key for o in flat.objects] == [f"{prefix}/{n}" for n in names]
    assert all(o.size == 1 and o.etag and o.last_modified.year >= 2024 for o in flat.objects)


def test_delete_many_deletes_each_key(store: GcsStore, gcs_emulator: FakeGcsServer, prefix: str) -> None:
    keys = [f"{prefix}/d/{n}" for n in range(3)]
    for key in keys:
        gcs_emulator.write(key, b"x")
    store.requests.reset()
    store.delete_many(at(gcs_emulator, prefix), [*keys, f"{prefix}/d/absent"])
    assert gcs_emulator.keys(f"{prefix}/d/") == [] and store.requests.snapshot() == {"DeleteObject": 4}


def test_an_id_the_connector_wrote_settles_in_python(store: GcsStore, gcs_emulator: FakeGcsServer,
                                                     prefix: str) -> None:
    """Google's Hadoop connector base64-encodes metadata values: an object it stamped (its JSON resource built here
    as the connector sends it) reads back as that write id; a raw, unencoded value is another writer's."""
    for key, stored, expected in ((f"{prefix}/jvm", base64.b64encode(b"f00d").decode(), "f00d"),
                                  (f"{prefix}/raw", "not base64!", "not base64!")):
        boundary = "b0undary"
        body = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n"
                + json.dumps({"name": key, "metadata": {protocol.WRITE_ID_KEY: stored}})
                + f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\nx\r\n--{boundary}--\r\n")
        request = urllib.request.Request(
            f"{gcs_emulator.endpoint_url}/upload/storage/v1/b/{gcs_emulator.buckets[0]}/o?uploadType=multipart",
            data=body.encode(), method="POST", headers={"Content-Type": f"multipart/related; boundary={boundary}"})
        with urllib.request.urlopen(request, timeout=10):
            pass
        assert store.head(at(gcs_emulator, key)).write_id == expected


# -- the manager on gs:// ----------------------------------------------------------------------------------------------
def test_manager_for_gs_is_a_direct_write_manager_on_gcs(gcs_emulator: FakeGcsServer, prefix: str) -> None:
    root = gcs_emulator.uri(prefix)
    manager = manager_for(root, endpoint_url=gcs_emulator.endpoint_url, part_size=CHUNK_MULTIPLE, retry=FAST)
    try:
        assert isinstance(manager, DirectWriteManager) and manager.options.root == root
        assert isinstance(manager.store, CheckedStore) and isinstance(manager.store.inner, GcsStore)
        with manager.create_atomic(f"{root}/offsets/0") as out:
            out.write(b"v1\n{}")
        assert manager.requests.snapshot() == {"PutObject": 3, "DeleteObject": 1}  # check 2 + 1, commit 1
        manager.requests.reset()
        data = os.urandom(3 * CHUNK_MULTIPLE + 5)
        with manager.create_atomic(f"{root}/state/0/1.snapshot") as out:
            out.write(data)
        check = GCS_MULTIPART_CHECK_REQUESTS
        assert manager.requests.total == check + 1 + 3 + 1  # check; initiate, 3 chunks, final chunk with the tail
        with manager.open(f"{root}/state/0/1.snapshot") as read:
            assert read.read() == data
        with pytest.raises(Exception, match="s3 path given to a manager of a gcs store"):
            manager.exists("s3://bucket/key")
    finally:
        manager.close()


def test_a_cancelled_large_write_leaves_nothing(gcs_emulator: FakeGcsServer, prefix: str) -> None:
    root = gcs_emulator.uri(prefix)
    manager = manager_for(root, endpoint_url=gcs_emulator.endpoint_url, part_size=CHUNK_MULTIPLE, retry=FAST)
    try:
        out = manager.create_atomic(f"{root}/state/0/2.zip")
        out.write(os.urandom(3 * CHUNK_MULTIPLE))
        manager.requests.reset()
        out.cancel()
        assert manager.requests.snapshot() == {"AbortMultipartUpload": 1}  # the session DELETE
        assert gcs_emulator.keys(prefix + "/") == []
    finally:
        manager.close()


def test_the_gcs_part_size_must_be_a_multiple_of_256_kib() -> None:
    with pytest.raises(ValueError, match="multiple of 262144"):
        manager_for("gs://bucket-name/ck", endpoint_url="http://127.0.0.1:9", part_size=4096)
    with pytest.raises(ValueError, match=r"not an option of Google Cloud Storage: sse \(for S3\)"):
        manager_for("gs://bucket-name/ck", endpoint_url="http://127.0.0.1:9", sse="AES256")


# -- credentials -------------------------------------------------------------------------------------------------------
def test_a_token_is_sent_and_never_shown(gcs_emulator: FakeGcsServer) -> None:
    token = "ya29.secret-token-value"
    seen: list[str] = []
    manager = manager_for("gs://no-such-bucket-here/ck", endpoint_url=gcs_emulator.endpoint_url, gcs_token=token,
                          retry=FAST)
    try:
        session = manager.store.inner.session  # type: ignore[attr-defined]
        session.hooks["response"].append(lambda r, **_: seen.append(r.request.headers.get("Authorization", "")))
        with pytest.raises(BucketNotFoundError) as raised:
            with manager.create_atomic("gs://no-such-bucket-here/ck/offsets/0") as out:
                out.write(b"x")
        assert seen and seen[0] == f"Bearer {token}"
        assert token not in str(raised.value) and token not in repr(manager.options)
    finally:
        manager.close()


def test_without_application_default_credentials_the_error_says_how_to_give_them(tmp_path: Path) -> None:
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "absent.json"), "PYTHONPATH": str(REPO)}
    env.pop("STORAGE_EMULATOR_HOST", None)
    code = ("from checkpointfs import manager_for\n"
            "from checkpointfs.errors import AccessDeniedError\n"
            "try:\n    manager_for('gs://bucket-name/ck')\n"
            "except AccessDeniedError as e:\n    print('denied:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    assert "denied: gs://bucket-name/ck: no Google credentials" in done.stdout
    assert "gcs_credentials" in done.stdout and "Application Default" in done.stdout


def test_importing_checkpointfs_loads_no_google_library_and_a_missing_extra_is_named() -> None:
    code = ("import sys, checkpointfs, checkpointfs.tools.doctor, checkpointfs.direct.manager\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('google', 'requests')))\n"
            "sys.modules['google.auth'] = None\n"
            "try:\n    checkpointfs.manager_for('gs://bucket-name/ck', endpoint_url='http://127.0.0.1:9')\n"
            "except ImportError as e:\n    print('missing:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60, check=True)
    loaded, missing = done.stdout.splitlines()[:2]
    assert loaded == "[]"
    assert "checkpointfs[gcs]" in missing


def test_requests_session_is_plain_requests(store: GcsStore) -> None:
    """The store sends on a requests session (google-auth's AuthorizedSession): no hidden retries in its adapter."""
    assert isinstance(store.session, requests.Session)
    adapter = store.session.get_adapter("http://127.0.0.1")
    assert adapter.max_retries.total == 0  # type: ignore[attr-defined]
