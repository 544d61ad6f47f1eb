"""The fault matrix: every conformance case, run against the S3 managers under each kind of fault, with retries
on. What must hold throughout is what the conformance suite asserts: no partial object visible, no multipart
upload left open, no false "already exists" from our own lost-response retry, no false success."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan
from checkpointfs.testing.consistency import ConsistencyLag
from checkpointfs.testing.faults import Latency
from tests.conformance import test_contract
from tests.conformance.cases import SMALL_PART, Case

# Collect the conformance tests here too, against the `case` fixture below.
globals().update({name: fn for name, fn in vars(test_contract).items() if name.startswith("test_")})

RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05, max_elapsed_s=30)
LAG_S = 0.3

PROFILES: dict[str, Callable[[], FaultPlan]] = {
    "throttling": lambda: FaultPlan([Fault("slowdown", probability=0.25)], seed=1),
    "server-errors": lambda: FaultPlan([Fault("server-error", probability=0.2)], seed=2),
    "resets": lambda: FaultPlan([Fault("reset", probability=0.2)], seed=3),
    "lost-responses": lambda: FaultPlan([Fault("lost-response", probability=0.2)], seed=4),
    "errors-after-apply": lambda: FaultPlan([Fault("error-after-apply", probability=0.2)], seed=5),
    "truncated-bodies": lambda: FaultPlan(
        [Fault("truncate", frozenset({"GetObject", "ListObjectsV2"}), probability=0.3)], seed=6),
    "list-lag": lambda: FaultPlan(consistency=ConsistencyLag(list_hides_new_s=LAG_S, list_keeps_deleted_s=LAG_S)),
    "read-lag": lambda: FaultPlan(consistency=ConsistencyLag(read_new_404_s=LAG_S, read_overwritten_stale_s=LAG_S)),
    "latency": lambda: FaultPlan(latency=Latency(per_request_s=0.003, bandwidth_bytes_per_s=50_000_000)),
}
STRATEGIES = ("abort", "close-then-delete")


@pytest.fixture(params=[f"direct-{s}|{p}" for s in STRATEGIES for p in PROFILES])
def case(request: pytest.FixtureRequest, embedded_s3: EmbeddedS3, tmp_path: Path) -> Case:
    implementation, profile = request.param.split("|")
    manager = DirectWriteManager(**embedded_s3.manager_options(), part_size=SMALL_PART,
                                 abort_strategy=implementation.removeprefix("direct-"), retry=RETRY,
                                 consistency_window_s=10 * LAG_S)
    request.addfinalizer(manager.close)
    plan = PROFILES[profile]()
    embedded_s3.faults = plan

    def report() -> None:
        print(f"{request.param}: injected {plan.kinds_injected()}")

    request.addfinalizer(report)
    return Case(request.param, manager, embedded_s3.uri(f"matrix/{uuid.uuid4().hex}"), server=embedded_s3,
                part_size=SMALL_PART, no_cost_promise="request counts are checked without faults",
                close_then_delete=implementation.endswith("close-then-delete"))
