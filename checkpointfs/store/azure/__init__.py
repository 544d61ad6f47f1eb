"""Azure Blob Storage (``az://``, ``abfs[s]://``, ``wasb[s]://``) on azure-storage-blob, the ``azure`` extra:
:mod:`.store` (:class:`AzureStore`), :mod:`.client` (request names, what answers mean), :mod:`.connect` (the store
from a connection and Azure's options). The only place that calls the Azure SDK; its names load it on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import AzureStore

__all__ = ["AzureStore"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}.store"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
