"""Checkpoint tooling: ``checkpointfs inspect`` (where is my query?), ``verify`` (is this checkpoint intact?),
``doctor`` (is my object store safe for direct writes?) and ``repair`` (the way out of Spark's format-v2 restart
failure). docs/tools.md shows each on a real Spark checkpoint."""

from .doctor import DoctorReport, run_doctor
from .inspect import inspect_checkpoint
from .repair import RepairReport, repair_checkpoint
from .store import Location, open_location, store_error
from .verify import VerifyReport, verify_checkpoint

__all__ = [
    "DoctorReport",
    "Location",
    "RepairReport",
    "VerifyReport",
    "inspect_checkpoint",
    "open_location",
    "repair_checkpoint",
    "run_doctor",
    "store_error",
    "verify_checkpoint",
]
