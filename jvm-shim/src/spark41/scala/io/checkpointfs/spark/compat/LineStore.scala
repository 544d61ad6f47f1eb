package io.checkpointfs.spark.compat

import org.apache.hadoop.fs.{FileSystem, Path}

import io.checkpointfs.spark.{CheckpointWriteFileSystem, DirectStore, S3AConditionalCreateStore}

/** Spark 4.1 and later (Hadoop 3.4.2+): put-if-absent is S3A's own conditional create. */
private[spark] object LineStore {
  /** How this jar sends put-if-absent (for logs and messages). */
  val PutIfAbsent = "S3A conditional create (If-None-Match: *)"

  /**
   * The direct-write store for `fs` when it is S3A (None otherwise); refuses when put-if-absent is off. S3A buffers
   * and uploads the files, with the block-upload settings of [[CheckpointWriteFileSystem]].
   */
  def open(fs: FileSystem, path: Path): Option[DirectStore] =
    S3AConditionalCreateStore.open(fs, path).map(_ => new S3AConditionalCreateStore(CheckpointWriteFileSystem(fs)))
}
