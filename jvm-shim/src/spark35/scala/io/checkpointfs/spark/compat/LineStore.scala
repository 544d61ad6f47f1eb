package io.checkpointfs.spark.compat

import org.apache.hadoop.fs.{FileSystem, Path}

import io.checkpointfs.spark.store.DirectStore
import io.checkpointfs.spark.store.s3.{OwnConditionalWriteStore, S3A, SdkV1}

/**
 * Spark 3.5 (Hadoop 3.3.4, AWS SDK v1): S3A has no conditional create, so the shim sends PutObject and
 * CompleteMultipartUpload with `If-None-Match: *` itself, through the S3 client S3A configured, every request built
 * by S3A's own request factory.
 */
private[spark] object LineStore {
  val PutIfAbsent = "the shim's own If-None-Match: * PutObject / CompleteMultipartUpload (S3A's AWS SDK v1 client)"

  def open(fs: FileSystem, path: Path): Option[DirectStore] =
    if (!S3A.isS3A(fs)) None
    else {
      OwnConditionalWriteStore.requireConditionalWrites(fs, path, PutIfAbsent)
      Some(SdkV1.store(fs))
    }

  /** abfs[s]:// is written directly from Spark 4.1 (hadoop-azure 3.4.2+) only. */
  def openAzure(fs: FileSystem): Either[String, DirectStore] =
    Left("Spark 3.5 ships hadoop-azure 3.3.4, whose ABFS reaches a flat-namespace account only through the DFS endpoint, and whose WASB " +
      "(the Blob endpoint) has no create the shim can drive; checkpointfs writes abfs:// directly from Spark 4.1 " +
      "(hadoop-azure 3.4.2 and later)")
}
