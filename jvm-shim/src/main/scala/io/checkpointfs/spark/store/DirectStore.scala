package io.checkpointfs.spark
package store

import java.io.OutputStream
import java.time.Instant
import java.util.Locale

import org.apache.hadoop.fs.{Abortable, FileStatus, FSDataInputStream, Path, StreamCapabilities}

/**
 * The object store a checkpoint is written to directly, as the direct manager uses it (Python's
 * `checkpointfs.store.base.ObjectStore`): every member is the store's own, with no "use the file system's" answer.
 * A store is opened by its folder ([[Registry]]); behaviour is added by wrapping a store in another ([[CheckedStore]],
 * the store check). Failures are the IOExceptions the store's client raises, which [[Failures]] sorts by
 * protocol.json's answer table.
 *
 * Writes: [[create]] (put-if-absent unless overwriting: one request for a file up to the store's part size, its
 * parts and one conditional completion above it, all from the [[Upload]]'s `close()`), [[put]] (a local file, one
 * request), and the housekeeping of multipart uploads a retried request may have left open ([[uploads]], [[abort]]).
 * Reads: [[head]] (the write id that settles an ambiguous answer), [[exists]], [[list]], [[open]], [[readListed]].
 * [[delete]]. And what the store is: [[describe]], [[identity]].
 */
private[spark] trait DirectStore {

  /** How this store sends put-if-absent, for the start line of a checkpoint root. */
  def describe: String

  /** The endpoint and bucket the store's requests go to: messages, and the store check's memory of verdicts. */
  def identity: StoreIdentity

  /**
   * The file `path` on its way to the store: `close()` publishes it whole, with `writeId` in its metadata,
   * conditionally (put-if-absent) unless `overwrite`; `abort()` publishes nothing.
   */
  def create(path: Path, overwrite: Boolean, writeId: String): Upload

  /**
   * One request of the local `file` at `path`, read from the file, replacing what is there, `writeId` in its
   * metadata; false, with nothing sent, when the file is larger than one request of this store.
   */
  def put(path: Path, file: java.io.File, writeId: String): Boolean

  /** The open multipart uploads of exactly `path`'s key: (upload id, initiation time when known). */
  def uploads(path: Path): Seq[(String, Option[Instant])]

  /** Abort one multipart upload of `path`; FileNotFoundException when it is gone. */
  def abort(path: Path, uploadId: String): Unit

  /** The write id stamped on the object at `path`: None when absent, Some("") when it has none. */
  def head(path: Path): Option[String]

  /**
   * What the store kept of the object at `path` to settle a lost answer by ([[Settle.ownerOf]]): its write id, and
   * where the store keeps no user metadata, the checksum and size (None when absent).
   */
  def kept(path: Path): Option[Kept] = head(path).map(Kept(_, "", -1L))

  /**
   * Whether a file is at `path` (`file`: the path is named as Spark names only files, one request), or a file or a
   * directory (the full probe: a file request, then a listing when no file is there).
   */
  def exists(path: Path, file: Boolean): Boolean

  /** The files and directories directly below `dir`; empty when there are none. */
  def list(dir: Path): Array[FileStatus]

  /** The file at `path` for reading, `length` its length when known (so that no request asks for it). */
  def open(path: Path, length: Option[Long]): FSDataInputStream

  /**
   * How to read, with one request, the whole file a listing showed as `status`, as it was then (None: this store
   * cannot, and the file is opened afresh). The read gives None when the file holds another length, and fails
   * (an IOException) when it changed or went away since.
   */
  def readListed(status: FileStatus): Option[() => Option[Array[Byte]]]

  /**
   * Delete what is at `path`, with no error when nothing is: a file with the store's one request where it has one
   * (`file`: named as Spark names only files, not a directory seen; `listed`: its status from a listing), else the
   * file or the directory and everything below it.
   */
  def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit
}

/**
 * The identity of a store in messages and in the JVM's memory of store-check verdicts: its endpoint, and its bucket
 * (`noun`: what the store calls one, "container" on Azure).
 */
private[spark] final case class StoreIdentity(endpoint: String, bucket: String, noun: String = "bucket") {
  def shown: String = s"$noun '$bucket' at $where"

  /** The endpoint, for messages. */
  def where: String = if (endpoint.isEmpty) "the default AWS S3 endpoint" else endpoint
}

/**
 * A file on its way to the store ([[DirectStore.create]]): the bytes written to it are published whole by `close()`
 * (or the close fails), or never, after `abort()`.
 */
private[spark] abstract class Upload extends OutputStream with Abortable with StreamCapabilities {

  /** Whether a multipart upload was started, so that a retried request may have left another one open. */
  def startedMultipart: Boolean

  /** What the committing request sent, once `close()` sent it as one request with a checksum (None: not known). */
  def sentAtClose: Option[Sent] = None

  override def hasCapability(capability: String): Boolean =
    capability.toLowerCase(Locale.ROOT) == Upload.AbortableCapability
}

private[spark] object Upload {
  /** Hadoop's stream capability of an abortable output stream. */
  val AbortableCapability = "fs.capability.outputstream.abortable"

  /** The result of an `abort()` that had nothing to clean up. */
  def aborted(wasClosed: Boolean): Abortable.AbortableResult = new Abortable.AbortableResult {
    override def alreadyClosed(): Boolean = wasClosed
    override def anyCleanupException(): java.io.IOException = null
  }
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
