"""Faults on Azure, injected by the recording proxy in front of Azurite (Azurite has no fault layer of its own):
each fault kind on the request where it matters, with what the store and the manager must make of it; and the
conformance suite under every fault profile the proxy can carry (7 profiles: in ``make test``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("azure.storage.blob", reason="the azure extra (azure-storage-blob) is not installed")

from checkpointfs import manager_for
from checkpointfs.direct.manager import DirectWriteManager
from checkpointfs.errors import FileAlreadyExistsError
from checkpointfs.store.retry import RetryPolicy
from checkpointfs.testing.faults import PROFILES, Fault, FaultPlan
from tests.conformance.cases import SMALL_PART, Case
from tests.conformance.suite import ContractSuite

from .logged import LoggedAzurite

RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05, max_elapsed_s=30)
PROXY_PROFILES = ["throttling", "server-errors", "resets", "lost-responses", "errors-after-apply",
                  "truncated-bodies", "latency"]
"""The profiles the proxy can carry: one fault kind each, and the latency model (consistency lags are the embedded
S3's)."""


@pytest.fixture
def faulty(logged_azurite: LoggedAzurite) -> Iterator[LoggedAzurite]:
    yield logged_azurite
    logged_azurite.set_faults(None)


@pytest.fixture
def manager(faulty: LoggedAzurite) -> Iterator[DirectWriteManager]:
    root = faulty.uri(f"faults/{uuid.uuid4().hex[:12]}")
    m = manager_for(root, **faulty.manager_options(), part_size=SMALL_PART, retry=RETRY)
    assert isinstance(m, DirectWriteManager)
    write(m, f"{root}/warm/0", b"w")  # pays the put check before any fault
    write(m, f"{root}/warm/1.snapshot", b"w" * (SMALL_PART + 1))  # and the block-list check
    m.metrics = type(m.metrics)()
    yield m
    m.close()


def write(manager: DirectWriteManager, path: str, data: bytes, overwrite: bool = False) -> None:
    with manager.create_atomic(path, overwrite_if_possible=overwrite) as out:
        out.write(data)


def read(manager: DirectWriteManager, path: str) -> bytes:
    with manager.open(path) as f:
        return f.read()


def root_of(manager: DirectWriteManager) -> str:
    assert manager.options.root is not None
    return manager.options.root


@pytest.mark.parametrize(("kind", "operation", "data"), [
    ("lost-response", "PutObject", b"small"),
    ("error-after-apply", "PutObject", b"small"),
    ("lost-response", "CompleteMultipartUpload", b"L" * (SMALL_PART * 2 + 1)),
    ("error-after-apply", "CompleteMultipartUpload", b"L" * (SMALL_PART * 2 + 1)),
])
def test_a_create_whose_answer_was_lost_is_settled_by_its_write_id(
        faulty: LoggedAzurite, manager: DirectWriteManager, kind: str, operation: str, data: bytes) -> None:
    """The commit landed but its answer did not: the retry meets 409 BlobAlreadyExists, the write id read back is
    ours, so the create succeeded (never a false "already exists")."""
    faulty.set_faults(FaultPlan([Fault(kind, frozenset({operation}), times=1)]))  # type: ignore[arg-type]
    path = f"{root_of(manager)}/offsets/0"
    write(manager, path, data)
    assert read(manager, path) == data
    counters = manager.metrics.snapshot()
    assert counters["ambiguousSettled"] == 1 and counters["retries"] >= 1 and counters["conflicts"] == 0


@pytest.mark.parametrize("kind", ["slowdown", "server-error", "reset"])
def test_refusals_are_retried(faulty: LoggedAzurite, manager: DirectWriteManager, kind: str) -> None:
    plan = FaultPlan([Fault(kind, frozenset({"PutObject", "UploadPart", "GetObject"}), times=3)])  # type: ignore[arg-type]
    faulty.set_faults(plan)
    data = b"B" * (SMALL_PART * 2 + 7)
    path = f"{root_of(manager)}/state/1.snapshot"
    write(manager, path, b"small")
    write(manager, f"{path}.2", data)
    assert read(manager, f"{path}.2") == data and read(manager, path) == b"small"
    assert plan.kinds_injected() == {kind: 3}
    counters = manager.metrics.snapshot()
    assert counters["retries"] >= 3
    assert counters["throttled"] == (3 if kind == "slowdown" else 0)  # 503 ServerBusy asks to slow down


def test_a_conflict_answer_on_an_absent_name_fails_the_create(faulty: LoggedAzurite,
                                                              manager: DirectWriteManager) -> None:
    """409 BlobAlreadyExists is the store's answer at the write's linearization point: it stands, even though the
    name reads as absent afterwards (another writer's file, deleted since, is never resurrected)."""
    faulty.set_faults(FaultPlan([Fault("precondition-failed", frozenset({"PutObject"}), times=1)]))
    path = f"{root_of(manager)}/offsets/3"
    with pytest.raises(FileAlreadyExistsError):
        write(manager, path, b"x")
    assert not manager.exists(path)


def test_a_truncated_read_resumes_pinned_to_the_etag(faulty: LoggedAzurite, manager: DirectWriteManager) -> None:
    data = bytes(range(256)) * 400
    path = f"{root_of(manager)}/state/2.snapshot"
    write(manager, path, data)
    plan = FaultPlan([Fault("truncate", frozenset({"GetObject"}), times=1)])
    faulty.set_faults(plan)
    faulty.raw_requests.clear()
    assert read(manager, path) == data
    gets = [r for r in faulty.raw_requests.all() if r.operation == "GetBlob"]
    assert [r.fault for r in gets] == ["truncate", ""] and plan.kinds_injected() == {"truncate": 1}


@pytest.fixture(params=[f"direct-abort|azurite|{p}" for p in PROXY_PROFILES])
def case(request: pytest.FixtureRequest, faulty: LoggedAzurite, tmp_path: Path) -> Case:
    profile = str(request.param).rsplit("|", 1)[1]
    key = f"matrix/{uuid.uuid4().hex}"
    root = faulty.uri(key)
    manager = manager_for(root, **faulty.manager_options(), part_size=SMALL_PART, retry=RETRY)
    request.addfinalizer(manager.close)
    plan = PROFILES[profile](len(profile))
    faulty.set_faults(plan)
    request.addfinalizer(lambda: print(f"{request.param}: injected {plan.kinds_injected()}"))
    return Case(str(request.param), manager, root, server=faulty.scoped(key + "/"), part_size=SMALL_PART,
                no_cost_promise="request counts are checked without faults", store_check=True)


class TestContractOnAzuriteUnderFaults(ContractSuite):
    """The conformance suite on Azurite under each fault profile the proxy carries: no partial object visible, no
    false "already exists" from our own lost answer, no false success."""


def test_a_refused_blob_batch_falls_back_to_one_delete_a_key(faulty: LoggedAzurite,
                                                             manager: DirectWriteManager) -> None:
    """An account that takes no Blob Batch (hierarchical namespace) answers it 400: the keys go one request each."""
    root = root_of(manager)
    for n in range(3):
        write(manager, f"{root}/state/{n}.delta", b"d")
    plan = FaultPlan([Fault("precondition-failed", frozenset({"DeleteObjects"}), times=1)])
    faulty.set_faults(plan, codes={"precondition-failed": (400, "InvalidInput")})
    faulty.raw_requests.clear()
    manager.delete(f"{root}/state")
    assert not [s for s in manager.list(f"{root}/state")]
    sent = [(r.operation, r.status) for r in faulty.raw_requests.all() if r.operation in ("BlobBatch", "DeleteBlob")]
    assert sent[0] == ("DeleteBlob", 404) and sent[1] == ("BlobBatch", 400)
    assert sorted(sent[2:]) == [("DeleteBlob", 202)] * 3
