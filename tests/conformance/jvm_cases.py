"""JVM implementations for the conformance suite, driven through py4j inside the session's SparkSession:

- ``jvm-shim``: checkpointfs's DirectWriteCheckpointFileManager on s3a:// against the embedded S3;
- ``spark-filecontext-s3a`` / ``spark-filesystem-s3a``: Spark's rename-based managers on s3a:// (Spark's default
  choice, and its fallback);
- ``spark-abortable-s3a``: Spark's AbortableStreamBasedCheckpointFileManager (spark-hadoop-cloud) on s3a://.

The failures of Spark's own managers are registered in :data:`EXPECTED_FAILURES` with the reason, as strict xfails.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from checkpointfs import paths
from checkpointfs.contract import CancellableOutputStream
from checkpointfs.spark.jvm_manager import ABORTABLE_STREAM_MANAGER, JvmCheckpointFileManager
from checkpointfs.spark.lines import DEFAULT_LINE, SparkLine, line_of
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.directory_bucket import SDK_V1_NO_MD5

from .cases import DIRECTORY_BUCKET_PROFILES, Case, CaseFactory, profile_root


def running_line() -> SparkLine:
    """The Spark line of the installed pyspark (the tests of each line run in that line's own venv)."""
    try:
        import pyspark
    except ImportError:
        return DEFAULT_LINE
    return line_of(pyspark.__version__)


# Spark's own managers live beside the trait: ...streaming (3.5, 4.0) or ...streaming.checkpointing (4.1 on).
FILE_CONTEXT_MANAGER = f"{running_line().trait_package}.FileContextBasedCheckpointFileManager"
FILE_SYSTEM_MANAGER = f"{running_line().trait_package}.FileSystemBasedCheckpointFileManager"

S3A_PART_SIZE = 5 * 1024 * 1024
"""S3A's smallest multipart block (fs.s3a.multipart.size is raised to it if set lower); the test session sets it."""


class SparkCallerPattern(JvmCheckpointFileManager):
    """A Spark manager used the way Spark uses it: every directory is made (``mkdirs``) before files are created in
    it, as HDFSMetadataLog and the state stores do. Spark's FileContext-based managers cannot create a file whose
    parent directory does not exist; this keeps that API difference from hiding their behaviour in the suite."""

    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        self.mkdirs(paths.parent(path))
        return super().create_atomic(path, overwrite_if_possible)


def _jvm(name: str, manager_class: str, *, promises_cost: bool, hadoop_conf: Mapping[str, str] | None = None,
         profile: str | None = None) -> CaseFactory:
    """A JVM manager on s3a:// against the embedded S3, served by ``profile``'s rules (None: S3 Standard's; a
    directory-bucket profile: in a bucket named as a directory bucket)."""

    def make(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
        spark = request.getfixturevalue("spark")
        server: EmbeddedS3 = request.getfixturevalue("embedded_s3")
        root = profile_root(server, profile, scheme="s3a")
        if profile is not None and sdk_v1():
            # as a user of a directory bucket does on this line (docs/contract.md): the JVM property, here for the
            # case's lifetime
            system = spark.sparkContext._jvm.java.lang.System
            system.setProperty(SDK_V1_NO_MD5, "true")
            request.addfinalizer(lambda: system.clearProperty(SDK_V1_NO_MD5))
        kind = JvmCheckpointFileManager if manager_class == SHIM else SparkCallerPattern
        manager = kind(spark, root, manager_class=manager_class, hadoop_conf=hadoop_conf)
        request.addfinalizer(manager.close)
        return Case(name, manager, root, server=server, part_size=S3A_PART_SIZE,
                    small_commit_requests={"PutObject": 1} if promises_cost else None,
                    conditional_writes=manager_class == SHIM, store_check=manager_class == SHIM,
                    probe_rule=manager_class == SHIM,
                    open_unseen_heads=1, open_own_large_heads=s3a_heads_given_length(),
                    no_cost_promise="Spark's own manager makes no promise about request counts (docs/spark.md "
                                    "measures them per micro-batch)")

    return make


SHIM = "io.checkpointfs.spark.DirectWriteCheckpointFileManager"


def sdk_v1() -> bool:
    """Whether the running line's S3A speaks AWS SDK v1 (Hadoop 3.3: Spark 3.5)."""
    return tuple(int(p) for p in running_line().hadoop.split("."))[:2] < (3, 4)


def s3a_heads_given_length() -> int:
    """HeadObject requests S3A sends before its GET when ``openFile()`` is given the file's length
    (``fs.option.openfile.length``) but not its ETag, with each line's default input stream: Hadoop 3.3.4 ignores
    the option (1); Hadoop 3.4's classic stream uses it (0); Hadoop 3.5's default ``analytics`` stream takes the
    length only together with an ETag (1)."""
    hadoop = tuple(int(p) for p in running_line().hadoop.split("."))
    return 0 if (3, 3, 5) <= hadoop < (3, 5, 0) else 1

JVM_FACTORIES: dict[str, CaseFactory] = {
    "jvm-shim": _jvm("jvm-shim", SHIM, promises_cost=True),
    **{f"jvm-shim|{profile}": _jvm(f"jvm-shim|{profile}", SHIM, promises_cost=True, profile=profile)
       for profile in DIRECTORY_BUCKET_PROFILES},
    "spark-filecontext-s3a": _jvm("spark-filecontext-s3a", FILE_CONTEXT_MANAGER, promises_cost=False),
    "spark-filesystem-s3a": _jvm("spark-filesystem-s3a", FILE_SYSTEM_MANAGER, promises_cost=False),
    "spark-abortable-s3a": _jvm("spark-abortable-s3a", ABORTABLE_STREAM_MANAGER, promises_cost=False),
}

_RENAME_RACE = ("a create without overwrite is a check (exists) then an S3A rename, which is a COPY that replaces "
                "whatever is there: concurrent creators all pass the check, several are told they won, and the last "
                "copy decides the content")
_LIST_MISSING = ("list() of a missing directory raises FileNotFoundException (S3A listStatus); Spark's callers "
                 "check exists() first")

JVM_EXPECTED_FAILURES: dict[tuple[str, str], str] = {
    ("spark-filecontext-s3a", "test_concurrent_creators_one_winner"): _RENAME_RACE,
    ("spark-filesystem-s3a", "test_concurrent_creators_one_winner"): _RENAME_RACE,
    ("spark-abortable-s3a", "test_concurrent_creators_one_winner"):
        "its put-if-absent is an exists() check before close, then an unconditional PUT, and close() catches and "
        "only logs every failure: all concurrent creators are told they won and the last PUT decides the content",
    ("spark-filecontext-s3a", "test_list_of_missing_or_empty_directory_is_empty"): _LIST_MISSING,
    ("spark-filesystem-s3a", "test_list_of_missing_or_empty_directory_is_empty"): _LIST_MISSING,
    ("spark-abortable-s3a", "test_list_of_missing_or_empty_directory_is_empty"): _LIST_MISSING,
    ("spark-filesystem-s3a", "test_overwrite_replaces"):
        "with overwriteIfPossible=true, S3A's FileSystem.rename refuses an existing destination (returns false) and "
        "Spark ignores that because the destination exists: the overwrite is silently lost, the old file stays",
    ("spark-abortable-s3a", "test_cancel_leaves_existing_file_unchanged[spark-abortable-s3a-False]"):
        "createAtomic without overwrite probes the path (HEAD) and fails at create, not at close, when the file "
        "exists (allowed by the contract, but a write that is then cancelled cannot even start)",
}
if sdk_v1():
    JVM_EXPECTED_FAILURES.update({
        (f"jvm-shim|{profile}", "test_delete_file_directory_and_absent"):
            "the delete of a directory is S3A's bulk delete, and AWS SDK v1 sends Content-MD5 with every "
            "DeleteObjects, which the directory-bucket profile refuses (400 InvalidRequest); whether a real "
            "directory bucket refuses it is not confirmed"
        for profile in DIRECTORY_BUCKET_PROFILES})
"""(case id, test name) -> why Spark's own manager fails that test on s3a:// (docs/spark.md carries the table)."""
