"""The embedded S3's directory-bucket profile (S3 Express One Zone's rules, checkpointfs.testing.directory_bucket),
and checkpointfs on it: listings, ETags, Content-MD5, empty parents, dropped user metadata, and a lost PutObject
answer settled by the checksum and size where the store keeps no write id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from checkpointfs import DirectWriteManager
from checkpointfs.errors import FileAlreadyExistsError
from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan
from checkpointfs.testing.embedded_s3 import DIRECTORY_BUCKET

BUCKET = DIRECTORY_BUCKET


@pytest.fixture(params=["directory-bucket", "directory-bucket:no-metadata"])
def express(request: pytest.FixtureRequest, embedded_s3: EmbeddedS3) -> Iterator[EmbeddedS3]:
    """The session's embedded S3 serving the directory-bucket profile (metadata kept, then dropped), with a
    directory bucket; the next test's reset puts S3 Standard's rules back."""
    embedded_s3.profile = request.param
    embedded_s3.create_bucket(BUCKET)
    yield embedded_s3
    embedded_s3.profile = None


def _keys(client: Any, prefix: str, page_size: int = 1000, delimiter: str = "") -> list[str]:
    out: list[str] = []
    args: dict[str, Any] = {"Bucket": BUCKET, "Prefix": prefix, "PaginationConfig": {"PageSize": page_size}}
    if delimiter:
        args["Delimiter"] = delimiter
    for page in client.get_paginator("list_objects_v2").paginate(**args):
        out += [o["Key"] for o in page.get("Contents", [])] + [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    return out


def test_listing_is_not_sorted_and_pages_cover_every_key_once(express: EmbeddedS3) -> None:
    client = express.client()
    names = [f"q/offsets/{n}" for n in range(40)]
    for name in names:
        client.put_object(Bucket=BUCKET, Key=name, Body=b"v1\n")
    listed = _keys(client, "q/offsets/", page_size=7)
    assert sorted(listed) == sorted(names)
    assert listed != sorted(listed)


def test_prefixes_end_in_slash_and_slash_is_the_only_delimiter(express: EmbeddedS3) -> None:
    client = express.client()
    client.put_object(Bucket=BUCKET, Key="q/commits/0", Body=b"v1\n")
    for bad in ({"Prefix": "q/commits/0"}, {"Prefix": "q/", "Delimiter": "-"}, {"Prefix": "q/", "StartAfter": "q/a"}):
        with pytest.raises(ClientError) as raised:
            client.list_objects_v2(Bucket=BUCKET, **bad)
        assert raised.value.response["Error"]["Code"] == "InvalidArgument"
    with pytest.raises(ClientError):
        client.list_multipart_uploads(Bucket=BUCKET, Prefix="q/commits/0")
    assert _keys(client, "q/", delimiter="/") == ["q/commits/"]


def test_a_prefix_with_only_an_open_upload_is_listed(express: EmbeddedS3) -> None:
    client = express.client()
    client.create_multipart_upload(Bucket=BUCKET, Key="q/state/0/1.zip")
    assert _keys(client, "q/", delimiter="/") == ["q/state/"]


def test_etags_are_not_md5_and_if_match_takes_them(express: EmbeddedS3) -> None:
    client = express.client()
    etag = client.put_object(Bucket=BUCKET, Key="q/metadata", Body=b"{}")["ETag"]
    assert etag != '"99914b932bd37a50b983c5e7c90ae93b"'  # MD5 of b"{}"
    assert client.head_object(Bucket=BUCKET, Key="q/metadata")["ETag"] == etag
    assert [o["ETag"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="q/")["Contents"]] == [etag]
    assert client.put_object(Bucket=BUCKET, Key="q/metadata", Body=b"{1}", IfMatch=etag)["ETag"] != etag


def test_content_md5_is_refused(express: EmbeddedS3) -> None:
    with pytest.raises(ClientError) as raised:
        express.client().put_object(Bucket=BUCKET, Key="q/x", Body=b"x", ContentMD5="nSmJkzfmQmg/R8rShYvcAg==")
    assert raised.value.response["Error"]["Code"] == "InvalidRequest"


def test_deleting_the_last_object_removes_empty_parent_directories(express: EmbeddedS3) -> None:
    client = express.client()
    for key in ("q/", "q/state/", "q/state/0/", "q/state/0/1.delta", "q/offsets/0"):
        client.put_object(Bucket=BUCKET, Key=key, Body=b"" if key.endswith("/") else b"x")
    client.delete_object(Bucket=BUCKET, Key="q/state/0/1.delta")
    assert sorted(express.keys(bucket=BUCKET)) == ["q/", "q/offsets/0"]  # q/ still holds offsets/0


def test_user_metadata_is_kept_or_dropped_as_the_profile_says(express: EmbeddedS3) -> None:
    client = express.client()
    client.put_object(Bucket=BUCKET, Key="q/m", Body=b"x", Metadata={"writer": "a"})
    kept = client.head_object(Bucket=BUCKET, Key="q/m")["Metadata"]
    assert kept == ({"writer": "a"} if express.profile is not None and express.profile.keep_metadata else {})


def _manager(server: EmbeddedS3, root: str) -> DirectWriteManager:
    return DirectWriteManager(**server.manager_options(), root=root)


@pytest.mark.parametrize("winner", ["ours", "other"])
def test_lost_put_answer_is_settled_on_a_directory_bucket(express: EmbeddedS3, winner: str) -> None:
    """The PutObject is applied and its answer lost; the retry meets 412. The object read back decides: by its
    write id where the store keeps it, else by the checksum and size this writer sent. With another writer's
    object there (written in the meantime), the create fails as a conflict."""
    root = express.uri(f"q{uuid.uuid4().hex[:8]}", bucket=BUCKET)
    manager = _manager(express, root)
    path = f"{root}/offsets/0"
    key = path.split(BUCKET + "/", 1)[1]
    with manager.create_atomic(f"{root}/offsets/warmup", overwrite_if_possible=False) as out:
        out.write(b"v1\n")  # the store check runs here, not under the fault below

    def other_writer() -> None:
        client = express.client(admin=True)
        client.delete_object(Bucket=BUCKET, Key=key)
        client.put_object(Bucket=BUCKET, Key=key, Body=b"v1\nanother writer's batch\n", ChecksumAlgorithm="SHA256")

    express.faults = FaultPlan([Fault("lost-response", frozenset({"PutObject"}), key_pattern=key + "$", times=1,
                                      then=other_writer if winner == "other" else None)])
    if winner == "ours":
        with manager.create_atomic(path, overwrite_if_possible=False) as out:
            out.write(b"v1\nour batch\n")
        assert express.client(admin=True).get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"v1\nour batch\n"
    else:
        with pytest.raises(FileAlreadyExistsError, match="another writer"):
            with manager.create_atomic(path, overwrite_if_possible=False) as out:
                out.write(b"v1\nour batch\n")
    assert express.faults.kinds_injected() == {"lost-response": 1}
    manager.close()


def test_checkpoint_round_trip_lists_sorted_on_a_directory_bucket(express: EmbeddedS3) -> None:
    """The manager's list is sorted by name whatever order the store lists in."""
    root = express.uri("r", bucket=BUCKET)
    manager = _manager(express, root)
    for n in range(12):
        with manager.create_atomic(f"{root}/offsets/{n}", overwrite_if_possible=False) as out:
            out.write(b"v1\n")
    listed = [s.path.rsplit("/", 1)[1] for s in manager.list(f"{root}/offsets")]
    assert listed == sorted(str(n) for n in range(12))
    manager.close()


@pytest.mark.parametrize(("profile", "said"), [
    (None, "keeps user metadata: a lost answer is settled by the write id"),
    ("directory-bucket", "keeps user metadata: a lost answer is settled by the write id"),
    ("directory-bucket:no-metadata", "keeps no user metadata, only checksums: a lost answer is settled by checksum "
                                     "and size")])
def test_store_check_says_what_the_store_keeps(embedded_s3: EmbeddedS3, caplog: pytest.LogCaptureFixture,
                                               profile: str | None, said: str) -> None:
    """The store check reads its canary back once (4 requests) and its start line says whether the store keeps user
    metadata (write ids) or only checksums to settle a lost answer by."""
    from checkpointfs.store.check import PUT_CHECK_REQUESTS, forget_verdicts

    forget_verdicts()
    embedded_s3.profile = profile
    bucket = BUCKET if profile else embedded_s3.buckets[0]
    if profile:
        embedded_s3.create_bucket(bucket)
    root = embedded_s3.uri(f"k{uuid.uuid4().hex[:8]}", bucket=bucket)
    manager = _manager(embedded_s3, root)
    before = len(embedded_s3.requests)
    caplog.set_level("INFO", logger="checkpointfs.store.check")
    try:
        with manager.create_atomic(f"{root}/offsets/0", overwrite_if_possible=False) as out:
            out.write(b"v1\n")
        sent = embedded_s3.requests.all()[before:]
        assert [r.operation for r in sent if "_checkpointfs-store-check-" in r.key] == [
            "HeadObject", "PutObject", "HeadObject", "PutObject", "DeleteObject"] and PUT_CHECK_REQUESTS == 5
        lines = [r.getMessage() for r in caplog.records if "refuses a second put-if-absent" in r.getMessage()]
        assert len(lines) == 1 and lines[0].endswith("; it " + said), lines
    finally:
        manager.close()
        embedded_s3.profile = None


@pytest.mark.parametrize(("bucket", "key", "prefix"), [
    ("checkpoints", "q/offsets/7", "q/offsets/7"),  # MinIO lists the uploads of an exact name only
    ("checkpoints", "top", "top"),
    ("checkpoints--use1-az4--x-s3", "q/offsets/7", "q/offsets/"),  # a directory bucket takes only "/"-ended ones
    ("checkpoints--use1-az4--x-s3", "top", ""),
])
def test_uploads_are_listed_by_the_key_or_its_directory(bucket: str, key: str, prefix: str) -> None:
    from checkpointfs.store.s3.store import uploads_prefix

    assert uploads_prefix(bucket, key) == prefix
