"""The Azure pieces that need no emulator: how the SDK's failures are classified through protocol.json's one table,
the request names, the account endpoint of each URL form, options, redaction, and the optional extra."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("azure.storage.blob", reason="the azure extra (azure-storage-blob) is not installed")
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    IncompleteReadError,
    ServiceRequestError,
    ServiceRequestTimeoutError,
    ServiceResponseError,
    ServiceResponseTimeoutError,
)

from checkpointfs import manager_for, protocol
from checkpointfs.errors import (
    AccessDeniedError,
    BucketNotFoundError,
    FileAlreadyExistsError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from checkpointfs.redact import redact
from checkpointfs.store.azure.client import answer_of, classify, operation, translate
from checkpointfs.store.azure.connect import account_url
from checkpointfs.store.azure.store import block_id
from checkpointfs.store.base import ObjectPath

WHERE = ObjectPath.parse("abfss://ckpt@acct.dfs.core.windows.net/q/offsets/0")


class _Response:
    """The part of an azure-core HTTP response HttpResponseError reads."""

    def __init__(self, status: int, code: str, message: str = "the store's words") -> None:
        self.status_code = status
        self.reason = message
        self.headers = {"x-ms-error-code": code} if code else {}
        self.request = None
        self.content_type = "application/xml"

    def text(self, encoding: str | None = None) -> str:
        return ""

    def body(self) -> bytes:
        return b""


def answered(status: int, code: str, message: str = "the store's words") -> HttpResponseError:
    return HttpResponseError(message=message, response=_Response(status, code, message))  # type: ignore[arg-type]


@pytest.mark.parametrize(("status", "code", "kind", "error"), [
    (409, "BlobAlreadyExists", "conflict", FileAlreadyExistsError),
    (412, "ConditionNotMet", "conflict", FileAlreadyExistsError),
    (503, "ServerBusy", "retry", StoreUnavailableError),
    (500, "OperationTimedOut", "settle", StoreUnavailableError),
    (500, "InternalError", "settle", StoreUnavailableError),
    (400, "InvalidBlockList", "upload-gone", StoreError),
    (404, "BlobNotFound", "not-found", PathNotFoundError),
    (404, "ContainerNotFound", "refuse", BucketNotFoundError),
    (403, "AuthenticationFailed", "refuse", AccessDeniedError),
    (403, "AuthorizationPermissionMismatch", "refuse", AccessDeniedError),
    (400, "InvalidMetadata", "refuse", StoreError),
])
def test_answers_are_classified_by_code_before_status(status: int, code: str, kind: str,
                                                      error: type[Exception]) -> None:
    failure = answered(status, code)
    assert answer_of(failure) == protocol.Answer(status=status, code=code,
                                                 python_classes=answer_of(failure).python_classes)
    translated = translate(failure, WHERE, "put_blob")
    assert type(translated) is error
    assert translated.answer_class is not None and translated.answer_class.name == kind
    assert translated.path == WHERE.uri


def test_a_missing_container_is_named_as_a_container() -> None:
    translated = translate(answered(404, "ContainerNotFound"), WHERE, "put_blob")
    assert translated.cause == "put_blob: container 'ckpt' does not exist"


def test_server_busy_is_a_throttle() -> None:
    assert protocol.is_throttle(answer_of(answered(503, "ServerBusy")))


@pytest.mark.parametrize(("failure", "transport", "kind", "error"), [
    (ServiceRequestError("refused"), "connect", "unavailable", StoreUnavailableError),
    (ServiceRequestTimeoutError("connect timeout"), "connect", "unavailable", StoreUnavailableError),
    (ServiceResponseError("reset"), "reset", "settle", StoreUnavailableError),
    (ServiceResponseTimeoutError("read timeout"), "timeout", "settle", StoreUnavailableError),
    (IncompleteReadError("cut"), "truncated", "settle", StoreUnavailableError),
    (ClientAuthenticationError("no token"), None, "refuse", AccessDeniedError),
])
def test_transport_failures_by_kind(failure: Exception, transport: str | None, kind: str,
                                    error: type[Exception]) -> None:
    assert answer_of(failure).transport == transport
    translated = translate(failure, WHERE, "get_blob")
    assert type(translated) is error and translated.answer_class is not None
    assert translated.answer_class.name == kind


def test_messages_never_carry_credentials() -> None:
    key = "c2VjcmV0LWtleS1zZWNyZXQta2V5LXNlY3JldC1rZXk="
    failure = answered(403, "AuthenticationFailed", f"Server failed to authenticate: SharedKey acct:{key} sig=abc")
    message = str(translate(failure, WHERE, "put_blob", (key,)))
    assert key not in message and "<redacted>" in message
    assert redact("https://a.blob.core.windows.net/c/k?sv=2024&sig=AbC%2F&se=1") == (
        "https://a.blob.core.windows.net/c/k?sv=2024&sig=<redacted>&se=1")
    assert redact("BlobEndpoint=x;AccountName=a;AccountKey=abc==;") == (
        "BlobEndpoint=x;AccountName=a;AccountKey=<redacted>;")


@pytest.mark.parametrize(("method", "query", "headers", "name"), [
    ("PUT", "", {}, "PutBlob"),
    ("PUT", "comp=block&blockid=YWJj", {}, "PutBlock"),
    ("PUT", "comp=blocklist", {}, "PutBlockList"),
    ("GET", "", {}, "GetBlob"),
    ("HEAD", "", {}, "GetBlobProperties"),
    ("DELETE", "", {}, "DeleteBlob"),
    ("GET", "restype=container&comp=list&prefix=a%2F", {}, "ListBlobs"),
    ("POST", "restype=container&comp=batch", {}, "BlobBatch"),
    ("GET", "restype=container", {}, "GetContainerProperties"),
    ("PUT", "restype=container", {}, "CreateContainer"),
    ("PUT", "", {"x-ms-copy-source": "https://x"}, "CopyBlob"),
    ("GET", "comp=list", {}, "ListContainers"),
])
def test_request_names(method: str, query: str, headers: dict[str, str], name: str) -> None:
    assert operation(method, query, headers) == name


def test_request_classification_with_and_without_the_account_in_the_path() -> None:
    assert classify("PUT", "/devstoreaccount1/ckpt/q/offsets/0", "", {}) == ("PutBlob", "ckpt", "q/offsets/0")
    assert classify("GET", "/ckpt", "restype=container&comp=list&prefix=q%2F", {}, account_in_path=False) == (
        "ListBlobs", "ckpt", "q/")


@pytest.mark.parametrize(("uri", "options", "expected"), [
    ("az://ckpt/q", {"account_name": "acct"}, ("https://acct.blob.core.windows.net", "acct")),
    ("abfss://ckpt@acct.dfs.core.windows.net/q", {}, ("https://acct.blob.core.windows.net", "acct")),
    ("abfs://ckpt@acct.dfs.core.windows.net/q", {}, ("https://acct.blob.core.windows.net", "acct")),
    ("wasbs://ckpt@acct.blob.core.windows.net/q", {}, ("https://acct.blob.core.windows.net", "acct")),
    ("abfss://ckpt@acct.dfs.core.chinacloudapi.cn/q", {}, ("https://acct.blob.core.chinacloudapi.cn", "acct")),
    ("az://ckpt/q", {"endpoint_url": "http://127.0.0.1:10000/devstoreaccount1/"},
     ("http://127.0.0.1:10000/devstoreaccount1", "devstoreaccount1")),
])
def test_the_account_endpoint_of_each_url_form(uri: str, options: dict[str, Any],
                                               expected: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    assert account_url(uri, **options) == expected


def test_an_account_must_be_named_and_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    with pytest.raises(ValueError, match="names no storage account"):
        account_url("az://ckpt/q")
    with pytest.raises(ValueError, match="differs from the account"):
        account_url("abfss://ckpt@acct.dfs.core.windows.net/q", account_name="other")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromenv")
    assert account_url("az://ckpt/q") == ("https://fromenv.blob.core.windows.net", "fromenv")


@pytest.mark.parametrize("uri", ["az://ckpt/q", "abfss://ckpt@acct.dfs.core.windows.net/q",
                                 "abfs://ckpt@acct.dfs.core.windows.net/q", "wasbs://ckpt@acct.blob.core.windows.net/q",
                                 "wasb://ckpt@acct.blob.core.windows.net/q"])
def test_manager_for_gives_azure_paths_a_direct_write_manager(uri: str) -> None:
    from checkpointfs import DirectWriteManager
    from checkpointfs.store.azure.store import AzureStore

    manager = manager_for(uri, account_name="acct", account_key="a2V5", part_size=1234)
    try:
        assert isinstance(manager, DirectWriteManager) and manager.part_size == 1234
        assert isinstance(manager.connected, AzureStore) and manager.options.root == uri
        inner: Any = manager.store
        while not isinstance(inner, AzureStore):
            inner = inner.inner
        assert inner.endpoint_url == "https://acct.blob.core.windows.net"
        assert manager.requests.snapshot() == {}  # nothing sent until the first call
    finally:
        manager.close()


def test_malformed_azure_paths_are_refused() -> None:
    from checkpointfs.errors import InvalidPathError

    for uri in ("abfss://c@a.dfs.core.windows.net/x", "az://ckpt@acct/x", "wasbs://ckpt/x"):
        with pytest.raises(InvalidPathError):
            manager_for(uri, account_name="acct", account_key="a2V5")


def test_s3_options_are_refused_on_azure() -> None:
    with pytest.raises(ValueError, match=r"not an option of Azure Blob Storage: sse \(for S3\)"):
        manager_for("az://ckpt/q", account_name="acct", account_key="a2V5", sse="AES256")


def test_block_ids_have_one_length_and_name_their_writer() -> None:
    ids = {block_id("a" * 32, n) for n in (1, 99, 50000)}
    assert {len(i) for i in ids} == {39} and all(i.startswith("a" * 32 + "-") for i in ids)


def test_importing_checkpointfs_loads_no_azure_and_a_missing_extra_is_named() -> None:
    code = ("import sys; import checkpointfs; from checkpointfs import manager_for; "
            "assert not [m for m in sys.modules if m.startswith('azure')], 'azure loaded'; "
            "sys.modules['azure'] = None\n"
            "try:\n    manager_for('az://ckpt/q', account_name='acct')\n"
            "except ImportError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "pip install 'checkpointfs[azure]'" in done.stdout
