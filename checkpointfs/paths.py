"""Parsing and joining of the paths the managers accept: full URIs (``s3://bucket/key``, ``file:///dir``,
``memory://dir``) or plain local paths. A path keeps the form it was given in: children of ``s3a://b/dir`` are
``s3a://b/dir/<name>``, children of ``/tmp/dir`` are ``/tmp/dir/<name>``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import InvalidPathError

S3_SCHEMES = frozenset({"s3", "s3a"})
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_ONLY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Bucket naming rules of S3 (general purpose buckets), checked before any request is sent.
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class ParsedPath:
    """A path split into scheme (``""`` for a plain local path), authority (bucket or host) and key/path part."""

    original: str
    scheme: str
    authority: str
    path: str


def parse(path: str) -> ParsedPath:
    """Split ``path``; raise :class:`InvalidPathError` for an empty or malformed one."""
    if not isinstance(path, str) or not path:
        raise InvalidPathError(repr(path), "a path must be a non-empty string")
    if "\x00" in path:
        raise InvalidPathError(repr(path), "a path must not contain NUL characters")
    match = _SCHEME_RE.match(path)
    if match is None:
        if path.startswith("file:/"):
            # Hadoop's own form of a local URI (file:/tmp/x), as Spark writes it into manifests.
            return ParsedPath(path, "file", "", path[len("file:") :])
        if "://" in path or _SCHEME_ONLY_RE.match(path):
            raise InvalidPathError(path, "malformed URI: expected scheme://authority/path")
        return ParsedPath(path, "", "", path)
    scheme = match.group(1).lower()
    rest = path[match.end():]
    if scheme in S3_SCHEMES:  # an S3 key may hold any character, '?' and '#' included
        authority, slash, key = rest.partition("/")
        return ParsedPath(path, scheme, authority, slash + key)
    split = urlsplit(path)
    if split.query or split.fragment:
        raise InvalidPathError(path, "a URI with a query or fragment is not a file path")
    return ParsedPath(path, scheme, split.netloc, split.path)


def parse_s3(path: str) -> tuple[str, str]:
    """Return ``(bucket, key)`` of an ``s3://`` or ``s3a://`` path (the key without leading or trailing slash)."""
    parsed = parse(path)
    if parsed.scheme not in S3_SCHEMES:
        raise InvalidPathError(path, f"not an S3 path: scheme {parsed.scheme or '(none)'!r}, expected s3:// or s3a://")
    bucket = parsed.authority
    if not bucket:
        raise InvalidPathError(path, "malformed S3 URI: no bucket (expected s3://bucket/key)")
    if "@" in bucket or ":" in bucket:
        raise InvalidPathError(
            path.replace(bucket, "<redacted>") if "@" in bucket else path,
            "credentials or ports do not belong in an S3 URI; pass them as options",
        )
    if not _BUCKET_RE.match(bucket) or ".." in bucket:
        raise InvalidPathError(path, f"invalid bucket name {bucket!r}")
    key = parsed.path.strip("/")
    if "//" in key:
        raise InvalidPathError(path, "empty path segment ('//') in key")
    return bucket, key


def join(base: str, name: str) -> str:
    """Join ``name`` under directory ``base``, keeping the form of ``base``."""
    return base.rstrip("/") + "/" + name.strip("/") if base.rstrip("/") else "/" + name.strip("/")


def basename(path: str) -> str:
    """The last segment of ``path``."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def parent(path: str) -> str:
    """The directory containing ``path`` (same form)."""
    stripped = path.rstrip("/")
    head, _, _ = stripped.rpartition("/")
    if head.endswith(":/") or head.endswith("://"):
        return head + "/" if head.endswith(":/") else head
    return head or "/"
