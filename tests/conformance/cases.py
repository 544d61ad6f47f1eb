"""The implementations the conformance suite runs against, and the cases each is known to fail.

A *case* is a manager plus a fresh root directory for one test. Every implementation registers a factory in
:data:`FACTORIES`; the suite in test_contract.py runs every test against every factory. Known failures of a
manager (Spark's own managers, say) go into :data:`EXPECTED_FAILURES` with the reason: they run as strict xfails,
so a case that starts passing is noticed, and docs/contract.md carries the table.
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from checkpointfs import CheckpointFileManager, DirectWriteManager, RenameBasedManager, RetryPolicy, manager_for, paths
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.directory_bucket import PROFILES

SMALL_PART = 4096
"""Part size of the S3 managers in the suite (the embedded S3 accepts parts down to 1 KiB)."""
FAST_RETRY = RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=0.1, max_elapsed_s=10)


@dataclass
class Case:
    """One implementation under test, with a fresh root directory."""

    name: str
    manager: CheckpointFileManager
    root: str
    server: EmbeddedS3 | None = None
    part_size: int | None = None
    """Size above which the manager streams parts (S3 multipart); None where the notion does not apply."""
    last_part_with_completion: bool = False
    """Whether the last part of a large file goes with the completion (GCS's resumable upload: its final chunk), so
    that a file of n parts costs n - 1 UploadPart requests."""
    small_commit_requests: dict[str, int] | None = None
    """What a small-file commit costs at the server, exactly, where the manager promises it."""
    no_cost_promise: str = "not an object-store manager"
    """Why there is no cost to check, where ``small_commit_requests`` is None."""
    conditional_writes: bool = False
    """Whether creates without overwrite are conditional writes (``If-None-Match: *``) sent to :attr:`server`, whose
    fault layer can then answer them as a store would."""
    store_check: bool = False
    """Whether the manager checks the store before its process's first create-if-absent to a bucket
    (checkpointfs.store.check): that first create also pays the check's requests."""
    probe_rule: bool = False
    """Whether the manager follows docs/contract.md's probe rule (``exists``/``open`` costs), with :attr:`root` as
    its root."""
    open_unseen_heads: int = 0
    """HeadObject requests before the one GetObject of ``open`` of a file the manager has neither written nor listed
    (the JVM shim: 1, S3A's own open)."""
    multipart_start_requests: int = 1
    """Requests that start a multipart upload (S3's CreateMultipartUpload; none on Azure, whose blocks need no
    upload)."""
    open_own_large_heads: int = 0
    """HeadObject requests before the one GetObject of ``open`` of a file the manager published with put-if-absent,
    too large to be kept in memory (the JVM shim gives S3A the length, not the ETag: see jvm_cases)."""

    def path(self, *names: str) -> str:
        """A path under the case's root."""
        return "/".join([self.root.rstrip("/"), *names])

    def server_counts(self) -> dict[str, int]:
        """Requests the embedded S3 saw (empty without a server)."""
        return self.server.requests.counts() if self.server else {}

    def open_uploads(self) -> list[str]:
        """Multipart uploads left open at the server, in the case's bucket (none without a server)."""
        return self.server.open_uploads(bucket=self.bucket) if self.server else []

    @property
    def bucket(self) -> str:
        """The bucket of :attr:`root`, where the case has a server."""
        return paths.parse_object(self.root).bucket

    def keys(self, prefix: str) -> list[str]:
        """The keys under ``prefix`` in the case's bucket, read at the server."""
        assert self.server is not None
        return self.server.keys(prefix, bucket=self.bucket)


CaseFactory = Callable[[pytest.FixtureRequest, Path], Case]


def _rename_local(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return Case("rename-local", RenameBasedManager("file"), str(tmp_path / "root"))


def _rename_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return Case("rename-memory", RenameBasedManager("memory"), f"memory://conformance/{uuid.uuid4().hex}")


def _direct(strategy: str) -> CaseFactory:
    def make(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
        server: EmbeddedS3 = request.getfixturevalue("embedded_s3")
        root = server.uri(f"conformance/{uuid.uuid4().hex}")
        manager = DirectWriteManager(**server.manager_options(), part_size=SMALL_PART, abort_strategy=strategy,
                                     retry=FAST_RETRY, root=root)
        request.addfinalizer(manager.close)
        return Case(f"direct-{strategy}", manager, root, server=server, part_size=SMALL_PART,
                    small_commit_requests={"PutObject": 1}, conditional_writes=True, store_check=True,
                    probe_rule=True)

    return make


def profile_root(server: EmbeddedS3, profile: str | None, scheme: str = "s3") -> str:
    """A fresh root for a case on ``server`` served by ``profile``'s rules until its next reset (None: S3 Standard's);
    on a directory-bucket profile, in a bucket named as a directory bucket (``--x-s3``), as clients tell one."""
    from checkpointfs.testing.embedded_s3 import DIRECTORY_BUCKET

    server.profile = profile
    bucket = None
    if profile is not None:
        server.create_bucket(DIRECTORY_BUCKET)
        bucket = DIRECTORY_BUCKET
    return server.uri(f"conformance/{uuid.uuid4().hex}", bucket=bucket, scheme=scheme)


DIRECTORY_BUCKET_PROFILES = PROFILES
"""The embedded S3's profiles of S3 Express One Zone's rules, user metadata kept and dropped: the S3 managers with
conditional writes (Python's and the shim) run the suite on each too."""


def _direct_directory_bucket(profile: str) -> CaseFactory:
    """DirectWriteManager on the embedded S3's directory-bucket profile (S3 Express One Zone's rules), in a bucket
    named as a directory bucket."""

    def make(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
        server: EmbeddedS3 = request.getfixturevalue("embedded_s3")
        root = profile_root(server, profile)
        manager = DirectWriteManager(**server.manager_options(), part_size=SMALL_PART, retry=FAST_RETRY, root=root)
        request.addfinalizer(manager.close)
        return Case(f"direct-abort|{profile}", manager, root, server=server, part_size=SMALL_PART,
                    small_commit_requests={"PutObject": 1}, conditional_writes=True, store_check=True,
                    probe_rule=True)

    return make


def _direct_azurite(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    """DirectWriteManager on Azurite, behind a recording proxy (requests counted at the server, under the S3 names
    they stand in for: tests/azure/logged.py)."""
    logged = request.getfixturevalue("logged_azurite")
    key = f"conformance/{uuid.uuid4().hex}"
    root = logged.uri(key)
    manager = manager_for(root, **logged.manager_options(), part_size=SMALL_PART, retry=FAST_RETRY)
    request.addfinalizer(manager.close)
    return Case("direct-abort|azurite", manager, root, server=logged.scoped(key + "/"), part_size=SMALL_PART,
                small_commit_requests={"PutObject": 1}, store_check=True, probe_rule=True,
                multipart_start_requests=0)


FACTORIES: dict[str, CaseFactory] = {
    "rename-local": _rename_local,
    "rename-memory": _rename_memory,
    "direct-abort": _direct("abort"),
    "direct-close-then-delete": _direct("close-then-delete"),
    **{f"direct-abort|{profile}": _direct_directory_bucket(profile) for profile in DIRECTORY_BUCKET_PROFILES},
}
"""Every implementation the suite runs against, by case id."""
EMULATOR_IMPLEMENTATIONS: frozenset[str] = frozenset()
"""Registered implementations that run against a store emulator (marked ``emulator``): Azurite's, where the Azure
SDK (the ``azure`` extra) is installed."""
if importlib.util.find_spec("azure") is not None and importlib.util.find_spec("azure.storage.blob") is not None:
    FACTORIES["direct-abort|azurite"] = _direct_azurite
    EMULATOR_IMPLEMENTATIONS = frozenset({"direct-abort|azurite"})

EXPECTED_FAILURES: dict[tuple[str, str], str] = {
    ("direct-close-then-delete", "test_cancel_of_large_overwrite_leaves_existing_file_unchanged"):
        "close-then-delete cannot abort: once parts were sent, cancel completes the upload (replacing the old "
        "file) and then deletes it, so an overwrite that is cancelled loses the file it would have replaced",
}
"""(case id, test name) -> why that implementation fails that test."""


def mark_expected_failures(items: list[pytest.Item]) -> None:
    """Mark the items of :data:`EXPECTED_FAILURES` as strict xfails. A case id may carry a suffix after ``|`` (the
    fault profile of tests/faults); the implementation's id comes first."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "case" not in callspec.params:
            continue
        case_id = str(callspec.params["case"])
        implementation = case_id.split("|", 1)[0]
        # keyed by the test's name, or by the item's full name where only some parameters of a test fail; by the
        # whole case id first (an implementation on one store: "direct-abort|azurite")
        name = getattr(item, "originalname", item.name)
        reason = next((EXPECTED_FAILURES[key] for key in ((case_id, name), (case_id, item.name),
                                                           (implementation, name), (implementation, item.name))
                       if key in EXPECTED_FAILURES), None)
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


# JVM implementations: the shim and Spark's own managers, through py4j (they need Case, defined above). Registered
# only where pyspark is installed, so that the pure-Python suite collects without it (the floors job, `make check`).
JVM_IMPLEMENTATIONS: frozenset[str] = frozenset()
"""Names of the registered implementations that run in Spark's JVM (tests/conformance/conftest.py marks them
``spark``)."""
if importlib.util.find_spec("pyspark") is not None:
    from .jvm_cases import JVM_EXPECTED_FAILURES, JVM_FACTORIES

    FACTORIES.update(JVM_FACTORIES)
    EXPECTED_FAILURES.update(JVM_EXPECTED_FAILURES)
    JVM_IMPLEMENTATIONS = frozenset(JVM_FACTORIES)
