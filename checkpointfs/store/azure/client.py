"""What the Azure SDK's requests and answers mean: each request by the Blob service's operation name (``PutBlob``,
``PutBlockList``, ``GetBlobProperties``..., from the method, the query and the headers: how
:class:`~checkpointfs.store.azure.store.AzureStore` counts its requests and how a proxy in front of Azurite records
them), and each failure as the store's answer in the protocol's terms (:func:`answer_of`) and the contract's error
(:func:`translate`). Importing it loads no Azure SDK (:func:`answer_of` imports azure-core when called)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote

from ... import protocol
from ...errors import AccessDeniedError, BucketNotFoundError, CheckpointFsError, StoreError, StoreUnavailableError
from ...redact import redact
from ..base import ObjectPath
from ..errors import class_names, error_for

__all__ = ["answer_of", "classify", "operation", "translate"]

_CONTAINER_OPS = {
    ("GET", "list"): "ListBlobs",
    ("POST", "batch"): "BlobBatch",
    ("GET", ""): "GetContainerProperties",
    ("HEAD", ""): "GetContainerProperties",
    ("PUT", ""): "CreateContainer",
    ("DELETE", ""): "DeleteContainer",
}
_BLOB_OPS = {
    ("PUT", "block"): "PutBlock",
    ("PUT", "blocklist"): "PutBlockList",
    ("GET", "blocklist"): "GetBlockList",
    ("PUT", "metadata"): "SetBlobMetadata",
    ("GET", "metadata"): "GetBlobMetadata",
    ("PUT", "lease"): "LeaseBlob",
    ("PUT", "properties"): "SetBlobProperties",
    ("PUT", ""): "PutBlob",
    ("GET", ""): "GetBlob",
    ("HEAD", ""): "GetBlobProperties",
    ("DELETE", ""): "DeleteBlob",
}


def operation(method: str, query: str, headers: Mapping[str, str] | None = None) -> str:
    """The Blob service operation of a request: container operations carry ``restype=container``, the service's
    ``restype=service``, every other request is a blob's; ``comp`` tells them apart."""
    params = parse_qs(query, keep_blank_values=True)
    restype = (params.get("restype") or [""])[0]
    comp = (params.get("comp") or [""])[0]
    method = method.upper()
    if restype == "service" or (comp == "list" and not restype):
        return "ListContainers" if comp == "list" else f"{method}Service"
    if restype == "container":
        return _CONTAINER_OPS.get((method, comp), f"{method}Container{comp.title()}")
    if method == "PUT" and not comp and headers is not None and any(
            name.lower() == "x-ms-copy-source" for name in headers):
        return "CopyBlob"
    return _BLOB_OPS.get((method, comp), f"{method}Blob{comp.title()}")


def classify(method: str, path: str, query: str, headers: Mapping[str, str], *,
             account_in_path: bool = True) -> tuple[str, str, str]:
    """``(operation, container, blob)`` of a Blob service request; ``account_in_path``: the URL path starts with the
    account (Azurite's and any IP-style endpoint's ``/devstoreaccount1/container/blob``), as opposed to a
    production host ``account.blob.core.windows.net``. A listing is attributed to its prefix."""
    segments = unquote(path).lstrip("/").split("/", 2 if account_in_path else 1)
    if account_in_path:
        segments = segments[1:]
    container = segments[0] if segments else ""
    blob = segments[1] if len(segments) > 1 else ""
    name = operation(method, query, headers)
    if name == "ListBlobs":
        blob = (parse_qs(query).get("prefix") or [""])[0]
    return name, container, blob


def answer_of(error: BaseException) -> protocol.Answer:
    """The store's answer an Azure SDK failure stands for: the HTTP status and the ``x-ms-error-code`` of an answer,
    else the transport failure kind its class names (azure-core's ``ServiceRequestError``: never sent;
    ``ServiceResponseTimeoutError``, ``ServiceResponseError``: sent, no answer; ``IncompleteReadError``: cut off)."""
    from azure.core.exceptions import HttpResponseError  # here: operation() and classify() load no SDK

    names = class_names(error)
    if isinstance(error, HttpResponseError) and error.status_code:
        response: Any = error.response
        header = response.headers.get("x-ms-error-code") if response is not None else None
        code = header or getattr(error, "error_code", None) or ""
        return protocol.Answer(status=int(error.status_code), code=str(getattr(code, "value", code)),
                               python_classes=names)
    return protocol.Answer(transport=protocol.RULES.transport_of(names), python_classes=names)


def _message(error: BaseException, secrets: tuple[str, ...]) -> str:
    """The first line of the store's own words (the rest is request ids and the raw XML)."""
    text = str(getattr(error, "reason", None) or getattr(error, "message", None) or error)
    return redact(text.strip().splitlines()[0] if text.strip() else "", secrets)


def translate(error: BaseException, where: ObjectPath, operation: str,
              secrets: tuple[str, ...] = ()) -> CheckpointFsError:
    """The contract's error for an Azure SDK failure of ``operation`` on ``where``, classified by the protocol table
    (its class in ``answer_class``); ``secrets`` are redacted from the message."""
    if isinstance(error, CheckpointFsError):
        return error
    answer = answer_of(error)
    if answer.status:
        result = error_for(answer, where.uri, operation, _message(error, secrets))
        if isinstance(result, BucketNotFoundError):
            result = BucketNotFoundError(where.uri, f"{operation}: container {where.bucket!r} does not exist",
                                         code=result.code, status=result.status)
            result.answer, result.answer_class = answer, protocol.classify(answer)
        return result
    final = protocol.classify(answer)
    detail = f"{type(error).__name__} ({answer.transport or 'no answer'}): {_message(error, secrets)}"
    failed: CheckpointFsError
    if final.error == "AccessDeniedError":
        failed = AccessDeniedError(where.uri, f"{operation}: no usable Azure credentials: {detail}")
    elif final.error == "StoreUnavailableError":
        failed = StoreUnavailableError(where.uri, f"{operation}: the store kept failing after retries: {detail}")
    else:
        failed = StoreError(where.uri, f"{operation} failed: {detail}")
    failed.answer, failed.answer_class = answer, final
    return failed
