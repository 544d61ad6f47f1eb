"""Google Cloud Storage (``gs://``) on google-auth and requests, the ``gcs`` extra: :mod:`.store`
(:class:`GcsStore`), :mod:`.client` (the authorized session, request names, what answers mean), :mod:`.connect` (the
store from a connection and GCS's options). The only place that calls those libraries; its names load them on first
use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import GcsStore

__all__ = ["GcsStore"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}.store"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
