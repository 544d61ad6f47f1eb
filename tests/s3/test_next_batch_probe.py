"""Rule 3 of the probe rule (docs/contract.md): the next batch of a log this manager writes is absent with no
request, in mode ``log-order`` only and only while the store check is on."""

from __future__ import annotations

import pytest

from checkpointfs.direct.probes import previous_batches
from checkpointfs.testing import EmbeddedS3

from .managers import manager, put


def test_previous_batches() -> None:
    assert previous_batches("8") == ("7", "7.compact")
    assert previous_batches("10.compact") == ("9", "9.compact")
    assert previous_batches("0") == () and previous_batches("0.compact") == ()
    assert previous_batches("8.delta") == () and previous_batches("metadata") == ()


@pytest.mark.parametrize(("options", "heads"), [
    ({}, 0),
    ({"exists_probe": "file-names"}, 1),
    ({"exists_probe": "full"}, 1),  # and a listing
    ({"store_check": False}, 1),
])
def test_the_next_batch_is_answered_from_memory_only_in_log_order_with_the_store_check(
    s3: EmbeddedS3, options: dict[str, object], heads: int
) -> None:
    m = manager(s3, checked=options.get("store_check", True) is not False, root=s3.uri("ck"), **options)
    put(m, s3.uri("ck/offsets/4"), b"v1\n{}")
    s3.requests.clear()
    assert m.exists(s3.uri("ck/offsets/5")) is False
    assert s3.requests.counts().get("HeadObject", 0) == heads
    assert m.metrics["exists.requests"] == len(s3.requests.all())
