"""The store permissions each request of a writer needs (``protocol.json`` section ``permissions``), and how a
refusal names them: :func:`needs` words the missing permission and the bucket exactly as the shim's
``Permissions.needs`` does (``tests/protocol/golden_permissions.json`` checks both).
"""

from __future__ import annotations

from typing import Literal

from . import load

__all__ = ["FAMILIES", "OPERATIONS", "REQUESTS", "REQUIRED", "actions", "family_of", "needs"]

Family = Literal["s3", "gcs", "azure"]
_DATA = load()["permissions"]
FAMILIES: tuple[Family, ...] = ("s3", "gcs", "azure")
"""The store families the table covers."""
REQUESTS: tuple[str, ...] = ("head", "list", "get", "put", "delete", "list_uploads", "abort_upload")
"""The kinds of request a writer sends (``head_missing`` is a head of a key that does not exist)."""
REQUIRED: tuple[str, ...] = tuple(_DATA["required"])
"""The requests without which a checkpoint cannot be written at all (the rest degrade: see docs/operations.md)."""

OPERATIONS: dict[str, str] = {
    "head_object": "head", "list_objects_v2": "list", "list": "list", "get_object": "get", "put_object": "put",
    "create_multipart_upload": "put", "upload_part": "put", "complete_multipart_upload": "put",
    "delete_object": "delete", "delete_objects": "delete", "list_multipart_uploads": "list_uploads",
    "abort_multipart_upload": "abort_upload"}
"""The Python S3 store's operation names (as its errors name them) and the request kind each is."""

_SCHEMES: dict[str, Family] = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "az": "azure", "abfs": "azure",
                               "abfss": "azure", "wasb": "azure", "wasbs": "azure"}


def family_of(uri: str) -> Family | None:
    """The store family of ``uri`` by its scheme (None for one the table does not cover)."""
    return _SCHEMES.get(uri.split("://", 1)[0].lower()) if "://" in uri else None


def actions(family: str, request: str) -> tuple[str, ...]:
    """The permissions ``request`` needs on a store of ``family`` (empty: none of its own, or unknown)."""
    table = _DATA.get(family, {})
    return tuple(table.get(request, ())) if isinstance(table, dict) else ()


def needs(family: str, request: str, bucket: str) -> str:
    """What to grant for ``request`` on ``bucket`` of a store of ``family``, as a refusal says it (``""`` when the
    table names nothing). A head on S3 names s3:ListBucket too: without it S3 answers a HEAD of a missing key 403."""
    granted = actions(family, request)
    if not granted:
        return ""
    text = f"grant {' and '.join(granted)} on bucket '{bucket}'"
    missing = actions(family, request + "_missing")
    if missing:
        text += (f", and {' and '.join(missing)} (without it a {request} of a missing key is answered 403, not "
                 "404)")
    return text
