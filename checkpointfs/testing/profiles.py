"""Named fault profiles: the ones the fault matrix, the log tests and the reliability campaigns run under, and
that users can name instead of writing a spec (``FaultPlan.from_spec("lost-responses")``,
``checkpointfs s3-server --faults mixed``)."""

from __future__ import annotations

from collections.abc import Callable

from .consistency import ConsistencyLag
from .faults import Fault, FaultPlan, Latency

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
