"""Eventual consistency for the embedded S3: what S3 was before December 2020, and what some S3-compatible stores
still are. For a delay after each change, a new key is hidden from LIST or answers 404 to GET/HEAD, a deleted key
is still listed, and an overwritten key is read stale. The model watches every write through the gateway and
rewrites the answers to later reads."""

from __future__ import annotations

import re
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ET.register_namespace("", S3_NS)


@dataclass(frozen=True)
class ConsistencyLag:
    """How long each kind of staleness lasts after a change, in seconds (0: none), for keys matching
    ``key_pattern`` (a regex searched in ``bucket/key``; empty: every key)."""

    list_hides_new_s: float = 0.0
    list_keeps_deleted_s: float = 0.0
    read_new_404_s: float = 0.0
    read_overwritten_stale_s: float = 0.0
    key_pattern: str = ""

    def __post_init__(self) -> None:
        if min(self.list_hides_new_s, self.list_keeps_deleted_s, self.read_new_404_s,
               self.read_overwritten_stale_s) < 0:
            raise ValueError("consistency lags must not be negative")
        re.compile(self.key_pattern)


@dataclass(frozen=True)
class Snapshot:
    """An object as it was before a change: enough to list it or serve it stale."""

    body: bytes
    etag: str
    headers: tuple[tuple[str, str], ...]
    last_modified: Any
    changed_at: float

    @classmethod
    def of(cls, fake_key: Any, changed_at: float = 0.0) -> Snapshot:
        """Snapshot a moto FakeKey (before the change: moto drops the old body once it is replaced)."""
        headers = tuple((name, value) for name, value in fake_key.metadata.items()
                        if name.lower().startswith("x-amz-meta-") or name.lower() == "content-type")
        return cls(bytes(fake_key.value), fake_key.etag, headers, fake_key.last_modified, changed_at)


class ConsistencyState:
    """The changes of the last moments, per key, and the rewriting of reads they call for."""

    def __init__(self, lag: ConsistencyLag, record: Callable[[str, str, str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.lag = lag
        self._record = record
        self._clock = clock
        self._regex = re.compile(lag.key_pattern)
        self._lock = threading.Lock()
        self._created: dict[tuple[str, str], float] = {}
        self._overwritten: dict[tuple[str, str], Snapshot] = {}
        self._deleted: dict[tuple[str, str], Snapshot] = {}

    def _applies(self, bucket: str, key: str) -> bool:
        return bool(self._regex.search(f"{bucket}/{key}"))

    def _within(self, since: float, lag: float) -> bool:
        return lag > 0 and self._clock() - since < lag

    # -- watching writes -----------------------------------------------------------------------------------------
    def written(self, bucket: str, key: str, before: Snapshot | None) -> None:
        """``key`` was created or replaced; ``before`` is what it replaced (None if new)."""
        if not self._applies(bucket, key):
            return
        now = self._clock()
        with self._lock:
            self._deleted.pop((bucket, key), None)
            if before is None:
                self._created[(bucket, key)] = now
                self._overwritten.pop((bucket, key), None)
            else:
                self._overwritten[(bucket, key)] = replace(before, changed_at=now)

    def deleted(self, bucket: str, key: str, before: Snapshot | None) -> None:
        """``key`` was deleted; ``before`` is what it was (None if it did not exist)."""
        if before is None or not self._applies(bucket, key):
            return
        with self._lock:
            self._created.pop((bucket, key), None)
            self._overwritten.pop((bucket, key), None)
            self._deleted[(bucket, key)] = replace(before, changed_at=self._clock())

    # -- rewriting reads -----------------------------------------------------------------------------------------
    def read_as_missing(self, bucket: str, key: str) -> bool:
        """Whether GET/HEAD of ``key`` should answer 404 (created too recently)."""
        with self._lock:
            since = self._created.get((bucket, key))
        if since is not None and self._within(since, self.lag.read_new_404_s):
            self._record("consistency-read-404", bucket, key)
            return True
        return False

    def stale_version(self, bucket: str, key: str) -> Snapshot | None:
        """The old version GET/HEAD of ``key`` should serve (overwritten too recently), if any."""
        with self._lock:
            snapshot = self._overwritten.get((bucket, key))
        if snapshot is not None and self._within(snapshot.changed_at, self.lag.read_overwritten_stale_s):
            self._record("consistency-stale-read", bucket, key)
            return snapshot
        return None

    def rewrite_listing(self, bucket: str, query: dict[str, list[str]], body: bytes,
                        existing_keys: Callable[[str], list[str]]) -> bytes:
        """A ListObjects(V2) answer with recently created keys hidden and recently deleted keys still listed."""
        prefix = (query.get("prefix") or [""])[0]
        delimiter = (query.get("delimiter") or [""])[0]
        with self._lock:
            hidden = {k for (b, k), t in self._created.items()
                      if b == bucket and k.startswith(prefix) and self._within(t, self.lag.list_hides_new_s)}
            lingering = {k: s for (b, k), s in self._deleted.items()
                         if b == bucket and k.startswith(prefix) and self._within(s.changed_at,
                                                                                  self.lag.list_keeps_deleted_s)}
        if not hidden and not lingering:
            return body
        root = ET.fromstring(body)
        contents = root.findall(f"{{{S3_NS}}}Contents")
        for element in contents:
            key = element.findtext(f"{{{S3_NS}}}Key") or ""
            if key in hidden:
                root.remove(element)
                self._record("consistency-list-hidden", bucket, key)
        if delimiter:
            for element in root.findall(f"{{{S3_NS}}}CommonPrefixes"):
                common = element.findtext(f"{{{S3_NS}}}Prefix") or ""
                if all(k in hidden for k in existing_keys(common)):
                    root.remove(element)
        truncated = root.findtext(f"{{{S3_NS}}}IsTruncated") == "true"
        if lingering and not truncated:  # add them once, on the last page
            listed = {e.findtext(f"{{{S3_NS}}}Key") for e in root.findall(f"{{{S3_NS}}}Contents")}
            prefixes = {e.findtext(f"{{{S3_NS}}}Prefix") for e in root.findall(f"{{{S3_NS}}}CommonPrefixes")}
            for key, snapshot in sorted(lingering.items()):
                rest = key[len(prefix):]
                if delimiter and delimiter in rest:
                    common = prefix + rest.split(delimiter, 1)[0] + delimiter
                    if common not in prefixes:
                        prefixes.add(common)
                        ET.SubElement(ET.SubElement(root, f"{{{S3_NS}}}CommonPrefixes"), f"{{{S3_NS}}}Prefix").text = (
                            common)
                elif key not in listed:
                    self._append_contents(root, key, snapshot)
                self._record("consistency-list-deleted", bucket, key)
        count = root.find(f"{{{S3_NS}}}KeyCount")
        if count is not None:
            entries = root.findall(f"{{{S3_NS}}}Contents") + root.findall(f"{{{S3_NS}}}CommonPrefixes")
            count.text = str(len(entries))
        data: bytes = ET.tostring(root, xml_declaration=True, encoding="UTF-8")
        return data

    @staticmethod
    def _append_contents(root: ET.Element, key: str, snapshot: Snapshot) -> None:
        element = ET.SubElement(root, f"{{{S3_NS}}}Contents")
        for tag, text in (("Key", key), ("LastModified", snapshot.last_modified.strftime("%Y-%m-%dT%H:%M:%S.000Z")),
                          ("ETag", snapshot.etag), ("Size", str(len(snapshot.body))), ("StorageClass", "STANDARD")):
            ET.SubElement(element, f"{{{S3_NS}}}{tag}").text = text
