package io.checkpointfs.spark
package store

import java.time.Instant

import org.apache.hadoop.fs.{FileSystem, Path}

/** An uploader that sends a whole file at close: one request for a small one, its own large upload otherwise. */
private[spark] trait SendAtCloseUploader extends LargeUploadRequests {
  /** The local `file` of `len` bytes as one object (the store's large upload); conditional when `ifNoneMatch`. */
  def putLarge(key: String, file: java.io.File, len: Long, ifNoneMatch: Boolean, writeId: String): Unit
}

/**
 * What the stores without an abortable multipart upload share (GCS, Azure Blob): nothing is sent before `close()`
 * ([[SpillingUploadStream]] holds up to `threshold` bytes in memory, then spills to a local file), a file up to
 * `threshold` is one request and a larger one the uploader's `putLarge`; so a cancel sends nothing and no upload is
 * ever left open to list or abort. The write id is read back with the uploader's request; the rest goes through the
 * file system `fs` unless the store replaces it.
 */
private[spark] abstract class SendAtCloseStore[U <: SendAtCloseUploader](fs: FileSystem, val uploader: U,
    threshold: Int) extends FileSystemStore(fs) {

  override def create(path: Path, overwrite: Boolean, writeId: String): Upload = {
    val key = DirectStore.keyOf(path)
    new SpillingUploadStream(path, threshold,
      (bytes, len) => uploader.put(key, bytes, len, !overwrite, writeId),
      (file, len) => uploader.putLarge(key, file, len, !overwrite, writeId))
  }

  override def put(path: Path, file: java.io.File, writeId: String): Boolean =
    file.length <= threshold && {
      uploader.putFile(DirectStore.keyOf(path), file, writeId)
      true
    }

  override def uploads(path: Path): Seq[(String, Option[Instant])] = Nil

  override def abort(path: Path, uploadId: String): Unit = ()

  override def head(path: Path): Option[String] = uploader.writeId(DirectStore.keyOf(path))
}
