"""The JVM manager's translation without a JVM: the shim's contract exceptions map to their kinds directly, store
failures from S3A and the JDK go through the protocol's answer table, anything else is left to StoreError."""

from __future__ import annotations

import pytest

from checkpointfs.errors import (
    AbortFailedError,
    AccessDeniedError,
    BucketNotFoundError,
    CheckpointFsError,
    FileAlreadyExistsError,
    InvalidPathError,
    PathNotFoundError,
    StoreError,
    StoreUnavailableError,
    WriteOutcomeUnknownError,
)
from checkpointfs.spark.jvm_errors import classify_jvm, missing_connector

IOE = ("java.io.IOException", "java.lang.Exception", "java.lang.Throwable", "java.lang.Object")
S3A = ("org.apache.hadoop.fs.s3a.AWSServiceIOException", "org.apache.hadoop.fs.s3a.AWSClientIOException", *IOE)
SHIM = "io.checkpointfs.spark."


@pytest.mark.parametrize(("types", "status", "kind"), [
    ((SHIM + "WriteOutcomeUnknownException", *IOE), 0, WriteOutcomeUnknownError),
    ((SHIM + "AbortFailedException", *IOE), 0, AbortFailedError),
    ((SHIM + "CheckpointStoreConfigException", *IOE), 0, InvalidPathError),
    (("org.apache.hadoop.fs.FileAlreadyExistsException", *IOE), 0, FileAlreadyExistsError),
    (("java.lang.IllegalArgumentException", "java.lang.RuntimeException", *IOE[1:]), 0, InvalidPathError),
    (("org.apache.hadoop.fs.UnsupportedFileSystemException", *IOE), 0, InvalidPathError),
    (("org.apache.hadoop.security.AccessControlException", *IOE), 0, AccessDeniedError),
    # store failures, by the table
    (("org.apache.hadoop.fs.s3a.UnknownStoreException", *IOE), 0, BucketNotFoundError),
    (("java.nio.file.AccessDeniedException", "java.nio.file.FileSystemException", *IOE), 0, AccessDeniedError),
    (("java.io.FileNotFoundException", *IOE), 0, PathNotFoundError),
    (("org.apache.hadoop.fs.s3a.AWSServiceThrottledException", *S3A), 503, StoreUnavailableError),
    (("org.apache.hadoop.fs.s3a.AWSStatus500Exception", *S3A), 500, StoreUnavailableError),
    (("org.apache.hadoop.fs.s3a.AWSBadRequestException", *S3A), 400, StoreError),
    (("org.apache.hadoop.fs.s3a.RemoteFileChangedException", "org.apache.hadoop.fs.PathIOException", *IOE), 0,
     FileAlreadyExistsError),
    (("org.apache.hadoop.fs.s3a.AWSClientIOException", *IOE), 0, StoreUnavailableError),
    (("java.net.ConnectException", "java.net.SocketException", *IOE), 0, StoreUnavailableError),
    (("java.net.SocketTimeoutException", "java.io.InterruptedIOException", *IOE), 0, StoreUnavailableError),
])
def test_kinds(types: tuple[str, ...], status: int, kind: type[CheckpointFsError]) -> None:
    assert classify_jvm(types, status) is kind


def test_contract_exception_wins_over_the_table() -> None:
    """The shim's verdict on a write stands, whatever store failure it carries."""
    types = (SHIM + "WriteOutcomeUnknownException", "java.net.SocketTimeoutException", *IOE)
    assert classify_jvm(types) is WriteOutcomeUnknownError


@pytest.mark.parametrize("types", [IOE, ("java.lang.IllegalStateException", "java.lang.RuntimeException", *IOE[1:]),
                                   ("com.example.AccessDeniedException", *IOE)])
def test_other_exceptions_are_left_to_the_caller(types: tuple[str, ...]) -> None:
    assert classify_jvm(types) is None


LINKAGE = ("java.lang.NoClassDefFoundError", "java.lang.LinkageError", "java.lang.Error", "java.lang.Throwable")


@pytest.mark.parametrize(("types", "message", "jar"), [
    # S3A's class loaded as the superclass of the shim's CheckpointS3AFileSystem: the JVM names it as a path
    (LINKAGE, "org/apache/hadoop/fs/s3a/S3AFileSystem", "hadoop-aws-3.5.0.jar"),
    (("java.lang.ClassNotFoundException", *IOE[1:]), "org.apache.hadoop.fs.s3a.S3AFileSystem", "hadoop-aws-3.5.0.jar"),
    # Hadoop's Configuration.getClass: the ClassNotFoundException inside a RuntimeException's message
    (("java.lang.RuntimeException", *IOE[1:]),
     "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found",
     "hadoop-aws-3.5.0.jar"),
    (LINKAGE, "org/apache/hadoop/fs/azurebfs/AzureBlobFileSystem", "hadoop-azure-3.5.0.jar"),
    (("java.lang.ClassNotFoundException",), "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
     "Google's gcs-connector"),
])
def test_a_missing_connector_class_names_its_jar(types: tuple[str, ...], message: str, jar: str) -> None:
    said = missing_connector(types, message, "3.5.0")
    assert said is not None and f"add {jar}" in said and said.startswith("the class "), said


@pytest.mark.parametrize(("types", "message"), [
    (LINKAGE, "org/example/Other"),  # a class of no connector
    (IOE, "org.apache.hadoop.fs.s3a.S3AFileSystem: 403"),  # an S3A failure, not a missing class
])
def test_other_failures_are_no_missing_connector(types: tuple[str, ...], message: str) -> None:
    assert missing_connector(types, message, "3.5.0") is None
