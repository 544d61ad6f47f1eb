"""Checkpoint tooling: ``checkpointfs inspect`` (where is my query?), ``verify`` (is this checkpoint intact?) and
``doctor`` (is my object store safe for direct writes?). docs/tools.md shows each on a real Spark checkpoint."""

from .doctor import DoctorReport, run_doctor
from .inspect import inspect_checkpoint
from .store import Location, open_location, store_error
from .verify import VerifyReport, verify_checkpoint

__all__ = [
    "DoctorReport",
    "Location",
    "VerifyReport",
    "inspect_checkpoint",
    "open_location",
    "run_doctor",
    "store_error",
    "verify_checkpoint",
]
