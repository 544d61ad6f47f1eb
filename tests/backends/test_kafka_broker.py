"""The Kafka fixture itself (tests/backends/kafka.py), without Spark: topics, a produce and a consume round trip."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.kafka


def test_records_round_trip(kafka_broker: Any) -> None:
    topic = kafka_broker.create_topic(f"fixture-{uuid.uuid4().hex[:8]}", partitions=2)
    values = [f'{{"id": {i}}}' for i in range(25)]
    assert kafka_broker.produce(topic, values) == len(values)
    assert sorted(kafka_broker.consume(topic)) == sorted(values)
    assert kafka_broker.running and kafka_broker.bootstrap.startswith("127.0.0.1:")
