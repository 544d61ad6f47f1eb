package io.checkpointfs.spark
package store

import java.io.{BufferedOutputStream, ByteArrayOutputStream, File, FileOutputStream, IOException, OutputStream}
import java.nio.file.Files

import org.apache.hadoop.fs.{Abortable, Path}

/**
 * A stream that sends nothing until `close()`, for stores whose upload cannot be cancelled once begun (Google's
 * connector): the bytes are kept in memory up to `threshold`, then, for a larger file, in a local temporary file
 * (so memory stays bounded whatever the size). `close()` sends them with `sendBytes(bytes, len)` or
 * `sendFile(file, len)`; the temporary file is deleted whatever happens. `abort()` (and `close()` after it) sends
 * nothing: a cancel costs no request and exposes nothing. `flush()`, `hflush()` and `hsync()` send nothing either.
 */
private[spark] final class SpillingUploadStream(
    path: Path,
    threshold: Int,
    sendBytes: (Array[Byte], Int) => Unit,
    sendFile: (File, Long) => Unit,
    tempDir: Option[File] = None)
  extends Upload {

  private final class Buffer extends ByteArrayOutputStream(math.min(threshold, 4 * 1024)) {
    def bytes: Array[Byte] = buf
  }

  private var buffer: Buffer = new Buffer
  private var spillFile: File = _
  private var spill: OutputStream = _
  private var length = 0L
  private var closed = false

  /** The local file the bytes went to, once the file outgrew memory (for tests). */
  def spilledTo: Option[File] = Option(spillFile)

  override def write(b: Int): Unit = {
    checkOpen()
    if (spill == null && buffer.size + 1 > threshold) startSpill()
    if (spill != null) spill.write(b) else buffer.write(b)
    length += 1
  }

  override def write(b: Array[Byte], off: Int, len: Int): Unit = {
    checkOpen()
    if (spill == null && buffer.size.toLong + len > threshold) startSpill()
    if (spill != null) spill.write(b, off, len) else buffer.write(b, off, len)
    length += len
  }

  private def checkOpen(): Unit = if (closed) throw new IOException(s"$path: the stream is closed")

  /** Continue in a local temporary file, starting with the bytes kept so far. */
  private def startSpill(): Unit = {
    val file = tempDir match {
      case Some(dir) => Files.createTempFile(dir.toPath, "checkpointfs-upload-", ".tmp").toFile
      case None => Files.createTempFile("checkpointfs-upload-", ".tmp").toFile
    }
    spillFile = file
    try {
      spill = new BufferedOutputStream(new FileOutputStream(file), 1024 * 1024)
      spill.write(buffer.bytes, 0, buffer.size)
      buffer = null
    } catch {
      case e: Throwable =>
        discard()
        throw e
    }
  }

  override def close(): Unit = {
    if (closed) return
    closed = true
    try {
      if (spill == null) sendBytes(buffer.bytes, buffer.size)
      else {
        spill.close()
        spill = null
        sendFile(spillFile, length)
      }
    } finally discard()
  }

  /** Drop the bytes: the buffer, and the temporary file (closed and deleted). */
  private def discard(): Unit = {
    buffer = null
    if (spill != null) {
      try spill.close()
      catch { case _: IOException => () }
      spill = null
    }
    if (spillFile != null) {
      Files.deleteIfExists(spillFile.toPath)
      spillFile = null
    }
  }

  override def abort(): Abortable.AbortableResult = {
    val wasClosed = closed
    closed = true
    discard()
    Upload.aborted(wasClosed)
  }

  /** Nothing is sent before `close()`, and then as one object: never a multipart upload to list or abort. */
  override def startedMultipart: Boolean = false

  override def toString: String = s"SpillingUploadStream($path, $length bytes${if (spill != null) ", spilled" else ""})"
}
