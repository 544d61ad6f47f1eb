"""checkpointfs: streaming checkpoints and manifest logs on object stores, without the rename dance."""

from . import errors
from .contract import CancellableOutputStream, CheckpointFileManager, FileStatus
from .factory import manager_for
from .metrics import RequestMetrics
from .rename_manager import RenameBasedManager
from .s3 import DirectWriteManager, RetryPolicy

__all__ = [
    "CancellableOutputStream",
    "CheckpointFileManager",
    "DirectWriteManager",
    "FileStatus",
    "RenameBasedManager",
    "RequestMetrics",
    "RetryPolicy",
    "errors",
    "manager_for",
]
__version__ = "0.1.0"
