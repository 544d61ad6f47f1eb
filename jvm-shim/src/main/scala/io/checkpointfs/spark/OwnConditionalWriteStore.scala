package io.checkpointfs.spark

import java.io.{ByteArrayOutputStream, IOException, OutputStream}
import java.time.Instant
import java.util.Locale

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{Abortable, FileSystem, FSDataOutputStream, Path, StreamCapabilities}
import org.slf4j.LoggerFactory

/**
 * The S3 requests of a direct write, sent through the S3 client S3A configured (its credentials, endpoint, region
 * and SDK retries). Implemented per AWS SDK in each jar group's `compat` package. Failures are IOExceptions, as
 * S3A's `S3AUtils.translateException` makes them (its kinds for throttling, access denied, a missing bucket, 404).
 */
private[spark] trait ConditionalUploader {
  /** PutObject of `data[0, len)` with the write id in user metadata; `If-None-Match: *` when `ifNoneMatch`. */
  def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit
  /** PutObject of the local `file` (read from it, not held in memory), unconditional, the write id in metadata. */
  def putFile(key: String, file: java.io.File, writeId: String): Unit
  /** CreateMultipartUpload with the write id in user metadata; the upload id. */
  def startMultipart(key: String, writeId: String): String
  /** UploadPart; the part's ETag. */
  def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String
  /** CompleteMultipartUpload of `etags` (parts 1..n); `If-None-Match: *` when `ifNoneMatch`. */
  def complete(key: String, uploadId: String, etags: Seq[String], ifNoneMatch: Boolean): Unit
  def abort(key: String, uploadId: String): Unit
  /** HeadObject: the write id in the object's user metadata (None: no object; Some(""): no id). */
  def writeId(key: String): Option[String]
  /** ListMultipartUploads of exactly `key`: (upload id, initiated). */
  def uploads(key: String): Seq[(String, Option[Instant])]
}

/**
 * Put-if-absent where S3A has no conditional create (Hadoop 3.3.4 and 3.4.1): the shim sends the PutObject, or the
 * multipart upload, itself with `If-None-Match: *` on PutObject and CompleteMultipartUpload. A file up to
 * `partSize` bytes (`fs.s3a.multipart.size`) is buffered in memory and costs one PutObject; larger ones become a
 * multipart upload with one part in memory at a time.
 */
private[spark] final class OwnConditionalWriteStore(uploader: ConditionalUploader, partSize: Int) extends DirectStore {

  override def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream =
    new FSDataOutputStream(
      new ConditionalUploadStream(path, DirectStore.keyOf(path), overwrite, writeId, partSize, uploader), null)

  override def readWriteId(path: Path): Option[String] = uploader.writeId(DirectStore.keyOf(path))

  override def startedMultipart(out: FSDataOutputStream): Boolean = out.getWrappedStream match {
    case s: ConditionalUploadStream => s.startedMultipart
    case _ => true
  }

  override def listUploads(key: String): Seq[(String, Option[Instant])] = uploader.uploads(key)

  override def abortUpload(key: String, uploadId: String): Unit = uploader.abort(key, uploadId)

  override def putFileLimit: Long = partSize.toLong

  override def putFile(path: Path, file: java.io.File, writeId: String): Unit =
    uploader.putFile(DirectStore.keyOf(path), file, writeId)
}

private[spark] object OwnConditionalWriteStore {
  private val log = LoggerFactory.getLogger(classOf[OwnConditionalWriteStore])
  val PartSizeKey = "fs.s3a.multipart.size"
  /** S3's smallest part (S3A raises a smaller fs.s3a.multipart.size to it too). */
  val MinPartSize: Long = 5L * 1024 * 1024
  val DefaultPartSize: Long = 64L * 1024 * 1024

  /** The part size S3A would use: `fs.s3a.multipart.size`, at least 5 MiB, at most 2 GiB - 1 (an array). */
  def partSize(conf: Configuration): Int =
    math.min(math.max(conf.getLongBytes(PartSizeKey, DefaultPartSize), MinPartSize), Int.MaxValue - 8).toInt

  /**
   * Refuse at start when put-if-absent was turned off: the shim never writes a checkpoint file unconditionally.
   */
  def requireConditionalWrites(fs: FileSystem, path: Path, how: String): Unit = {
    val enabled = fs.getConf.getTrimmed(DirectStore.ConditionalEnabledKey, "true").toLowerCase(Locale.ROOT)
    if (enabled != "true") {
      throw new CheckpointStoreConfigException(
        s"$path: ${DirectStore.ConditionalEnabledKey}=$enabled, so checkpoint files could be overwritten by a " +
          s"concurrent query; the shim writes them only with put-if-absent ($how). Set " +
          s"${DirectStore.ConditionalEnabledKey}=true, against a store that supports If-None-Match writes.")
    }
    log.info("{}: checkpoint files are written directly with {}", path, how: Any)
  }
}

/** The output stream of [[OwnConditionalWriteStore]]: buffers, then one PutObject or a multipart upload. */
private[spark] final class ConditionalUploadStream(
    path: Path,
    key: String,
    overwrite: Boolean,
    writeId: String,
    partSize: Int,
    uploader: ConditionalUploader)
  extends OutputStream with Abortable with StreamCapabilities {

  private final class Buffer extends ByteArrayOutputStream(math.min(partSize, 64 * 1024)) {
    def bytes: Array[Byte] = buf
  }

  private var buffer = new Buffer
  private var uploadId: String = _
  private val etags = ArrayBuffer.empty[String]
  private var closed = false
  @volatile private var multipart = false

  /** Whether a CreateMultipartUpload was sent. */
  def startedMultipart: Boolean = multipart

  override def write(b: Int): Unit = {
    checkOpen()
    if (buffer.size >= partSize) sendPart()
    buffer.write(b)
  }

  override def write(b: Array[Byte], off: Int, len: Int): Unit = {
    checkOpen()
    var from = off
    var left = len
    while (left > 0) {
      if (buffer.size >= partSize) sendPart()
      val n = math.min(left, partSize - buffer.size)
      buffer.write(b, from, n)
      from += n
      left -= n
    }
  }

  private def checkOpen(): Unit = if (closed) throw new IOException(s"$path: the stream is closed")

  /** Upload the full buffer as the next part (a part is sent only once more data follows it). */
  private def sendPart(): Unit = {
    if (uploadId == null) {
      multipart = true
      uploadId = uploader.startMultipart(key, writeId)
    }
    etags += uploader.uploadPart(key, uploadId, etags.size + 1, buffer.bytes, buffer.size)
    buffer.reset()
  }

  override def close(): Unit = {
    if (closed) return
    closed = true
    try {
      if (uploadId == null) uploader.put(key, buffer.bytes, buffer.size, !overwrite, writeId)
      else {
        try {
          if (buffer.size > 0) sendPart()
          uploader.complete(key, uploadId, etags.toSeq, !overwrite)
        } catch {
          case e: IOException =>
            // A refused complete leaves the upload open (and S3 does not reuse it): abort it. After a complete
            // that was applied, the abort finds nothing.
            abortQuietly(e)
            throw e
        }
      }
    } finally buffer = new Buffer(/* release the data */)
  }

  private def abortQuietly(cause: Throwable): Unit =
    try uploader.abort(key, uploadId)
    catch { case NonFatal(e) => cause.addSuppressed(e) }

  override def abort(): Abortable.AbortableResult = {
    val wasClosed = closed
    closed = true
    buffer = new Buffer
    var cleanup: IOException = null
    if (!wasClosed && uploadId != null) {
      try uploader.abort(key, uploadId)
      catch {
        case _: java.io.FileNotFoundException => ()
        case e: IOException => cleanup = e
      }
    }
    val failure = cleanup
    new Abortable.AbortableResult {
      override def alreadyClosed(): Boolean = wasClosed
      override def anyCleanupException(): IOException = failure
    }
  }

  override def hasCapability(capability: String): Boolean =
    capability.toLowerCase(Locale.ROOT) == "fs.capability.outputstream.abortable"

  override def toString: String = s"ConditionalUploadStream($path, overwrite=$overwrite, writeId=$writeId)"
}
