"""The store layer on its own: botocore failures classified by the protocol table only, the options object, the
protocol's defaults, and a manager kept on a store it is given."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from checkpointfs import DirectWriteManager, protocol
from checkpointfs.direct.manager import DEFAULT_MAX_INFLIGHT_PARTS, DEFAULT_PART_SIZE
from checkpointfs.direct.options import DirectWriteOptions
from checkpointfs.errors import FileAlreadyExistsError, PathNotFoundError, StoreError, StoreUnavailableError
from checkpointfs.store.base import ObjectPath, PutMode
from checkpointfs.store.check import CheckedStore
from checkpointfs.store.read_your_writes import ReadYourWritesStore
from checkpointfs.store.s3 import S3Store
from checkpointfs.store.s3.client import translate
from checkpointfs.testing import EmbeddedS3, Fault


def client_error(status: int, code: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code or str(status), "Message": "m"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


@pytest.mark.parametrize(("error", "kind", "answer_class"), [
    (client_error(412, "PreconditionFailed"), FileAlreadyExistsError, "conflict"),
    (client_error(503, "SlowDown"), StoreUnavailableError, "retry"),
    (client_error(500, "InternalError"), StoreUnavailableError, "settle"),
    (client_error(404), PathNotFoundError, "not-found"),
    (client_error(404, "NoSuchUpload"), StoreError, "upload-gone"),
    (client_error(501, "NotImplemented"), StoreError, "refuse"),
    (EndpointConnectionError(endpoint_url="http://user:pw@host"), StoreUnavailableError, "unavailable"),
    (ConnectTimeoutError(endpoint_url="http://host"), StoreUnavailableError, "unavailable"),
    (ReadTimeoutError(endpoint_url="http://host"), StoreUnavailableError, "settle"),
])
def test_translate_classifies_by_the_protocol_table(error: Exception, kind: type, answer_class: str) -> None:
    translated = translate(error, "s3://b/k", "put_object")
    assert type(translated) is kind and translated.path == "s3://b/k"
    assert translated.answer_class is not None and translated.answer_class.name == answer_class
    assert "pw" not in str(translated)


def test_defaults_are_the_protocols() -> None:
    options = DirectWriteOptions()
    assert (options.part_size, options.max_inflight_parts) == (protocol.PART_SIZE_BYTES, protocol.PARTS_IN_FLIGHT)
    assert (DEFAULT_PART_SIZE, DEFAULT_MAX_INFLIGHT_PARTS) == (protocol.PART_SIZE_BYTES, protocol.PARTS_IN_FLIGHT)


@pytest.mark.parametrize("bad", [{"part_size": 0}, {"max_inflight_parts": 0}, {"list_page_size": 1001},
                                 {"consistency_window_s": -1.0}, {"exists_probe": "some"},
                                 {"connect_timeout_s": 0.0}, {"max_pool_connections": 0}])
def test_options_are_validated_in_one_place_naming_the_option(bad: dict[str, object]) -> None:
    (name,) = bad
    with pytest.raises(ValueError, match=name):
        DirectWriteOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=name):
        DirectWriteManager(**bad)


@pytest.mark.parametrize(("uri", "bad", "said"), [
    ("s3://bucket/q", {"sse": "rot13"}, "sse must be"),
    ("s3://bucket/q", {"sse_kms_key_id": "k"}, "sse_kms_key_id needs sse='aws:kms'"),
    ("s3://bucket/q", {"account_key": "k"}, r"not an option of S3: account_key \(for Azure Blob Storage\)"),
    ("s3://bucket/q", {"gcs_token": "t", "sas_token": "t"},
     r"gcs_token \(for Google Cloud Storage\), sas_token \(for Azure Blob Storage\)"),
])
def test_a_stores_own_options_are_checked_by_that_store_naming_the_option(uri: str, bad: dict[str, str],
                                                                         said: str) -> None:
    """Credentials, encryption and accounts are the store's keywords (checkpointfs.store.connect): a wrong value is
    refused by the store's connect, another store's keyword by the registry, naming the store it is for."""
    with pytest.raises(ValueError, match=said):
        DirectWriteManager(root=uri, endpoint_url="http://127.0.0.1:9", **bad)


def test_unknown_keyword_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="part_sise"):
        DirectWriteManager(part_sise=5)


def test_a_manager_takes_options_or_a_store(embedded_s3: EmbeddedS3) -> None:
    options = embedded_s3.manager_options()
    generic = {name: value for name, value in options.items() if name in DirectWriteOptions.fields()}
    store_options = {name: value for name, value in options.items() if name not in generic}
    m = DirectWriteManager(DirectWriteOptions(**generic), **store_options)  # the store's own keywords beside them
    with m.create_atomic(embedded_s3.uri("ck/0")) as out:
        out.write(b"x")
    assert isinstance(m.connected, S3Store)
    other = DirectWriteManager(store=m.connected)
    assert other.open(embedded_s3.uri("ck/0")).read() == b"x"
    assert other.requests is m.requests


def test_read_your_writes_is_a_wrapper_used_only_with_a_window(embedded_s3: EmbeddedS3) -> None:
    plain = DirectWriteManager(**embedded_s3.manager_options()).store
    assert isinstance(plain, CheckedStore) and isinstance(plain.inner, S3Store)
    lagging = DirectWriteManager(**embedded_s3.manager_options(), consistency_window_s=1.0).store
    assert isinstance(lagging, CheckedStore) and isinstance(lagging.inner, ReadYourWritesStore)
    unchecked = DirectWriteManager(**embedded_s3.manager_options(), store_check=False).store
    assert isinstance(unchecked, S3Store)


def test_a_create_after_a_lost_answer_carries_maybe_applied(embedded_s3: EmbeddedS3) -> None:
    m = DirectWriteManager(**embedded_s3.manager_options())
    s3 = m.connected
    assert isinstance(s3, S3Store)
    where = ObjectPath.parse(embedded_s3.uri("ck/1"))
    embedded_s3.faults.add(Fault("lost-response", frozenset({"PutObject"}), times=1))
    with pytest.raises(FileAlreadyExistsError) as raised:
        s3.put(where, b"a", mode=PutMode.CREATE, write_id="w1")
    assert raised.value.maybe_applied and raised.value.answer_class == protocol.CLASSES["conflict"]
    assert s3.head(where).write_id == "w1"


def test_managers_share_one_parsed_service_model_and_keep_their_own_credentials(embedded_s3: EmbeddedS3) -> None:
    # Each manager's boto3 session is its own (credentials, region), but botocore's model loader is shared: S3's
    # service model is parsed once a process, not once a manager (about 0.13 s of CPU each, measured).
    first = DirectWriteManager(**embedded_s3.manager_options())
    other = {**embedded_s3.manager_options(), "aws_access_key_id": "someone-else"}
    second = DirectWriteManager(**other)
    try:
        one, two = first.connected, second.connected
        assert isinstance(one, S3Store) and isinstance(two, S3Store)
        assert one.boto._loader is two.boto._loader
        assert one.boto._request_signer._credentials.access_key != "someone-else"
        assert two.boto._request_signer._credentials.access_key == "someone-else"
        with first.create_atomic(embedded_s3.uri("shared/a")) as out:
            out.write(b"a")
        assert embedded_s3.requests.counts()["PutObject"] >= 1
    finally:
        first.close()
        second.close()
