"""S3 (``s3://``, ``s3a://``) on boto3: :mod:`.store` (:class:`S3Store`), :mod:`.client` (what botocore's answers
mean), :mod:`.connect` (the store from a connection and S3's options). The only place that calls boto3; its names
load it on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Encryption, S3Store

__all__ = ["Encryption", "S3Store"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}.store"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
