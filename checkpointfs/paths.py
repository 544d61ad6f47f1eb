"""Parsing and joining of the paths the managers accept: full URIs (``s3://bucket/key``, ``file:///dir``,
``memory://dir``) or plain local paths. A path keeps the form it was given in: children of ``s3a://b/dir`` are
``s3a://b/dir/<name>``, children of ``/tmp/dir`` are ``/tmp/dir/<name>``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import InvalidPathError
from .protocol import DIRECTORY_BUCKET_SUFFIX

S3_SCHEMES = frozenset({"s3", "s3a"})
GCS_SCHEMES = frozenset({"gs"})
AZURE_SCHEMES = frozenset({"az", "abfs", "abfss", "wasb", "wasbs"})
OBJECT_SCHEMES = S3_SCHEMES | GCS_SCHEMES | AZURE_SCHEMES
"""Schemes of object stores, whose keys may hold any character ('?' and '#' included)."""
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_ONLY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Bucket naming rules of S3 (general purpose buckets), checked before any request is sent.
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
# GCS bucket names (without the dotted form's 222-character allowance) and Azure container names.
_GCS_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
_AZURE_CONTAINER_RE = re.compile(r"^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$")
_AZURE_ACCOUNT_RE = re.compile(r"^[a-z0-9]{3,24}$")


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
    if scheme in OBJECT_SCHEMES:  # an object key may hold any character, '?' and '#' included
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


@dataclass(frozen=True)
class ObjectUri:
    """An object store path: the store ``family`` (``s3``, ``gcs``, ``azure``), the bucket (an Azure container),
    the key (no leading or trailing slash), the ``base`` URI the bucket's keys are named under (``gs://b``,
    ``abfss://c@acct.dfs.core.windows.net``), and the Azure storage ``account`` its host names (``""``: none named,
    as in ``az://container/key``)."""

    family: str
    bucket: str
    key: str
    base: str
    account: str = ""


def parse_object(path: str) -> ObjectUri:
    """Parse an object store path: ``s3://``/``s3a://``, ``gs://``, ``az://container/key``,
    ``abfs[s]://container@account.dfs.core.windows.net/key`` or ``wasb[s]://container@account.blob.core.windows.net
    /key``; :class:`InvalidPathError` naming the path for anything else or a malformed one."""
    parsed = parse(path)
    if parsed.scheme in S3_SCHEMES:
        bucket, key = parse_s3(path)
        return ObjectUri("s3", bucket, key, f"{parsed.scheme}://{bucket}")
    if parsed.scheme not in OBJECT_SCHEMES:
        raise InvalidPathError(path, f"not an object store path: scheme {parsed.scheme or '(none)'!r}, expected "
                                     "s3://, s3a://, gs://, az://, abfs[s]:// or wasb[s]://")
    authority = parsed.authority
    if not authority:
        raise InvalidPathError(path, f"malformed {parsed.scheme} URI: no bucket or container")
    account = ""
    if parsed.scheme in GCS_SCHEMES:
        family, bucket = "gcs", authority
        if "@" in authority or ":" in authority:
            raise InvalidPathError(path.replace(authority, "<redacted>") if "@" in authority else path,
                                   "credentials or ports do not belong in a gs:// URI; pass them as options")
        if not _GCS_BUCKET_RE.match(bucket) or ".." in bucket:
            raise InvalidPathError(path, f"invalid bucket name {bucket!r}")
    else:
        family = "azure"
        bucket, at, host = authority.partition("@")
        if parsed.scheme == "az":
            if at:
                raise InvalidPathError(path, "az:// names a container only (az://container/key); give the account "
                                             "as an option, or use abfss://container@account.dfs.core.windows.net")
        else:
            account = host.split(".", 1)[0].lower()
            if not at or not host or ":" in host or "@" in host:
                raise InvalidPathError(path, f"malformed {parsed.scheme} URI: expected "
                                             f"{parsed.scheme}://container@account.<endpoint host>/key")
            if not _AZURE_ACCOUNT_RE.match(account):
                raise InvalidPathError(path, f"invalid storage account name {account!r}")
        if not _AZURE_CONTAINER_RE.match(bucket):
            raise InvalidPathError(path, f"invalid container name {bucket!r}")
    key = parsed.path.strip("/")
    if "//" in key:
        raise InvalidPathError(path, "empty path segment ('//') in key")
    return ObjectUri(family, bucket, key, f"{parsed.scheme}://{authority}", account)


def is_directory_bucket(bucket: str) -> bool:
    """Whether S3 bucket ``bucket`` is a directory bucket (S3 Express One Zone), by its name: it ends in
    ``protocol.json``'s ``s3_directory_bucket.name_suffix`` (the shim's twin: ``MultipartUploader.isDirectoryBucket``).
    Such a bucket lists in no lexicographic order and takes only ``/``-ended prefixes."""
    return bucket.endswith(DIRECTORY_BUCKET_SUFFIX)


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
