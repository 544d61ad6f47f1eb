package io.checkpointfs.spark.compat

import org.apache.hadoop.fs.{FileSystem, Path}

import io.checkpointfs.spark.store.Registry
import io.checkpointfs.spark.store.azure.AzureDirectStore
import io.checkpointfs.spark.store.s3.{CheckpointWriteFileSystem, S3AConditionalCreate, S3Store, SdkV2Uploader}

/**
 * Spark 4.1 and later (Hadoop 3.4.2+): a checkpoint file up to the checkpoint part size is one PutObject with
 * `If-None-Match: *`, sent by the shim through S3A's S3 client ([[SdkV2Uploader]], as on Spark 4.0); a larger one
 * goes through S3A's own conditional create on the checkpoint-write instance ([[CheckpointWriteFileSystem]]:
 * parallel block uploads).
 */
private[spark] object LineStore {
  /** How this jar sends put-if-absent (for logs and messages). */
  val PutIfAbsent = "the shim's own If-None-Match: * PutObject (S3A's AWS SDK v2 client) up to the part size, " +
    "S3A conditional create (If-None-Match: *) above it"

  /**
   * The direct-write store for `fs` when it is S3A (None otherwise); refuses when put-if-absent is off.
   */
  def open(fs: FileSystem, path: Path): Option[Registry.Opened] =
    if (!S3AConditionalCreate.available(fs, path)) None
    else {
      val write = CheckpointWriteFileSystem(fs)
      Some(S3Store.smallPuts(fs, write, SdkV2Uploader(write), PutIfAbsent))
    }

  /**
   * abfs[s]:// on a flat-namespace account over the Blob endpoint, with a Shared Key: the shim's own Blob requests
   * ([[AzureDirectStore]]); Left(why) otherwise.
   */
  def openAzure(fs: FileSystem): Either[Registry.Delegation, Registry.Opened] = AzureDirectStore.open(fs)
}
