"""Azure Blob Storage requests by operation name (``PutBlob``, ``PutBlockList``, ``GetBlobProperties``...), from the
method, the query and the headers of an HTTP request: how :class:`~checkpointfs.store.azure.AzureStore` counts its
requests and how a proxy in front of Azurite records them. Loads no Azure SDK."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qs, unquote

__all__ = ["classify", "operation"]

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
