"""Faults the embedded S3 can inject, chosen per operation and key pattern, seeded and logged.

Kinds:

- ``slowdown``: answer 503 SlowDown without applying the request (throttling).
- ``server-error``: answer 500 InternalError without applying the request.
- ``reset``: drop the connection without applying the request or answering.
- ``lost-response``: apply the request, then drop the connection without answering (the ambiguous outcome).
- ``error-after-apply``: apply the request, then answer 500 InternalError (also ambiguous).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

FaultKind = Literal["slowdown", "server-error", "reset", "lost-response", "error-after-apply"]
KINDS: tuple[str, ...] = ("slowdown", "server-error", "reset", "lost-response", "error-after-apply")
APPLIES_REQUEST = frozenset({"lost-response", "error-after-apply"})


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


@dataclass(frozen=True)
class Injection:
    """One fault injected: which kind, into which request."""

    kind: str
    operation: str
    bucket: str
    key: str


class FaultPlan:
    """The faults in force, a seeded random source, and the log of what was injected."""

    def __init__(self, faults: list[Fault] | None = None, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._faults = list(faults or [])
        self._random = random.Random(seed)
        self.injected: list[Injection] = []

    def add(self, fault: Fault) -> Fault:
        """Put ``fault`` in force; returns it."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every fault (the log of injections stays)."""
        with self._lock:
            self._faults.clear()

    def reset(self) -> None:
        """Remove every fault and forget every injection."""
        with self._lock:
            self._faults.clear()
            self.injected.clear()

    def pick(self, operation: str, bucket: str, key: str) -> Fault | None:
        """The fault to inject into this request, if any; records the injection."""
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
