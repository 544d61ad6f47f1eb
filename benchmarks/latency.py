"""The latency model every benchmark that models a distant store uses (docs/benchmarks.md), defined once."""

from __future__ import annotations

from checkpointfs.testing.faults import Latency

KIB, MIB = 1024, 1024 * 1024
LATENCY = Latency(per_request_s=0.020, bandwidth_bytes_per_s=200 * MIB, copy_bytes_per_s=100 * MIB)
"""The "distant store": 20 ms a request, 200 MiB/s each way, server-side copies at 100 MiB/s."""
