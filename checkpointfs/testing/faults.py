"""Faults the embedded S3 can inject, chosen per operation and key pattern, seeded and logged.

Kinds:

- ``slowdown``: answer 503 SlowDown without applying the request (throttling).
- ``server-error``: answer 500 InternalError without applying the request.
- ``precondition-failed``: answer 412 PreconditionFailed without applying the request, whether or not the key
  exists: what a conditional write sees when another writer held the key at that moment and has removed it since.
- ``reset``: drop the connection without applying the request or answering.
- ``lost-response``: apply the request, then drop the connection without answering (the ambiguous outcome).
- ``error-after-apply``: apply the request, then answer 500 InternalError (also ambiguous).
- ``truncate``: apply the request, send the answer's headers and half its body, then drop the connection.

A plan also carries an optional :class:`~checkpointfs.testing.consistency.ConsistencyLag` (eventual consistency),
an optional :class:`Latency` (a distant store), an optional
:class:`~checkpointfs.testing.rate_limit.RateLimit` (S3's per-prefix request rates, answered 503 SlowDown beyond
them) and ``ignore_conditional_writes`` (a store that drops ``If-None-Match``
and ``If-Match``, as S3 did before August 2024), and can be read from a JSON spec (:meth:`FaultPlan.from_spec`).

Named profiles (:data:`PROFILES`) are the plans the fault matrix, the log tests and the reliability campaigns run
under, and that users can name instead of writing a spec (``FaultPlan.from_spec("lost-responses")``,
``checkpointfs s3-server --faults mixed``).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .consistency import ConsistencyLag
from .rate_limit import PrefixThrottle, RateLimit


@dataclass(frozen=True)
class Latency:
    """A distant store: every request waits ``per_request_s``, its request and answer bodies move at
    ``bandwidth_bytes_per_s`` (None: unlimited), and a server-side copy moves the source's bytes at
    ``copy_bytes_per_s``."""

    per_request_s: float = 0.0
    bandwidth_bytes_per_s: float | None = None
    copy_bytes_per_s: float | None = None
    """The rate of a server-side copy (CopyObject, UploadPartCopy) of the source's bytes; None: instant."""

    def __post_init__(self) -> None:
        rates = (self.bandwidth_bytes_per_s, self.copy_bytes_per_s)
        if self.per_request_s < 0 or any(r is not None and r <= 0 for r in rates):
            raise ValueError("latency must not be negative and rates must be positive")

    def transfer_s(self, size: int) -> float:
        """Seconds to move ``size`` bytes."""
        return size / self.bandwidth_bytes_per_s if self.bandwidth_bytes_per_s else 0.0

FaultKind = Literal["slowdown", "server-error", "precondition-failed", "reset", "lost-response",
                    "error-after-apply", "truncate"]
KINDS: tuple[str, ...] = ("slowdown", "server-error", "precondition-failed", "reset", "lost-response",
                          "error-after-apply", "truncate")
REFUSALS = frozenset({"slowdown", "server-error", "precondition-failed", "reset"})
"""Kinds that answer (or drop the connection) without applying the request."""
APPLIES_REQUEST = frozenset({"lost-response", "error-after-apply", "truncate"})
"""Kinds that apply the request, then spoil the answer."""


@dataclass
class Fault:
    """Inject ``kind`` into requests of ``operations`` (S3 operation names; empty means all) on keys matching
    ``key_pattern`` (a regex searched in ``bucket/key``), with ``probability``, at most ``times`` times.
    ``then``, if given, runs in the server right after each injection (before the faulty answer is sent): a test
    uses it to stage what happens meanwhile, such as another writer creating the key."""

    kind: FaultKind
    operations: frozenset[str] = frozenset()
    key_pattern: str = ""
    probability: float = 1.0
    times: int | None = None
    then: Callable[[], None] | None = None
    injected: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"fault probability must be within [0, 1], got {self.probability}")
        self.operations = frozenset(self.operations)
        self._regex = re.compile(self.key_pattern)

    def matches(self, operation: str, bucket: str, key: str) -> bool:
        """Whether this fault applies to the request (before the dice)."""
        if self.times is not None and self.injected >= self.times:
            return False
        if self.operations and operation not in self.operations:
            return False
        return bool(self._regex.search(f"{bucket}/{key}"))


_RATE_LIMITED = Fault("slowdown")
"""What a request beyond the rate limit gets: 503 SlowDown, not applied (never counted as a fault's injection)."""


@dataclass(frozen=True)
class Injection:
    """One fault injected: which kind, into which request."""

    kind: str
    operation: str
    bucket: str
    key: str


class FaultPlan:
    """The faults in force, a seeded random source, and the log of what was injected."""

    def __init__(self, faults: list[Fault] | None = None, seed: int = 0, *,
                 consistency: ConsistencyLag | None = None, latency: Latency | None = None,
                 rate_limit: RateLimit | None = None, ignore_conditional_writes: bool = False) -> None:
        self._lock = threading.Lock()
        self.throttle = PrefixThrottle(rate_limit) if rate_limit is not None else None
        """The per-prefix rate limit in force, with its count of throttled requests (None: none)."""
        self.ignore_conditional_writes = ignore_conditional_writes
        self._faults = list(faults or [])
        self._random = random.Random(seed)
        self.seed = seed
        self.consistency = consistency
        self.latency = latency
        self.injected: list[Injection] = []

    @classmethod
    def from_spec(cls, spec: str | dict[str, Any]) -> FaultPlan:
        """A plan from a profile's name (:data:`PROFILES`) or a JSON document (a dict, a JSON
        string, or the path of a JSON file)::

            {"seed": 1,
             "faults": [{"kind": "slowdown", "operations": ["PutObject"], "probability": 0.1},
                        {"kind": "lost-response", "operations": ["CompleteMultipartUpload"], "times": 1}],
             "consistency": {"list_hides_new_s": 2, "read_new_404_s": 0.5},
             "latency": {"per_request_s": 0.02, "bandwidth_bytes_per_s": 50000000},
             "rate_limit": {"writes_per_s": 100, "reads_per_s": 200, "prefix_depth": 1},
             "ignore_conditional_writes": false}
        """
        if isinstance(spec, str) and not spec.lstrip().startswith("{") and not Path(spec).exists():
            if spec.endswith(".json") or "/" in spec:
                raise ValueError(f"fault spec file {spec} does not exist (nor is it a profile: "
                                 f"{', '.join(PROFILES)})")
            return profile(spec)
        if isinstance(spec, str):
            text = Path(spec).read_text() if not spec.lstrip().startswith("{") else spec
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"fault spec is not valid JSON: {e}") from None
        if not isinstance(spec, dict):
            raise ValueError("a fault spec is a JSON object")
        unknown = set(spec) - {"seed", "faults", "consistency", "latency", "rate_limit", "ignore_conditional_writes"}
        if unknown:
            raise ValueError(f"unknown fault spec fields: {', '.join(sorted(unknown))}")
        try:
            faults = [Fault(**{**f, "operations": frozenset(f.get("operations", ()))}) for f in spec.get("faults", [])]
            consistency = ConsistencyLag(**spec["consistency"]) if "consistency" in spec else None
            latency = Latency(**spec["latency"]) if "latency" in spec else None
            rate_limit = RateLimit(**spec["rate_limit"]) if "rate_limit" in spec else None
        except TypeError as e:
            raise ValueError(f"bad fault spec: {e}") from None
        return cls(faults, seed=int(spec.get("seed", 0)), consistency=consistency, latency=latency,
                   rate_limit=rate_limit, ignore_conditional_writes=bool(spec.get("ignore_conditional_writes", False)))

    def record(self, kind: str, operation: str, bucket: str, key: str) -> None:
        """Log an injection made outside :meth:`pick` (consistency lags)."""
        with self._lock:
            self.injected.append(Injection(kind, operation, bucket, key))

    @property
    def faults(self) -> list[Fault]:
        """The faults in force, in the order they are checked (a copy)."""
        with self._lock:
            return list(self._faults)

    def add(self, fault: Fault, *, first: bool = False) -> Fault:
        """Put ``fault`` in force, after the faults already in force (``first``: before them, so that it is
        checked first); returns it."""
        with self._lock:
            self._faults.insert(0 if first else len(self._faults), fault)
        return fault

    def clear(self) -> None:
        """Remove every fault (the log of injections stays)."""
        with self._lock:
            self._faults.clear()

    def reset(self) -> None:
        """Remove every fault, lag and latency, and forget every injection."""
        with self._lock:
            self._faults.clear()
            self.injected.clear()
            self.consistency = None
            self.latency = None
            self.throttle = None
            self.ignore_conditional_writes = False

    def limit_rate(self, rate_limit: RateLimit | None, clock: Callable[[], float] = time.monotonic) -> None:
        """Put ``rate_limit`` in force (None: lift it), with fresh token buckets filled by ``clock``'s seconds (the
        embedded S3's ``clock.monotonic``, for a test that moves time)."""
        with self._lock:
            self.throttle = PrefixThrottle(rate_limit, clock) if rate_limit is not None else None

    def pick(self, operation: str, bucket: str, key: str) -> Fault | None:
        """The fault to inject into this request, if any; records the injection. A request beyond the rate
        limit's prefix rate is answered as ``slowdown`` (recorded as ``rate-limited``), before any other fault."""
        throttle = self.throttle
        if throttle is not None and not throttle.admit(operation, bucket, key):
            with self._lock:
                self.injected.append(Injection("rate-limited", operation, bucket, key))
            return _RATE_LIMITED
        with self._lock:
            for fault in self._faults:
                if fault.matches(operation, bucket, key) and self._random.random() < fault.probability:
                    fault.injected += 1
                    self.injected.append(Injection(fault.kind, operation, bucket, key))
                    return fault
        return None

    def kinds_injected(self) -> dict[str, int]:
        """How many faults of each kind were injected so far."""
        with self._lock:
            counts: dict[str, int] = {}
            for injection in self.injected:
                counts[injection.kind] = counts.get(injection.kind, 0) + 1
            return counts


# -- named profiles ----------------------------------------------------------------------------------------------------
LAG_S = 0.3
"""The consistency lag of the lag profiles, in seconds."""


def _mixed(seed: int) -> FaultPlan:
    return FaultPlan(
        [Fault("slowdown", probability=0.05), Fault("server-error", probability=0.03),
         Fault("lost-response", probability=0.03), Fault("reset", probability=0.02),
         Fault("truncate", frozenset({"GetObject"}), probability=0.05)],
        seed=seed,
        consistency=ConsistencyLag(list_hides_new_s=LAG_S, list_keeps_deleted_s=LAG_S, read_new_404_s=LAG_S,
                                   read_overwritten_stale_s=LAG_S))


PROFILES: dict[str, Callable[[int], FaultPlan]] = {
    "throttling": lambda seed: FaultPlan([Fault("slowdown", probability=0.25)], seed=seed),
    "server-errors": lambda seed: FaultPlan([Fault("server-error", probability=0.2)], seed=seed),
    "resets": lambda seed: FaultPlan([Fault("reset", probability=0.2)], seed=seed),
    "lost-responses": lambda seed: FaultPlan([Fault("lost-response", probability=0.2)], seed=seed),
    "errors-after-apply": lambda seed: FaultPlan([Fault("error-after-apply", probability=0.2)], seed=seed),
    "truncated-bodies": lambda seed: FaultPlan(
        [Fault("truncate", frozenset({"GetObject", "ListObjectsV2"}), probability=0.3)], seed=seed),
    "list-lag": lambda seed: FaultPlan(
        seed=seed, consistency=ConsistencyLag(list_hides_new_s=LAG_S, list_keeps_deleted_s=LAG_S)),
    "read-lag": lambda seed: FaultPlan(
        seed=seed, consistency=ConsistencyLag(read_new_404_s=LAG_S, read_overwritten_stale_s=LAG_S)),
    "latency": lambda seed: FaultPlan(seed=seed, latency=Latency(per_request_s=0.003,
                                                                 bandwidth_bytes_per_s=50_000_000)),
    "mixed": _mixed,
}
"""Profile name -> a fresh plan for a seed. Error rates are per request; lags are ``LAG_S``."""


def profile(name: str, seed: int = 0) -> FaultPlan:
    """A fresh plan of the named profile; ValueError naming the known ones for an unknown name."""
    try:
        return PROFILES[name](seed)
    except KeyError:
        raise ValueError(f"unknown fault profile {name!r}; known: {', '.join(PROFILES)}") from None
