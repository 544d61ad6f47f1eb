"""The fault matrix: every conformance case, run against the S3 managers under each kind of fault, with retries
on. What must hold throughout is what the conformance suite asserts: no partial object visible, no multipart
upload left open, no false "already exists" from our own lost-response retry, no false success."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import LAG_S, PROFILES
from tests.conformance.cases import SMALL_PART, Case
from tests.conformance.suite import ContractSuite

pytestmark = pytest.mark.slow  # minutes (about 410 s on the 2-core machine): `make check` leaves it out

RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05, max_elapsed_s=30)
STRATEGIES = ("abort", "close-then-delete")


MATRIX_PROFILES = [name for name in PROFILES if name != "mixed"]  # one fault kind each


@pytest.fixture(params=[f"direct-{s}|{p}" for s in STRATEGIES for p in MATRIX_PROFILES])
def case(request: pytest.FixtureRequest, embedded_s3: EmbeddedS3, tmp_path: Path) -> Case:
    implementation, profile = request.param.split("|")
    manager = DirectWriteManager(**embedded_s3.manager_options(), part_size=SMALL_PART,
                                 abort_strategy=implementation.removeprefix("direct-"), retry=RETRY,
                                 consistency_window_s=10 * LAG_S)
    request.addfinalizer(manager.close)
    plan = PROFILES[profile](len(profile))
    embedded_s3.faults = plan

    def report() -> None:
        print(f"{request.param}: injected {plan.kinds_injected()}")

    request.addfinalizer(report)
    return Case(request.param, manager, embedded_s3.uri(f"matrix/{uuid.uuid4().hex}"), server=embedded_s3,
                part_size=SMALL_PART, no_cost_promise="request counts are checked without faults",
                conditional_writes=True, store_check=True)


class TestContractUnderFaults(ContractSuite):
    """The conformance suite against the S3 managers, under each fault profile of the ``case`` fixture below."""
