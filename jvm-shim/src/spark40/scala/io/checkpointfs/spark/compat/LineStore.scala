package io.checkpointfs.spark.compat

import org.apache.hadoop.fs.{FileSystem, Path}

import io.checkpointfs.spark.store.Registry
import io.checkpointfs.spark.store.s3.{S3A, S3Store, SdkV2Uploader}

/**
 * Spark 4.0 (Hadoop 3.4.1, AWS SDK v2 2.24): S3A has no conditional create, so the shim sends PutObject and
 * CompleteMultipartUpload with `If-None-Match: *` itself, through the S3 client S3A configured ([[SdkV2Uploader]]).
 */
private[spark] object LineStore {
  val PutIfAbsent = "the shim's own If-None-Match: * PutObject / CompleteMultipartUpload (S3A's AWS SDK v2 client)"

  def open(fs: FileSystem, path: Path): Option[Registry.Opened] =
    if (!S3A.isS3A(fs)) None
    else {
      S3Store.requireConditionalWrites(fs, path, PutIfAbsent)
      Some(S3Store.ownRequests(fs, SdkV2Uploader(fs), PutIfAbsent))
    }

  /** abfs[s]:// is written directly from Spark 4.1 (hadoop-azure 3.4.2+) only. */
  def openAzure(fs: FileSystem): Either[Registry.Delegation, Registry.Opened] =
    Left(Registry.Delegation("Spark 4.0 ships hadoop-azure 3.4.1, whose ABFS " +
      "reaches a flat-namespace account only through the DFS endpoint, and whose WASB " +
      "(the Blob endpoint) has no create the shim can drive; checkpointfs writes abfs:// directly from Spark 4.1 " +
      "(hadoop-azure 3.4.2 and later)", meant = false))
}
