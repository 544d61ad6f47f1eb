"""S3's request-rate limits per partitioned prefix, for the embedded S3: beyond a prefix's rate, requests are
answered 503 SlowDown and not applied, as S3 answers while it repartitions (about 3,500 PUT/COPY/POST/DELETE and
5,500 GET/HEAD per second per prefix, by AWS's documentation).

A *prefix* here is the bucket and the first ``prefix_depth`` directories of the key (``bucket/ckpt/`` at depth 1
for ``ckpt/state/0/1.delta``; ``bucket/`` for a key with no directory). Each prefix has two token buckets, writes
and reads, each filled at its rate and holding at most ``burst_s`` seconds of it: a request takes one token, or is
throttled when none is left. S3's real partitioning follows the load and is not observable; a fixed depth makes a
test's limit exact."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

READ_OPERATIONS = frozenset({"GetObject", "HeadObject", "ListObjectsV2", "ListObjects", "HeadBucket",
                             "ListMultipartUploads", "ListParts", "GetObjectTagging"})
"""Operations counted against a prefix's read rate; every other operation counts against its write rate."""


@dataclass(frozen=True)
class RateLimit:
    """Requests per second allowed per prefix: ``writes_per_s`` (PUT, COPY, POST, DELETE), ``reads_per_s`` (GET,
    HEAD, LIST); ``prefix_depth`` key segments make a prefix; a bucket holds ``burst_s`` seconds of its rate."""

    writes_per_s: float = 3500.0
    reads_per_s: float = 5500.0
    prefix_depth: int = 1
    burst_s: float = 1.0

    def __post_init__(self) -> None:
        if self.writes_per_s <= 0 or self.reads_per_s <= 0 or self.burst_s <= 0:
            raise ValueError("rate limits and burst must be positive")
        if self.prefix_depth < 0:
            raise ValueError("prefix_depth must not be negative")

    def prefix(self, bucket: str, key: str) -> str:
        """The prefix a request on ``bucket/key`` counts against: the bucket and at most ``prefix_depth`` of the
        key's directories (a listing's key is its prefix: its directories are those before its last ``/``)."""
        directories = key.split("/")[:-1][:self.prefix_depth]
        return f"{bucket}/" + "".join(d + "/" for d in directories)


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class PrefixThrottle:
    """The token buckets of a :class:`RateLimit`, by prefix; :meth:`admit` takes a token or says the request is
    throttled. ``throttled`` counts the requests refused, by prefix."""

    limit: RateLimit
    clock: Callable[[], float] = time.monotonic
    throttled: dict[str, int] = field(default_factory=dict)
    _buckets: dict[tuple[str, bool], _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, operation: str, bucket: str, key: str) -> bool:
        """Whether the request may be served now (a token taken); False: answer 503 SlowDown."""
        reading = operation in READ_OPERATIONS
        rate = self.limit.reads_per_s if reading else self.limit.writes_per_s
        capacity = max(1.0, rate * self.limit.burst_s)
        prefix = self.limit.prefix(bucket, key)
        now = self.clock()
        with self._lock:
            state = self._buckets.get((prefix, reading))
            if state is None:
                state = self._buckets[(prefix, reading)] = _Bucket(capacity, now)
            state.tokens = min(capacity, state.tokens + (now - state.updated) * rate)
            state.updated = now
            if state.tokens >= 1.0:
                state.tokens -= 1.0
                return True
            self.throttled[prefix] = self.throttled.get(prefix, 0) + 1
            return False
