"""Paths in the form a manifest holds them, and back.

Spark records each file as a URI with special characters percent-encoded, in the scheme it reads the file with:
``file:///out/part-0.json`` for local files, ``s3a://bucket/out/part-0.json`` for S3. Non-ASCII characters stay as
they are (Java's ``URI.toString``); a space is ``%20``, a ``%`` is ``%25``.
"""

from __future__ import annotations

import os
import string
from urllib.parse import unquote

from .. import paths

S3_MANIFEST_SCHEME = "s3a"
_SAFE = frozenset(string.ascii_letters + string.digits + "_-!.~'()*,;:$&+=/@")


def encode_path(path: str) -> str:
    """Percent-encode the characters a URI path cannot hold (as Java's URI does; non-ASCII letters are kept)."""
    out = []
    for char in path:
        if char in _SAFE or (ord(char) > 127 and not char.isspace() and char.isprintable()):
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def to_manifest_path(path: str) -> str:
    """The manifest form of a store path: ``s3://b/k`` -> ``s3a://b/k``; ``/dir/f``, ``file:/dir/f`` and
    ``file:///dir/f`` -> ``file:///dir/f``; other schemes keep theirs. The path part is percent-encoded."""
    parsed = paths.parse(path)
    if parsed.scheme in paths.S3_SCHEMES:
        return f"{S3_MANIFEST_SCHEME}://{parsed.authority}{encode_path(parsed.path)}"
    if parsed.scheme in ("", "file", "local"):
        local = os.path.abspath(parsed.path if parsed.scheme else path)
        return "file://" + encode_path(local)
    return f"{parsed.scheme}://{parsed.authority}{encode_path(parsed.path)}"


def from_manifest_path(uri: str, s3_scheme: str | None = None) -> str:
    """The store path of a manifest entry: percent-decoded; ``file:`` URIs become plain local paths; ``s3a://`` and
    ``s3n://`` become ``<s3_scheme>://`` when ``s3_scheme`` is given."""
    if uri.startswith("file:"):
        rest = uri[len("file:"):]
        if rest.startswith("//"):
            authority_and_path = rest[2:]
            slash = authority_and_path.find("/")
            rest = authority_and_path[slash:] if slash >= 0 else "/"
        return unquote(rest)
    scheme, sep, remainder = uri.partition("://")
    if not sep:
        return unquote(uri)
    if s3_scheme and scheme.lower() in ("s3", "s3a", "s3n"):
        scheme = s3_scheme
    return f"{scheme}://{unquote(remainder)}"


def canonical_store_path(path: str) -> str:
    """A comparison key for a path as a manager lists it (not encoded): S3 schemes unified, local paths absolute."""
    parsed = paths.parse(path)
    if parsed.scheme in paths.S3_SCHEMES:
        return f"s3://{parsed.authority}{parsed.path}"
    if parsed.scheme in ("", "file", "local"):
        return os.path.abspath(parsed.path if parsed.scheme else path)
    return path


def canonical_manifest_path(uri: str) -> str:
    """The comparison key of a manifest entry's path (see :func:`canonical_store_path`)."""
    return canonical_store_path(from_manifest_path(uri))
