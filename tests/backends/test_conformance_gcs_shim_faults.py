"""The conformance suite for the JVM shim on ``gs://`` under each fault profile the recording proxy in front of
fake-gcs-server carries (the matrix tests/gcs/test_conformance_gcs_faults.py runs for the Python manager, with the
same faults on the same requests), plus the latency model.

The shim's uploads go through Google's connector, which retries each HTTP request itself (``fs.gs.http.max.retry``,
set high here for a store that fails this often), inside the shim's own loop, which settles an upload whose answer
was lost by the write id. What must hold is what the suite asserts: no partial object visible, no false "already
exists" from a retry that met its own earlier write, no false success, nothing lost. GCS is strongly consistent, so
there are no lag profiles."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing.faults import PROFILES, FaultPlan
from harness.servers.fake_gcs import FakeGcsServer, GcsConnector, connector_jar_path
from harness.servers.recording_proxy import RecordingProxy
from tests.conformance.cases import Case
from tests.conformance.suite import ContractSuite
from tests.conftest import gcs_connector_jars
from tests.gcs.test_conformance_gcs_faults import GCS_PROFILES

from .test_conformance_gcs_shim import BUCKET, CHUNK, ProxySide
from .test_conformance_gcs_shim import shim_gcs_proxy as shim_gcs_proxy  # the module-scoped fixture

pytestmark = [pytest.mark.spark, pytest.mark.gcs]

FAULT_PROFILES = [*GCS_PROFILES, "latency"]


def plan_for(profile: str) -> FaultPlan:
    """A fresh plan of ``profile``: the GCS matrix's faults, or the latency model's profile."""
    if profile in GCS_PROFILES:
        return FaultPlan([dataclasses.replace(fault) for fault in GCS_PROFILES[profile]], seed=len(profile))
    return PROFILES[profile](len(profile))


IN_MAKE_TEST = "lost-responses"
"""The profile ``make test`` runs (answers lost after the request landed: the shim's retry meets its own object and
the write id settles it); the others are ``extended``, for the budget (tests/gcs/test_conformance_gcs_faults.py runs
every profile against the same store for the Python manager in make test)."""



def outside_gate(profile: str) -> pytest.MarkDecorator:
    """`extended`: the gate runs the same tests under IN_MAKE_TEST's profile."""
    return pytest.mark.extended(covered_by=f"|{profile} -> |{IN_MAKE_TEST}")

@pytest.fixture(params=[pytest.param(f"jvm-shim|gcs|{p}", marks=() if p == IN_MAKE_TEST else outside_gate(p))
                        for p in FAULT_PROFILES])
def case(request: pytest.FixtureRequest, fake_gcs_server: FakeGcsServer, gcs_connector: GcsConnector,
         shim_gcs_proxy: RecordingProxy) -> Iterator[Case]:
    if not gcs_connector_jars():
        pytest.skip("Google's GCS connector was not cached when the session's Spark started "
                    f"({connector_jar_path(gcs_connector)}): `make backends` fetches it")
    profile = str(request.param).rsplit("|", 1)[1]
    root = f"gs://{BUCKET}/conformance-faults/{uuid.uuid4().hex}"
    conf = fake_gcs_server.hadoop_conf(gcs_connector)
    conf["fs.gs.storage.root.url"] = shim_gcs_proxy.endpoint_url + "/"
    conf["fs.gs.outputstream.upload.chunk.size"] = str(CHUNK)
    conf["fs.gs.http.max.retry"] = "12"
    conf["fs.gs.impl.disable.cache"] = "true"  # an instance of its own, so that these settings reach it
    manager = JvmCheckpointFileManager(request.getfixturevalue("spark"), root, hadoop_conf=conf)
    plan = plan_for(profile)
    shim_gcs_proxy.faults = plan
    case = Case(str(request.param), manager, root, part_size=CHUNK, last_part_with_completion=True,
                no_cost_promise="request counts are checked without faults", conditional_writes=True,
                store_check=True)
    case.server = ProxySide(shim_gcs_proxy, fake_gcs_server)  # type: ignore[assignment]
    yield case
    print(f"{request.param}: injected {plan.kinds_injected()}")
    shim_gcs_proxy.faults = None
    manager.close()


class TestShimOnGcsUnderFaults(ContractSuite):
    """docs/contract.md for the shim on gs:// under each fault profile of ``case`` above."""
