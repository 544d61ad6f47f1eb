"""Least privilege on the embedded S3: the IAM actions its caller is denied, answered as S3 answers a caller whose
policy lacks them (docs/operations.md, "Permissions"). MinIO's IAM policies cover the rest on a real server
(harness/servers/least_privilege.py); this is for what MinIO does not show.

- ``s3:ListBucket``: a listing (ListObjectsV2, ListObjects) is refused 403 AccessDenied, and so is a HeadObject or a
  GetObject of a key that does not exist (S3's HeadObject and GetObject pages: "If you don't have the s3:ListBucket
  permission, Amazon S3 returns an HTTP status code 403 Forbidden error"); MinIO answers those 404.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["DENIABLE", "denied", "refusal"]

DENIABLE: tuple[str, ...] = ("s3:ListBucket",)
"""The actions the embedded S3 can deny."""

_LISTING = frozenset({"ListObjectsV2", "ListObjects"})
_READING = frozenset({"HeadObject", "GetObject"})


def denied(actions: Iterable[str]) -> frozenset[str]:
    """``actions`` checked against :data:`DENIABLE` (ValueError naming an unknown one)."""
    chosen = frozenset(actions)
    unknown = sorted(chosen - set(DENIABLE))
    if unknown:
        raise ValueError(f"the embedded S3 cannot deny {', '.join(unknown)}; it denies {', '.join(DENIABLE)}")
    return chosen


def refusal(actions: frozenset[str], operation: str, key: str, exists: Callable[[], bool]
            ) -> tuple[int, str, str] | None:
    """The answer (status, code, message) S3 gives ``operation`` of ``key`` to a caller denied ``actions``, or
    None when the request is allowed; ``exists`` tells whether the key holds an object (asked only when needed)."""
    if "s3:ListBucket" in actions and (operation in _LISTING or (operation in _READING and key and not exists())):
        return 403, "AccessDenied", "Access Denied"
    return None
