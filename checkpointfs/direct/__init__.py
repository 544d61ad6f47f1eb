"""DirectWriteManager and its parts, store-agnostic: the manager (:mod:`.manager`), its settings (:mod:`.options`),
the output stream that publishes a file once with a conditional write (:mod:`.stream`), the reader (:mod:`.reader`)
and the probe rule with what a manager knows of its own files (:mod:`.probes`). The stores are
:mod:`checkpointfs.store`'s. :class:`DirectWriteManager` and :class:`DirectWriteOptions` are loaded on first use;
:data:`WRITE_ID_KEY` and :class:`RetryPolicy` are light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import WRITE_ID_KEY
from ..store.retry import RetryPolicy

if TYPE_CHECKING:
    from .manager import DirectWriteManager
    from .options import DirectWriteOptions

__all__ = ["WRITE_ID_KEY", "DirectWriteManager", "DirectWriteOptions", "RetryPolicy"]


def __getattr__(name: str) -> Any:
    if name in ("DirectWriteManager", "DirectWriteOptions"):
        from . import manager

        return getattr(manager, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
