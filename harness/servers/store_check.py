"""For tests that count or fault the requests of one commit: run the store check a DirectWriteManager's first
create-if-absent would run (checkpointfs.store.check), so that what follows is the commit alone."""

from __future__ import annotations

from checkpointfs.direct.manager import DirectWriteManager
from checkpointfs.store.base import ObjectPath
from checkpointfs.store.check import MULTIPART_CHECK_REQUESTS, PUT_CHECK_REQUESTS, CheckedStore

__all__ = ["CHECK_REQUESTS", "MULTIPART_CHECK_REQUESTS", "PUT_CHECK_REQUESTS", "pass_store_check"]

CHECK_REQUESTS = {"HeadObject": 2, "PutObject": 2, "DeleteObject": 1}
"""The PutObject check's requests by S3 operation, when nothing fails."""


def pass_store_check(manager: DirectWriteManager, uri: str, *, multipart: bool = False) -> None:
    """Run ``manager``'s store check for the directory of ``uri`` (and its multipart check with ``multipart``)
    now; AssertionError if the manager has the check off."""
    store = manager.store
    if not isinstance(store, CheckedStore):
        raise AssertionError(f"{manager!r} has store_check=False")
    where = ObjectPath.parse(uri)
    store.ensure(where, multipart=False)
    if multipart:
        store.ensure(where, multipart=True)
