"""Query shapes that only the JVM API can express (harness/jvm/.../Shapes.java, compiled against the running line's
jars by :mod:`harness.jvm_shapes`), checkpointing through the shim on the embedded S3; each driver (harness.job) is
SIGKILLed at a checkpoint write and restarted on the same checkpoint.

- ``flatMapGroupsWithState`` (Java; pyspark has only the pandas variant) runs among the query shapes of
  test_query_shapes.py, in their shared driver.
- Real-time mode (``Trigger.RealTime``, Spark 4.1 on; pyspark 4.1 has no trigger for it): Kafka topic to Kafka topic,
  killed once the offset log entry of batch 1 is written, which real-time mode writes at the end of the batch, just
  before its commit; on restart Spark drops offset log entries beyond the commit log (``purgeAfter``). Kafka's sink is
  at-least-once: every input record is in the output topic, duplicates are counted.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any

import pytest

from checkpointfs.testing import Request

from . import test_kafka
from .conftest import Pipeline
from .probes import RECORD_ARGS
from .test_kafka import _assert_written_directly

pytestmark = pytest.mark.spark

kafka_jars = test_kafka.kafka_jars  # the line's Kafka connector jars (a module fixture)

REAL_TIME_BATCH = "5 seconds"


def _is_put(request: Request, key: str) -> bool:
    return request.operation == "PutObject" and request.key == key and request.status == 200


def _line() -> tuple[int, int]:
    """The running pyspark's (major, minor); (0, 0) without pyspark."""
    try:
        import pyspark
    except ImportError:
        return 0, 0
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def _offset_log_records(pipeline: Pipeline, key: str) -> int:
    """How many records of the (one) Kafka source an offset log entry's end offsets cover: its last line is the
    source's offsets, ``{"topic": {"partition": offset}}``."""
    client = pipeline.server.client(admin=True)
    body = client.get_object(Bucket=pipeline.server.buckets[0], Key=key)["Body"].read().decode()
    offsets = json.loads(body.strip().splitlines()[-1])
    return sum(int(offset) for partitions in offsets.values() for offset in partitions.values())


@pytest.mark.kafka
@pytest.mark.skipif(_line() < (4, 1), reason="real-time mode (Trigger.RealTime) came with Spark 4.1")
def test_real_time_kafka_to_kafka_no_loss_across_kill(minio_pipeline: Pipeline, kafka_broker: Any,
                                                        kafka_jars: str) -> None:
    """A real-time mode query (5 s batches) from a 2-partition topic to another; 30 records are produced, the driver
    is killed as soon as the offset log entry of batch 1 is written (real-time mode writes it when the batch ends,
    then the commit), restarted, and 30 more records are produced; the job stops once its committed source offsets
    cover all 60. Every record is in the output topic (at least once, Kafka's sink promise), and every checkpoint
    file was written directly (write id, no COPY)."""
    pipeline = minio_pipeline  # the checkpoint on MinIO
    half = 30
    source = kafka_broker.create_topic(f"rt-in-{uuid.uuid4().hex[:8]}", partitions=2)
    sink = kafka_broker.create_topic(f"rt-out-{uuid.uuid4().hex[:8]}", partitions=2)
    records = [test_kafka._record(i) for i in range(2 * half)]
    assert kafka_broker.produce(source, records[:half]) == half
    cp = pipeline.checkpoint_key
    extra = [*RECORD_ARGS, "--kafka-bootstrap", kafka_broker.bootstrap, "--extra-jars", kafka_jars,
             "--source-topic", source, "--sink-topic", sink, "--real-time", REAL_TIME_BATCH,
             "--until-source-records", str(2 * half)]

    job = pipeline.start(*extra)
    pipeline.kill_when(job, lambda r: _is_put(r, f"{cp}/offsets/1"))
    at_kill = set(pipeline.checkpoint_keys())
    restart_from = len(pipeline.server.requests)
    job = pipeline.start(*extra)
    assert kafka_broker.produce(source, records[half:]) == half
    outcome = job.wait()
    assert outcome["status"] == "ok", job.tail()

    ids = [int(json.loads(value)["id"]) for value in kafka_broker.consume(sink)]
    counts = Counter(ids)
    assert sorted(counts) == list(range(2 * half)), sorted(counts)
    duplicates = sum(n - 1 for n in counts.values())
    keys = _assert_written_directly(pipeline)
    # Batch 0 is committed in the first run: only records after its end offsets are read again on restart, and
    # only those batch 1 had sent before the kill (of the first 30) come twice.
    committed = _offset_log_records(pipeline, f"{cp}/offsets/0")
    assert duplicates <= half - committed, (duplicates, committed)
    restart_ops = Counter((r.operation, r.key.rsplit("/", 2)[-2]) for r in pipeline.server.requests.all()[restart_from:]
                          if r.key.startswith(cp + "/") and r.operation in ("PutObject", "DeleteObject"))
    print(f"real-time: at the kill commits/1 {'was' if f'{cp}/commits/1' in at_kill else 'was not'} written; "
          f"restart's writes {dict(restart_ops)}; batch 0 committed {committed} records; {len(ids)} output records, "
          f"{duplicates} duplicates; "
          f"outcome {outcome}; checkpoint {sorted(k[len(cp) + 1:] for k in keys)}")
    assert f"{cp}/offsets/1" in keys and f"{cp}/commits/1" in keys, keys
