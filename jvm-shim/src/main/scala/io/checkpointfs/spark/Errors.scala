package io.checkpointfs.spark

import java.io.IOException

import org.apache.hadoop.fs.Path

/**
 * A write whose outcome could not be decided: the object may or may not become visible. Never success, never a
 * conflict. The Python side maps it to `checkpointfs.errors.WriteOutcomeUnknownError`.
 */
class WriteOutcomeUnknownException(val path: Path, message: String, cause: Throwable)
  extends IOException(s"$path: $message", cause)

/**
 * A cancel that could not be completed: partial data may be visible at the path. Fatal for the writer.
 * The Python side maps it to `checkpointfs.errors.AbortFailedError`.
 */
class AbortFailedException(val path: Path, message: String, cause: Throwable)
  extends IOException(s"$path: $message", cause)

/**
 * The manager cannot work with the file system of the checkpoint path as configured (missing hadoop-aws, a store
 * without conditional writes, a scheme with neither atomic rename nor conditional create). The message says what
 * to fix.
 */
class CheckpointStoreConfigException(message: String, cause: Throwable) extends IOException(message, cause) {
  def this(message: String) = this(message, null)
}

/**
 * A store that accepted a second put-if-absent of the same key: it ignores conditional writes, so two writers of
 * one checkpoint would both "win". Nothing of the checkpoint was written. The Python side maps it to
 * `checkpointfs.errors.UnsafeStoreError`.
 */
class UnsafeStoreException(message: String) extends CheckpointStoreConfigException(message)

/**
 * The bucket (S3, GCS) or container (Azure) a checkpoint path names does not exist: the store answered so (S3's
 * `NoSuchBucket`, Azure's `ContainerNotFound`), or answered 404 to a write (GCS). The message starts with the path and
 * says so. The Python side maps it to `checkpointfs.errors.BucketNotFoundError` (protocol.json's answer table).
 */
class BucketNotFoundException(message: String, cause: Throwable) extends IOException(message, cause)

/**
 * The store refused the credentials a request was signed with (401 or 403: a wrong, expired or revoked key, or one
 * without permission on the bucket). A `java.nio.file.AccessDeniedException`, as S3A's own refusals are, so the
 * Python side maps it to `checkpointfs.errors.AccessDeniedError`; its message is "<path>: the store refused ...".
 */
class CredentialsRefusedException(path: String, reason: String, cause: Throwable)
  extends java.nio.file.AccessDeniedException(path, null, reason) {
  initCause(cause)
}
