"""Named fault profiles (kept in :mod:`checkpointfs.testing.faults`, next to the plans they make; named here too)."""

from __future__ import annotations

from .faults import LAG_S, PROFILES, profile

__all__ = ["LAG_S", "PROFILES", "profile"]
