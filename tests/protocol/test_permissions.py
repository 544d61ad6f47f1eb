"""The permissions table of protocol.json and checkpointfs.protocol.permissions, against the golden cases the shim's
PermissionsSuite runs too (tests/protocol/golden_permissions.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import protocol
from checkpointfs.protocol import permissions
from checkpointfs.store.check import missing_head_verdict
from checkpointfs.store.errors import error_for

GOLDEN = json.loads((Path(__file__).parent / "golden_permissions.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", GOLDEN["needs"], ids=lambda c: f"{c['family']}-{c['request']}")
def test_needs(case: dict[str, str]) -> None:
    assert permissions.needs(case["family"], case["request"], case["bucket"]) == case["needs"]


@pytest.mark.parametrize("case", GOLDEN["families"], ids=lambda c: str(c["uri"]))
def test_family_of(case: dict[str, Any]) -> None:
    assert permissions.family_of(case["uri"]) == case["family"]


def test_every_family_names_every_required_request() -> None:
    for family in permissions.FAMILIES:
        for request in permissions.REQUIRED:
            assert permissions.actions(family, request), (family, request)


def test_a_refused_probe_names_list_bucket_and_the_bucket() -> None:
    """On S3 a HEAD of a missing key without s3:ListBucket answers 403: the error says so, and is no conflict."""
    error = error_for(protocol.Answer(status=403, code="403"), "s3://ck-bucket/q/offsets/1", "head_object")
    assert type(error).__name__ == "AccessDeniedError"
    assert "s3:GetObject on bucket 'ck-bucket'" in str(error) and "s3:ListBucket" in str(error)


@pytest.mark.parametrize("case", GOLDEN["missing_head"], ids=lambda c: f"{c['status']}-{c['code'] or 'none'}")
def test_missing_head_verdict(case: dict[str, Any]) -> None:
    """The store check's verdict on the head of its missing canary key: PermissionsSuite runs the same cases."""
    answer_class = protocol.classify(protocol.Answer(status=case["status"], code=case["code"]))
    assert missing_head_verdict(answer_class) == case["verdict"]


def test_the_minimal_policy_in_the_docs() -> None:
    """docs/operations.md's minimal S3 policy is the document the MinIO tests grant (harness.servers.least_privilege),
    and it grants every S3 action of the permissions table."""
    from harness.servers.least_privilege import FULL, policy_document

    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    block = text.split("test_the_minimal_policy_in_the_docs -->\n```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(block) == policy_document("my-checkpoints", FULL)
    table = {a for request in (*permissions.REQUESTS, "head_missing") for a in permissions.actions("s3", request)}
    assert table == set(FULL)
