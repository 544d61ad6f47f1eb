"""DirectWriteManager and its parts (the package keeps its first store's name; the manager writes ``s3://`` and
``gs://`` alike, checkpointfs.store). :class:`DirectWriteManager` and :class:`Encryption` are loaded on first use
(they load boto3; the GCS libraries load only with a ``gs://`` store); :data:`WRITE_ID_KEY` and :class:`RetryPolicy`
are light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import WRITE_ID_KEY
from ..store.retry import RetryPolicy

if TYPE_CHECKING:
    from ..store.s3 import Encryption
    from .manager import DirectWriteManager
    from .options import DirectWriteOptions

__all__ = ["WRITE_ID_KEY", "DirectWriteManager", "DirectWriteOptions", "Encryption", "RetryPolicy"]


def __getattr__(name: str) -> Any:
    if name in ("DirectWriteManager", "DirectWriteOptions", "Encryption"):
        from . import manager

        return getattr(manager, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
