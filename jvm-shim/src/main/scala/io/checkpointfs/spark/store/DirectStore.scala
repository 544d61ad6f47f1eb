package io.checkpointfs.spark
package store

import java.io.FileNotFoundException
import java.time.Instant


import org.apache.hadoop.fs.{FileStatus, FileSystem, FSDataOutputStream, Path}

/**
 * How one Spark line writes a checkpoint file straight to its final key with put-if-absent. Each jar group's
 * `compat.LineStore` picks the implementation its Hadoop allows: S3A's own conditional create (Hadoop 3.4.2+), or
 * [[OwnConditionalWriteStore]] sending the conditional requests through S3A's S3 client (Hadoop 3.3.4, 3.4.1).
 */
private[spark] trait DirectStore {

  /** A stream whose `close()` publishes the whole file (conditional unless `overwrite`); Hadoop `Abortable`. */
  def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream

  /** The write id stamped on the object at `path`: None when absent, Some("") when it has none. */
  def readWriteId(path: Path): Option[String]

  /** Whether `out` (from [[create]]) started a multipart upload, so a retried request may have left one open. */
  def startedMultipart(out: FSDataOutputStream): Boolean

  /** The open multipart uploads of exactly `key`: (upload id, initiation time when known). */
  def listUploads(key: String): Seq[(String, Option[Instant])]

  /** Abort one multipart upload; FileNotFoundException when it is gone. */
  def abortUpload(key: String, uploadId: String): Unit

  /** Local files up to this many bytes can be sent with [[putFile]] (0: none). */
  def putFileLimit: Long

  /** One PutObject of the local `file` at `path`, read from the file, replacing what is there, `writeId` in its
   * user metadata. */
  def putFile(path: Path, file: java.io.File, writeId: String): Unit

  /** The shim's own requests on this store's bucket, through S3A's S3 client (the store check sends them). */
  def requests: ConditionalUploader

  /** The store checks of a put-if-absent: (before the first write, before the first one past [[putFileLimit]]). */
  def storeChecks: (StoreCheck.Kind, StoreCheck.Kind) = (StoreCheck.PutObject, StoreCheck.Multipart)

  /** Whether a file is at `path`, with the store's own one-request probe; None: use the file system's. */
  def probeFile(path: Path): Option[Boolean] = None

  /**
   * Whether a file or a directory is at `path` (the full probe: a file request, then a listing when no file is
   * there), with the store's own requests; None: use the file system's `exists`.
   */
  def probePath(path: Path): Option[Boolean] = None

  /** The files and directories directly below `dir` with the store's own listing; None: use the file system's. */
  def listDirectory(dir: Path): Option[Array[FileStatus]] = None

  /** Whether [[readListed]] reads the file a listing showed as `status` (with one request). */
  def readsListed(status: FileStatus): Boolean = false

  /** The whole file a listing showed as `status`, as it was then; None when it holds another length; an
   * IOException when it changed or went away since. */
  def readListed(status: FileStatus): Option[Array[Byte]] = None

  /**
   * Delete the file at `path` (no error when absent) with the store's own request, `listed` its status from a
   * listing when known; false: use the file system.
   */
  def deleteFile(path: Path, listed: Option[FileStatus]): Boolean = false
}

private[spark] object DirectStore {
  /** S3A's setting that turns conditional creates on or off; honoured on every line. */
  val ConditionalEnabledKey = "fs.s3a.create.conditional.enabled"

  /** The object key of `path` on its bucket. */
  def keyOf(path: Path): String = path.toUri.getPath.stripPrefix("/")

  def parentOf(key: String): String = key.lastIndexOf('/') match {
    case -1 => ""
    case i => key.substring(0, i)
  }
}
