"""Test helpers for checkpointfs and its users: an embedded S3 with request counting and fault injection.

They need the ``test`` extra (``pip install 'checkpointfs[test]'``: moto's server, pytest). The names below are
imported on first use, so that ``import checkpointfs.testing`` works without it and the first use says what to
install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .directory_bucket import DirectoryBucket
    from .embedded_s3 import EmbeddedS3
    from .faults import Fault, FaultPlan
    from .requests import Request, RequestLog
    from .s3_process import EmbeddedS3Process

__all__ = ["DirectoryBucket", "EmbeddedS3", "EmbeddedS3Process", "Fault", "FaultPlan", "Request", "RequestLog",
           "TestExtraMissingError", "require_test_extra"]

_WHERE = {"DirectoryBucket": "directory_bucket", "EmbeddedS3": "embedded_s3", "EmbeddedS3Process": "s3_process",
          "Fault": "faults", "FaultPlan": "faults", "Request": "requests", "RequestLog": "requests"}
_NEEDS_EXTRA = {"EmbeddedS3", "EmbeddedS3Process"}
_TEST_EXTRA = ("moto", "werkzeug")
"""Modules of the ``test`` extra that the embedded S3 imports."""


class TestExtraMissingError(ImportError):
    """A helper of :mod:`checkpointfs.testing` was asked for without the ``test`` extra installed."""

    __test__ = False  # not a test class, whatever pytest's naming rules say


def require_test_extra(what: str) -> None:
    """Raise :class:`TestExtraMissingError` naming ``what`` and the install command when the ``test`` extra's
    modules are missing."""
    for module in _TEST_EXTRA:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise TestExtraMissingError(
                f"{what} needs the 'test' extra of checkpointfs, and {module} is not installed here: "
                f"pip install {test_extra_requirements()}") from e


def test_extra_requirements() -> str:
    """The ``test`` extra's requirements as ``pip install`` arguments, read from the installed package's metadata
    (so the advice works however checkpointfs was installed: from an index, a wheel or a checkout)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        found = [r.split(";", 1)[0].strip() for r in requires("checkpointfs") or []
                 if "extra" in r.split(";", 1)[-1] and '"test"' in r.split(";", 1)[-1]]
    except PackageNotFoundError:
        found = []
    return " ".join(f"'{r}'" for r in found) if found else "'checkpointfs[test]'"


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _NEEDS_EXTRA:
        require_test_extra(f"checkpointfs.testing.{name}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
