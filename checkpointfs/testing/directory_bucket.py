"""The directory-bucket profile of the embedded S3: S3 Express One Zone's documented differences from S3 Standard,
applied by the gateway (:mod:`checkpointfs.testing.gateway`) to every bucket it serves. docs/testing.md ("The
directory-bucket profile") states each rule with its AWS source and what a real directory bucket must still confirm.

- ``ListObjectsV2`` lists in no lexicographic order (here: a seeded, stable order, the same on every page of one
  listing, so continuation tokens work); a prefix must end in ``/`` and ``/`` is the only delimiter (others are
  refused, 400 InvalidArgument); ``StartAfter`` is refused; with a delimiter, a prefix holding only open multipart
  uploads is listed. ``ListMultipartUploads`` takes the same prefixes and delimiter.
- ETags are random strings, not MD5s (an ``If-Match`` takes them as they are).
- ``Content-MD5`` is refused on every request (400 InvalidRequest); the ``x-amz-checksum-*`` headers are taken.
- Deleting an object deletes its parent directories left empty: here the zero-byte ``dir/`` objects (directory
  markers, as S3A and the console write them) above it that nothing else is under; a listing no longer shows them.
- ``keep_metadata=False``: user metadata (``x-amz-meta-*``) sent with a write is dropped, for a store that keeps none
  (whether directory buckets keep it is not confirmed here).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote

from .consistency import S3_NS

NAME = "directory-bucket"
"""The profile's name, as ``EmbeddedS3(profile=...)`` takes it (``"directory-bucket:no-metadata"``: user metadata
dropped)."""

PROFILES = (NAME, NAME + ":no-metadata")
"""Every name the profile goes by: user metadata kept, and dropped."""

SDK_V1_NO_MD5 = "com.amazonaws.services.s3.disablePutObjectMD5Validation"
"""AWS SDK v1's JVM system property (Spark 3.5's Hadoop 3.3.4) that stops it sending Content-MD5 with a PutObject of
a file and checking the ETag answered against the MD5 of the body (its ``SkipMd5CheckStrategy``): a directory bucket
supports no Content-MD5 and answers random ETags, so on SDK v1 every S3A PutObject fails without it ("Unable to
verify integrity of data upload"). Set it as ``-D<name>=true`` on the driver and executors; SDK v2 ignores it."""

_LISTS_BY_PREFIX = frozenset({"ListObjectsV2", "ListObjects", "ListMultipartUploads"})
_WRITES_METADATA = frozenset({"PutObject", "CreateMultipartUpload", "CopyObject"})
_CREATING = frozenset({"PutObject", "CompleteMultipartUpload", "CopyObject"})


@dataclass(frozen=True)
class DirectoryBucket:
    """The directory-bucket profile: S3 Express One Zone's rules (see the module doc). ``keep_metadata``: whether
    user metadata sent with a write is kept (False: dropped). ``seed``: the listing order's seed."""

    keep_metadata: bool = True
    seed: int = 0

    @classmethod
    def named(cls, profile: str | DirectoryBucket | None) -> DirectoryBucket | None:
        """The profile a name or an instance stands for (None: S3 Standard's rules); ValueError for an unknown
        name."""
        if profile is None or isinstance(profile, DirectoryBucket):
            return profile
        if profile == NAME:
            return cls()
        if profile == NAME + ":no-metadata":
            return cls(keep_metadata=False)
        raise ValueError(f"unknown embedded S3 profile {profile!r}; known: {', '.join(PROFILES)}")

    # -- requests refused or changed before moto sees them ------------------------------------------------------
    def refusal(self, operation: str, query: str, headers: dict[str, str]) -> tuple[int, str, str] | None:
        """The error a directory bucket answers this request with (status, code, message), or None."""
        if "content-md5" in headers:
            return 400, "InvalidRequest", "Content-MD5 is not supported for directory buckets: send x-amz-checksum-*"
        if operation not in _LISTS_BY_PREFIX:
            return None
        args = parse_qs(query, keep_blank_values=True)
        prefix = (args.get("prefix") or [""])[0]
        delimiter = (args.get("delimiter") or [""])[0]
        if delimiter and delimiter != "/":
            return 400, "InvalidArgument", f"directory buckets take only '/' as the delimiter, not {delimiter!r}"
        if prefix and not prefix.endswith("/"):
            return 400, "InvalidArgument", f"directory buckets take only prefixes ending in '/', not {prefix!r}"
        if args.get("start-after", [""])[0]:
            return 400, "InvalidArgument", "StartAfter is not supported for directory buckets"
        return None

    def rewrite_request(self, operation: str, environ: dict[str, Any]) -> None:
        """Drop the user metadata of a write when the profile keeps none."""
        if not self.keep_metadata and operation in _WRITES_METADATA:
            for name in [n for n in environ if n.startswith("HTTP_X_AMZ_META_")]:
                del environ[name]

    # -- answers rewritten after moto -------------------------------------------------------------------------
    @staticmethod
    def creates(operation: str) -> bool:
        """Whether ``operation`` makes an object whose ETag the profile replaces."""
        return operation in _CREATING

    @staticmethod
    def new_etag(fake_key: Any) -> tuple[str, str]:
        """Give ``fake_key`` (moto's object) a random ETag; (the MD5 ETag moto gave it, the new one), both quoted."""
        old = str(fake_key.etag)
        fake_key._etag = secrets.token_hex(16)
        return old, str(fake_key.etag)

    @staticmethod
    def empty_parents(key: str, keys_under: Callable[[str], list[str]]) -> list[str]:
        """The directory objects above ``key`` (deepest first) that nothing but themselves is under any more: what
        a directory bucket deletes with the last object of a directory. Stops at the first parent still in use."""
        gone: list[str] = []
        parts = key.rstrip("/").split("/")[:-1]
        for depth in range(len(parts), 0, -1):
            directory = "/".join(parts[:depth]) + "/"
            under = keys_under(directory)
            if any(k != directory and k not in gone for k in under):
                break
            if directory in under:
                gone.append(directory)
        return gone

    def list_objects(self, bucket: str, query: str, objects: list[Any], upload_keys: list[str]) -> bytes:
        """A ListObjectsV2 answer over moto's ``objects`` (FakeKeys) in the profile's order: entries (objects and
        common prefixes) sorted by a seeded hash of their names, paged by ``max-keys``; the continuation token is
        the last name sent. With a delimiter, ``upload_keys`` (keys of open uploads) add their prefixes."""
        args = parse_qs(query, keep_blank_values=True)
        prefix = (args.get("prefix") or [""])[0]
        delimiter = (args.get("delimiter") or [""])[0]
        max_keys = int((args.get("max-keys") or ["1000"])[0])
        token = (args.get("continuation-token") or [""])[0]
        encode = (args.get("encoding-type") or [""])[0] == "url"

        entries: dict[str, Any] = {}
        for obj in objects:
            name = str(obj.name)
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):]
            if delimiter and delimiter in rest:
                entries[prefix + rest.split(delimiter, 1)[0] + delimiter] = None
            else:
                entries[name] = obj
        if delimiter:
            for name in upload_keys:
                rest = name[len(prefix):]
                if name.startswith(prefix) and delimiter in rest:
                    entries.setdefault(prefix + rest.split(delimiter, 1)[0] + delimiter, None)
        ordered = sorted(entries, key=self._rank)
        if token:
            after = self._rank(base64.urlsafe_b64decode(token.encode()).decode())
            ordered = [n for n in ordered if self._rank(n) > after]
        page, more = ordered[:max_keys], len(ordered) > max_keys

        def text(name: str) -> str:
            return quote(name, safe="/") if encode else name

        root = ET.Element(f"{{{S3_NS}}}ListBucketResult")
        for tag, value in (("Name", bucket), ("Prefix", text(prefix)), ("MaxKeys", str(max_keys)),
                           ("KeyCount", str(len(page))), ("IsTruncated", "true" if more else "false")):
            ET.SubElement(root, f"{{{S3_NS}}}{tag}").text = value
        if delimiter:
            ET.SubElement(root, f"{{{S3_NS}}}Delimiter").text = delimiter
        if encode:
            ET.SubElement(root, f"{{{S3_NS}}}EncodingType").text = "url"
        if token:
            ET.SubElement(root, f"{{{S3_NS}}}ContinuationToken").text = token
        if more:
            ET.SubElement(root, f"{{{S3_NS}}}NextContinuationToken").text = base64.urlsafe_b64encode(
                page[-1].encode()).decode()
        for name in page:
            obj = entries[name]
            if obj is None:
                ET.SubElement(ET.SubElement(root, f"{{{S3_NS}}}CommonPrefixes"), f"{{{S3_NS}}}Prefix").text = text(name)
                continue
            element = ET.SubElement(root, f"{{{S3_NS}}}Contents")
            for tag, value in (("Key", text(name)), ("LastModified", obj.last_modified_ISO8601),
                               ("ETag", str(obj.etag)), ("Size", str(obj.size)),
                               ("StorageClass", "EXPRESS_ONEZONE")):
                ET.SubElement(element, f"{{{S3_NS}}}{tag}").text = value
        data: bytes = ET.tostring(root, xml_declaration=True, encoding="UTF-8")
        return data

    def _rank(self, name: str) -> str:
        return hashlib.sha256(f"{self.seed}:{name}".encode()).hexdigest() + name
