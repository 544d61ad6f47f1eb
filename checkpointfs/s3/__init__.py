"""The S3 side: DirectWriteManager and its parts."""

from .client import WRITE_ID_KEY, Encryption, RetryPolicy
from .manager import DirectWriteManager

__all__ = ["WRITE_ID_KEY", "DirectWriteManager", "Encryption", "RetryPolicy"]
