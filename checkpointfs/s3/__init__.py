"""The S3 side: DirectWriteManager and its parts."""

from .manager import WRITE_ID_KEY, DirectWriteManager, Encryption
from .retry import RetryPolicy

__all__ = ["WRITE_ID_KEY", "DirectWriteManager", "Encryption", "RetryPolicy"]
