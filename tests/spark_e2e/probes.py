"""The shim's record of its ``exists()`` answers, read from a driver's log, and the check that the probe rule never
took a directory for a file (``Probes.scala``; docs/contract.md, "exists: the probe rule").

The shim skips the LIST of ``exists()`` for a path below its manager's root named as Spark names only files (a
*file probe*: one HEAD). That is right only while Spark never asks so about a directory. With the probe logger on,
the shim writes one DEBUG line per ``exists()``; after the run, :func:`assert_no_directory_probed_as_file` fails if
any file probe asked about a path that is a directory (a key prefix with something under it) in the store. Usage,
from a test on the embedded S3 (``tests/spark_e2e``) or on MinIO (``tests/backends``, whose jobs are the same
``python -m harness.job``)::

    from tests.spark_e2e.probes import RECORD_ARGS, assert_no_directory_probed_as_file, exists_records

    job = pipeline.start(*RECORD_ARGS, query="dedup")      # or add RECORD_ARGS to harness.job's command line
    assert job.wait()["status"] == "ok"
    records = exists_records(job.log_path)                  # several logs: exists_records(*paths)
    assert records, job.tail()
    assert_no_directory_probed_as_file(records, pipeline.server)   # anything with keys(prefix, bucket=)

A driver other than ``harness.job`` calls ``harness.job.record_probes(spark)`` before its query starts. Only the
driver's JVM is covered: in local mode that includes the executors (state stores); on a cluster it does not.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

from checkpointfs.testing import Request
from harness.job import RECORD_PROBES_FLAG

__all__ = ["RECORD_ARGS", "ExistsRecord", "KeyStore", "assert_next_batches_were_absent",
           "assert_no_directory_probed_as_file",
           "directories_probed_as_file", "exists_records", "parse_exists_records", "probe_counts"]

RECORD_ARGS: tuple[str, ...] = (RECORD_PROBES_FLAG,)
"""Arguments of ``python -m harness.job`` (e.g. ``Pipeline.start(*RECORD_ARGS, ...)``) that turn the record on."""

PROBES = ("known", "next", "file", "full", "delegated")
"""Probe kinds: answered from memory (no request), the next batch of a log the manager writes (no request), one HEAD,
HEAD then LIST, Spark's own manager (file://, hdfs)."""

_RECORD = re.compile(
    r"checkpointfs\.exists probe=(?P<probe>[a-z]+) answer=(?P<answer>true|false) path=(?P<path>[^\s\"]+) "
    r"root=(?P<root>[^\s\"]+)")
_S3_SCHEMES = ("s3a", "s3")


@dataclass(frozen=True)
class ExistsRecord:
    """One ``exists()`` call of the shim: the path asked (qualified, decoded), its manager's root, how it was
    answered (one of :data:`PROBES`) and the answer."""

    path: str
    root: str
    probe: str
    answer: bool

    @property
    def bucket_key(self) -> tuple[str, str]:
        """The bucket and key of an ``s3a://`` or ``s3://`` path; ValueError for other schemes."""
        parts = urlsplit(self.path)
        if parts.scheme not in _S3_SCHEMES:
            raise ValueError(f"{self.path} is not an S3 path")
        return parts.netloc, parts.path.lstrip("/")

    def __str__(self) -> str:
        return f"exists({self.path}) probe={self.probe} answer={str(self.answer).lower()} root={self.root}"


class KeyStore(Protocol):
    """What the check reads from a store: its keys under a prefix (``EmbeddedS3``, ``MinioServer``)."""

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]: ...


def parse_exists_records(text: str) -> list[ExistsRecord]:
    """The records in a log's text, in order (lines of other loggers are skipped)."""
    return [ExistsRecord(unquote(m["path"]), unquote(m["root"]), m["probe"], m["answer"] == "true")
            for m in _RECORD.finditer(text)]


def exists_records(*logs: str | os.PathLike[str]) -> list[ExistsRecord]:
    """The records in the given job logs (e.g. ``Job.log_path`` of every run on one checkpoint), in order."""
    return [r for log in logs for r in parse_exists_records(Path(log).read_text(errors="replace"))]


def probe_counts(records: Iterable[ExistsRecord]) -> dict[str, int]:
    """How many records per ``<probe>:<answer>`` (e.g. ``{"file:false": 12, "full:true": 30}``), for reports."""
    return dict(sorted(Counter(f"{r.probe}:{str(r.answer).lower()}" for r in records).items()))


def _directories(store: KeyStore, bucket: str, keys: Sequence[str]) -> set[str]:
    """Every directory (a proper prefix ending before a ``/`` of some key, or a marker ``dir/``) under the deepest
    common folder of ``keys``, listed once."""
    common = posixpath.commonpath([posixpath.dirname(k) for k in keys])
    folder = f"{common}/" if common else ""
    directories: set[str] = set()
    for key in store.keys(folder, bucket=bucket):
        parts = key.split("/")
        directories.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return directories


def directories_probed_as_file(records: Iterable[ExistsRecord], store: KeyStore) -> list[ExistsRecord]:
    """The file probes (no LIST) whose path is, in ``store`` now, a directory: each one a wrong answer of the probe
    rule, or one it would give once the directory exists."""
    by_bucket: dict[str, list[ExistsRecord]] = {}
    for record in records:
        if record.probe == "file":
            by_bucket.setdefault(record.bucket_key[0], []).append(record)
    wrong: list[ExistsRecord] = []
    for bucket, asked in by_bucket.items():
        directories = _directories(store, bucket, [r.bucket_key[1] for r in asked])
        wrong.extend(r for r in asked if r.bucket_key[1] in directories)
    return wrong


def assert_no_directory_probed_as_file(records: Sequence[ExistsRecord], store: KeyStore) -> None:
    """Fail, naming the calls, if any file probe in ``records`` asked about a path that is a directory in
    ``store`` at the end of the run: Spark asked ``exists()`` of a directory with a file's name, which the probe rule
    (Probes.scala, checkpointfs/direct/probes.py) must then stop taking for a file."""
    wrong = directories_probed_as_file(records, store)
    assert not wrong, (
        f"{len(wrong)} exists() call(s) took a directory for a file (one HEAD, no LIST):\n"
        + "\n".join(f"  {r}" for r in wrong[:20]) + f"\nall records: {probe_counts(records)}")


def assert_next_batches_were_absent(records: Sequence[ExistsRecord], requests: Iterable[Request]) -> None:
    """Fail, naming the calls, if a ``next`` answer (absent, no request: the batch after one the manager wrote) was
    wrong: it says ``true``, or a put-if-absent of its key was ever refused (412), which a file already there when
    Spark asked would have made happen. ``requests``: the store's request log of the whole run."""
    refused = {(r.bucket, r.key) for r in requests if r.operation in ("PutObject", "CompleteMultipartUpload")
               and r.status == 412}
    wrong = [r for r in records if r.probe == "next" and (r.answer or r.bucket_key in refused)]
    assert not wrong, (
        f"{len(wrong)} exists() call(s) answered a log's next batch absent wrongly:\n"
        + "\n".join(f"  {r}" for r in wrong[:20]) + f"\nall records: {probe_counts(records)}")
