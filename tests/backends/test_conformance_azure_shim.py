"""The conformance suite for the JVM shim on ``abfs://`` (``jvm-shim|azurite``): DirectWriteCheckpointFileManager
through hadoop-azure's ABFS on a flat-namespace account over the Blob endpoint (the running line's hadoop-azure, on
the session's class path when jvm-shim/build.sh gathered it: Hadoop 3.4.2 and later), on Azurite behind the
session's recording proxy (tests/azure/logged.py), which counts each Blob request under the S3 name it stands in for
(``PutBlob`` as ``PutObject``, ``PutBlock`` as ``UploadPart``, ``PutBlockList`` as ``CompleteMultipartUpload``,
``GetBlobProperties`` as ``HeadObject``...).

The shim sends its own Blob requests (Shared Key, Azurite's development key) for creates, the write-id read-back,
file probes and file deletes; listings and reads go through ABFS. The case's part size is ABFS's write request size
(``fs.azure.write.request.size``, which the shim takes as its part size when set), so the suite's large files are a
few ``Put Block``s and one ``Put Block List``."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing.faults import Fault, FaultKind, FaultPlan
from tests.conformance.cases import Case
from tests.conformance.suite import ContractSuite, read, write
from tests.conftest import abfs_jars, abfs_settings

pytestmark = [pytest.mark.spark, pytest.mark.emulator]

PART = 256 * 1024
"""The case's part size (``fs.azure.write.request.size``)."""


def abfs_conf(logged: Any) -> dict[str, str]:
    """ABFS's settings for Azurite's account through the proxy (a flat namespace over the Blob endpoint)."""
    azurite = logged.azurite
    host = logged.endpoint_url.split("://", 1)[1].split("/", 1)[0]
    return {**abfs_settings(host, azurite.account_name, azurite.account_key),
            "fs.azure.write.request.size": str(PART)}


class AbfsFaultPlan(FaultPlan):
    """A fault plan whose key patterns may name a key as an abfs:// path names it (``container@account.dfs...
    /key``, what the suite derives from the case's paths): matched as the proxy sees it, ``container/key``."""

    def add(self, fault: Fault, *, first: bool = False) -> Fault:
        pattern = re.sub(r"@[^/]*?dfs\\?\.core\\?\.windows\\?\.net", "", fault.key_pattern)
        if pattern != fault.key_pattern:
            fault.key_pattern = pattern
            fault._regex = re.compile(pattern)  # type: ignore[attr-defined]
        return super().add(fault, first=first)


class AbfsNamedLog:
    """The session proxy's log (S3 names) with each request's container named as an abfs:// path names it
    (``container@account.dfs.core.windows.net``), so that the suite's key patterns, derived from the case's paths,
    match the requests it looks up."""

    def __init__(self, log: Any, authority: str) -> None:
        self._log = log
        self._container, _, self._account_host = authority.partition("@")

    def all(self) -> list[Any]:
        return [dataclasses.replace(r, bucket=f"{r.bucket}@{self._account_host}") if r.bucket == self._container
                else r for r in self._log.all()]

    def counts(self) -> dict[str, int]:
        return dict(self._log.counts())

    def clear(self) -> None:
        self._log.clear()

    def __len__(self) -> int:
        return len(self._log)


class ProxySide:
    """What the conformance ``Case`` reads from its ``server``: the session proxy's request log (S3 names), the fault
    plan in force (a fresh, empty one per case), Azurite's keys, the names holding only uncommitted blocks under the
    case's root, and a writer behind the manager's back."""

    def __init__(self, logged: Any, prefix: str, plan: FaultPlan, authority: str) -> None:
        self._scoped = logged.scoped(prefix)
        self.faults = plan
        self.requests = AbfsNamedLog(logged.requests, authority)
        self.endpoint_url = logged.endpoint_url

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        return list(self._scoped.keys(prefix, bucket))

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        return list(self._scoped.open_uploads())

    def client(self, admin: bool = False) -> Any:
        return self._scoped.client(admin)


@pytest.fixture(params=["jvm-shim|azurite"])
def case(request: pytest.FixtureRequest, logged_azurite: Any) -> Iterator[Case]:
    if not abfs_jars():
        pytest.skip("hadoop-azure for this line's Hadoop was not gathered when the session's Spark started "
                    "(jvm-shim/build.sh gathers it for Hadoop 3.4.2 and later)")
    key = f"conformance-shim/{uuid.uuid4().hex}"
    azurite = logged_azurite.azurite
    container = "checkpointfs-azure"
    root = f"abfs://{container}@{azurite.account_name}.dfs.core.windows.net/{key}"
    manager = JvmCheckpointFileManager(request.getfixturevalue("spark"), root, hadoop_conf=abfs_conf(logged_azurite))
    plan = AbfsFaultPlan([])
    logged_azurite.set_faults(plan)
    case = Case(request.param, manager, root, part_size=PART, small_commit_requests={"PutObject": 1},
                conditional_writes=True, store_check=True, probe_rule=True, open_unseen_heads=1,
                open_own_large_heads=1, multipart_start_requests=0)
    case.server = ProxySide(logged_azurite, key + "/", plan, root.split("://", 1)[1].split("/", 1)[0])  # type: ignore[assignment]
    yield case
    logged_azurite.set_faults(None)
    manager.close()


class TestContractOnAbfsThroughTheShim(ContractSuite):
    """docs/contract.md for the shim on abfs:// (flat namespace, Blob endpoint), against the ``case`` above."""

    @pytest.mark.xfail(strict=True, reason="the proxy drops If-None-Match from the shim's requests, which are signed "
                       "with the account's Shared Key (the condition is part of the string to sign): Azurite refuses "
                       "them (403 AuthorizationFailure) before their condition matters, so the store check fails "
                       "with that error, not with UnsafeStoreError; it needs a proxy that signs again")
    def test_a_store_that_ignores_conditional_writes_is_refused_before_anything_is_written(self, case: Case) -> None:
        super().test_a_store_that_ignores_conditional_writes_is_refused_before_anything_is_written(case)

    @pytest.mark.parametrize("kind", ["lost-response", "error-after-apply"])
    def test_a_put_blob_that_landed_without_its_answer_is_settled_by_the_write_id(self, case: Case,
                                                                                  kind: FaultKind) -> None:
        """The shim's own retry and settling (not covered by the suite, whose faults refuse before applying): the
        first Put Blob lands and its answer is lost (or replaced by a 500); the shim sends it again, gets 409
        BlobAlreadyExists, reads the blob's write id (its own) and reports success: one file, nothing else written."""
        self._past_the_store_check(case)
        assert case.server is not None
        path = case.path("commits", "3")
        case.server.faults.add(Fault(kind, frozenset({"PutObject"}), re.escape(path.split("://", 1)[1]) + "$",
                                     times=1), first=True)
        since = len(case.server.requests)
        write(case, "commits/3", b"v1\n{}")
        sent = [(r.operation, r.fault) for r in case.server.requests.all()[since:]]
        assert sent == [("PutObject", kind), ("PutObject", ""), ("HeadObject", "")], sent
        assert read(case, path) == b"v1\n{}"
        assert case.server.keys(path.split(".windows.net/", 1)[1]) == [path.split(".windows.net/", 1)[1]]
