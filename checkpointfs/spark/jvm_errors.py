"""Which contract error a Java exception stands for, without a JVM: the shim's and Hadoop's own contract exceptions
map to their kinds directly; store failures (S3A's, the JDK's network ones) are classified by the protocol's answer
table (``protocol.json``: the rules' ``jvm_classes``, the transports' ``jvm`` names, the HTTP status), whose class
names the error; a connector's class that is not on the class path (Hadoop's ``ClassNotFoundException``,
``NoClassDefFoundError``) becomes the documented start-up error naming the connector's jar
(:func:`missing_connector`). :class:`~checkpointfs.spark.jvm_manager.JvmCheckpointFileManager` applies them to each
exception of a py4j failure's cause chain."""

from __future__ import annotations

from .. import errors, protocol
from ..errors import (
    AbortFailedError,
    AccessDeniedError,
    CheckpointFsError,
    FileAlreadyExistsError,
    InvalidPathError,
    UnsafeStoreError,
    WriteOutcomeUnknownError,
)

__all__ = ["CONNECTOR_PACKAGES", "CONTRACT_KINDS", "S3A_STORE_FAILURE", "STATUS_METHODS", "classify_jvm",
           "missing_connector"]

# The contract's own JVM exceptions (the shim's and Hadoop's file system API's) -> error kinds, most specific first.
# A class matches when the exception is an instance of it (its own class or a superclass). Store failures are not
# here: they are classified by the protocol's answer table (classify_jvm).
CONTRACT_KINDS: tuple[tuple[str, type[CheckpointFsError]], ...] = (
    ("io.checkpointfs.spark.WriteOutcomeUnknownException", WriteOutcomeUnknownError),
    ("io.checkpointfs.spark.AbortFailedException", AbortFailedError),
    ("io.checkpointfs.spark.UnsafeStoreException", UnsafeStoreError),
    ("io.checkpointfs.spark.CheckpointStoreConfigException", InvalidPathError),
    ("org.apache.hadoop.fs.FileAlreadyExistsException", FileAlreadyExistsError),
    ("java.nio.file.FileAlreadyExistsException", FileAlreadyExistsError),
    ("org.apache.hadoop.security.AccessControlException", AccessDeniedError),
    ("org.apache.hadoop.fs.UnsupportedFileSystemException", InvalidPathError),
    ("java.lang.IllegalArgumentException", InvalidPathError),
)
S3A_STORE_FAILURE = "org.apache.hadoop.fs.s3a.AWSClientIOException"
"""S3A's base of a failed request to the store (its service exceptions, throttled, status 500, ... extend it):
classified by the table even when no rule names it (the default of its status range, or of no answer)."""
STATUS_METHODS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("org.apache.hadoop.fs.s3a.AWSServiceIOException", ("statusCode", "getStatusCode")),
    ("software.amazon.awssdk.core.exception.SdkServiceException", ("statusCode",)),
    ("com.amazonaws.AmazonServiceException", ("getStatusCode",)),
)
"""Java exceptions that carry the store's HTTP status, and the method giving it (Hadoop 3.4 / AWS SDK v2 name it
``statusCode``, Hadoop 3.3 / SDK v1 ``getStatusCode``)."""


def classify_jvm(types: tuple[str, ...], status: int = 0) -> type[CheckpointFsError] | None:
    """The error kind of one Java exception, from the qualified names of its class and superclasses (``types``)
    and the HTTP ``status`` it carries (0: none): a contract exception's own kind; for a store failure (a status,
    a class the answer table or its transports name, or an S3A request failure) the ``error`` of its class in the
    protocol's table; None for anything else."""
    for class_name, kind in CONTRACT_KINDS:
        if class_name in types:
            return kind
    answer = protocol.RULES.jvm_answer(types, status=status)
    if status or answer.transport is not None or S3A_STORE_FAILURE in types or protocol.RULES.match(answer):
        return errors.error_type(protocol.classify(answer).error)
    return None


CONNECTOR_PACKAGES: tuple[tuple[str, str], ...] = (
    ("org.apache.hadoop.fs.s3a.", "hadoop-aws-{hadoop}.jar (the same version as the Hadoop that Spark ships) and the "
                                  "AWS SDK jars it needs"),
    ("org.apache.hadoop.fs.azurebfs.", "hadoop-azure-{hadoop}.jar (the same version as the Hadoop that Spark ships) "
                                       "and the jars it needs beside Spark"),
    ("com.google.cloud.hadoop.fs.gcs.", "Google's gcs-connector (its shaded jar)"),
)
"""The package of each connector's file system classes, and the jar that brings them."""
MISSING_CLASS = ("java.lang.ClassNotFoundException", "java.lang.NoClassDefFoundError")
"""The JVM's failures to find a class: Hadoop raises them (a ``ClassNotFoundException`` inside a
``RuntimeException``) for a file system whose jar is missing."""


def missing_connector(types: tuple[str, ...], message: str, hadoop: str) -> str | None:
    """The documented start-up message for one Java exception (its class and superclasses ``types``, its
    ``message``) when it says a connector's class is missing: what ``CheckpointStoreConfigException`` says for it,
    naming the jar to add to ``spark.jars`` (at Spark's Hadoop version ``hadoop`` where it must match). None for
    anything else. Hadoop's own wording (``Class org.apache.hadoop.fs.s3a.S3AFileSystem not found``, or the class as
    a path: ``org/apache/hadoop/fs/s3a/S3AFileSystem``) is recognised in a ``RuntimeException``'s message too."""
    if not any(t in types for t in MISSING_CLASS) and not any(t in message for t in MISSING_CLASS):
        return None
    named = message.replace("/", ".")
    for package, jar in CONNECTOR_PACKAGES:
        if package in named:
            missing = named[named.index(package):].split()[0].rstrip(".,;:")
            return (f"the class {missing} is not on the class path: add {jar.format(hadoop=hadoop)} to spark.jars "
                    "(checkpointfs.spark.configure() does this)")
    return None
