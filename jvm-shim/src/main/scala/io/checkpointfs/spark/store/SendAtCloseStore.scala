package io.checkpointfs.spark
package store

import java.time.Instant

import org.apache.hadoop.fs.{FSDataOutputStream, Path}

/** An uploader that sends a whole file at close: one request for a small one, its own large upload otherwise. */
private[spark] trait SendAtCloseUploader extends ConditionalUploader {
  /** The local `file` of `len` bytes as one object (the store's large upload); conditional when `ifNoneMatch`. */
  def putLarge(key: String, file: java.io.File, len: Long, ifNoneMatch: Boolean, writeId: String): Unit
}

/**
 * What the stores without an abortable multipart upload share (GCS, Azure Blob): nothing is sent before `close()`
 * ([[SpillingUploadStream]] holds up to `threshold` bytes in memory, then spills to a local file), a file up to
 * `threshold` is one request and a larger one the uploader's `putLarge`; so a cancel sends nothing and no upload is
 * ever left open to list or abort.
 */
private[spark] abstract class SendAtCloseStore[U <: SendAtCloseUploader](val uploader: U, threshold: Int)
  extends DirectStore {

  override def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream = {
    val key = DirectStore.keyOf(path)
    new FSDataOutputStream(new SpillingUploadStream(path, threshold,
      (bytes, len) => uploader.put(key, bytes, len, !overwrite, writeId),
      (file, len) => uploader.putLarge(key, file, len, !overwrite, writeId)), null)
  }

  override def readWriteId(path: Path): Option[String] = uploader.writeId(DirectStore.keyOf(path))

  override def startedMultipart(out: FSDataOutputStream): Boolean = false

  override def listUploads(key: String): Seq[(String, Option[Instant])] = Nil

  override def abortUpload(key: String, uploadId: String): Unit = ()

  override def putFileLimit: Long = threshold.toLong

  override def putFile(path: Path, file: java.io.File, writeId: String): Unit =
    uploader.putFile(DirectStore.keyOf(path), file, writeId)

  override def requests: ConditionalUploader = uploader
}
