"""The Kafka fixture's cluster id (tests/backends/kafka.py), without a broker: an id `kafka-storage format` parses."""

from __future__ import annotations

import base64
import uuid

import pytest

from tests.backends import kafka


def test_an_id_that_would_start_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8 encodes to '-' as the first URL-safe base64 character: argparse read such an id as an option, and
    # `kafka-storage format -t -…` failed one start in 64 (CI, stop 32).
    dashed, plain = uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x10" + bytes(15))
    draws = iter([dashed, plain])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))
    assert base64.urlsafe_b64encode(dashed.bytes).decode().startswith("-")
    assert kafka.new_cluster_id() == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")


def test_ids_are_22_url_safe_characters_never_led_by_a_dash() -> None:
    ids = {kafka.new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert all(len(i) == 22 and set(i) <= alphabet and not i.startswith("-") for i in ids)
