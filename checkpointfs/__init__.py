"""checkpointfs: streaming checkpoints and manifest logs on object stores, without the rename dance.

The object store names (:class:`DirectWriteManager`, :class:`RetryPolicy`) are loaded on first use, so that importing
checkpointfs, or a part of it such as :mod:`checkpointfs.sink` or :mod:`checkpointfs.log`, does not load boto3 (nor
the GCS or Azure libraries: each store's loads only with a manager of its paths).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from .contract import CancellableOutputStream, CheckpointFileManager, FileStatus
from .factory import manager_for
from .metrics import CheckpointMetrics, RequestMetrics
from .rename_manager import RenameBasedManager

if TYPE_CHECKING:
    from .direct import DirectWriteManager, RetryPolicy

__all__ = [
    "CancellableOutputStream",
    "CheckpointFileManager",
    "CheckpointMetrics",
    "DirectWriteManager",
    "FileStatus",
    "RenameBasedManager",
    "RequestMetrics",
    "RetryPolicy",
    "errors",
    "manager_for",
]
__version__ = "0.1.0"

_DIRECT_NAMES = frozenset({"DirectWriteManager", "RetryPolicy"})


def __getattr__(name: str) -> Any:
    if name in _DIRECT_NAMES:
        from . import direct

        return getattr(direct, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
