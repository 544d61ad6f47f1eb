package io.checkpointfs.spark
package store
package s3

import java.io.{ByteArrayOutputStream, IOException, InterruptedIOException}
import java.util.concurrent.{ConcurrentHashMap, ExecutionException, Executors, Future, Semaphore, ThreadFactory}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{Abortable, Path}

/**
 * The upload of [[S3Store]] on Spark 3.5 and 4.0: the file is buffered in memory up to
 * `partSize`; a file that fits is one PutObject on `close()`. A larger one becomes a multipart upload whose parts go
 * up concurrently, at most `maxActiveParts` at once: `write()` waits while that many are in flight, so the stream
 * holds at most (`maxActiveParts` + 1) x `partSize` bytes. Parts may finish in any order; `close()` waits for all,
 * then completes the upload with them by part number (`If-None-Match: *` unless overwriting). A part that fails
 * (after the SDK's retries) fails the next `write()` or the `close()`, and the upload is aborted. `abort()` lets
 * the parts in flight finish (they send no new attempt after it), then aborts the upload: no part lands after the
 * abort, and nothing becomes visible.
 */
private[spark] final class ConditionalUploadStream(
    path: Path,
    key: String,
    overwrite: Boolean,
    writeId: String,
    partSize: Int,
    maxActiveParts: Int,
    uploader: MultipartUploader)
  extends Upload {

  private final class Buffer extends ByteArrayOutputStream(math.min(partSize, 64 * 1024)) {
    def bytes: Array[Byte] = buf
  }

  private var buffer = new Buffer
  private var uploadId: String = _
  private var partsSent = 0
  private val etags = new ConcurrentHashMap[Integer, String]()
  private val inFlight = ArrayBuffer.empty[Future[_]]
  private val permits = new Semaphore(math.max(1, maxActiveParts))
  @volatile private var failure: Throwable = _
  @volatile private var stopping = false
  private var closed = false
  @volatile private var sentAtCloseNow: Option[Sent] = None

  override def sentAtClose: Option[Sent] = sentAtCloseNow
  @volatile private var multipart = false

  /** Whether a CreateMultipartUpload was sent. */
  override def startedMultipart: Boolean = multipart

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

  /** Hand the full buffer over as the next part (sent only once more data follows it), waiting for a free slot. */
  private def sendPart(): Unit = {
    rethrowPartFailure()
    if (uploadId == null) {
      multipart = true
      uploadId = uploader.startMultipart(key, writeId)
    }
    val part = buffer
    buffer = new Buffer
    partsSent += 1
    val number = partsSent
    val upload = uploadId
    try permits.acquire()
    catch { case e: InterruptedException => throw interrupted(e) }
    inFlight += ConditionalUploadStream.parts.submit(new Runnable {
      override def run(): Unit =
        try {
          if (!stopping && failure == null) etags.put(number, uploader.uploadPart(key, upload, number, part.bytes, part.size))
        } catch {
          case NonFatal(e) => ConditionalUploadStream.this.synchronized(if (failure == null) failure = e)
        } finally permits.release()
    })
  }

  private def rethrowPartFailure(): Unit = failure match {
    case null => ()
    case e: IOException => throw e
    case e => throw new IOException(s"$path: uploading a part failed: $e", e)
  }

  /** Wait until every part handed over has been answered (or has given up). */
  private def awaitParts(): Unit = {
    inFlight.foreach { f =>
      try f.get()
      catch {
        case e: InterruptedException => throw interrupted(e)
        case _: ExecutionException => () // recorded in `failure` by the part itself
      }
    }
    inFlight.clear()
  }

  private def interrupted(e: InterruptedException): InterruptedIOException = {
    stopping = true // parts not yet started send nothing; the open upload is aborted by the stream's owner
    Thread.currentThread().interrupt()
    val io = new InterruptedIOException(s"$path: interrupted while uploading parts")
    io.initCause(e)
    io
  }

  override def close(): Unit = {
    if (closed) return
    closed = true
    try {
      if (uploadId == null) {
        val checksum = uploader.checksum(buffer.bytes, buffer.size)
        sentAtCloseNow = Some(Sent(checksum, buffer.size.toLong))
        uploader.put(key, buffer.bytes, buffer.size, !overwrite, writeId, checksum)
      }
      else {
        try {
          if (buffer.size > 0) sendPart()
          awaitParts()
          rethrowPartFailure()
          val ordered = (1 to partsSent).map(n => etags.get(n))
          uploader.complete(key, uploadId, ordered, !overwrite)
        } catch {
          case e: InterruptedIOException => throw e // the owner aborts the open upload (it lists this key's uploads)
          case e: IOException =>
            // A refused complete or a failed part leaves the upload open (and S3 does not reuse it): abort it.
            // After a complete that was applied, the abort finds nothing.
            stopping = true
            abortQuietly(e)
            throw e
        }
      }
    } finally buffer = new Buffer(/* release the data */)
  }

  private def abortQuietly(cause: Throwable): Unit =
    try {
      awaitParts()
      uploader.abort(key, uploadId)
    } catch { case NonFatal(e) => cause.addSuppressed(e) }

  override def abort(): Abortable.AbortableResult = {
    val wasClosed = closed
    closed = true
    stopping = true
    buffer = new Buffer
    var cleanup: IOException = null
    if (!wasClosed && uploadId != null) {
      try {
        awaitParts()
        uploader.abort(key, uploadId)
      } catch {
        case _: java.io.FileNotFoundException => ()
        case e: IOException => cleanup = e
      }
    }
    val result = cleanup
    new Abortable.AbortableResult {
      override def alreadyClosed(): Boolean = wasClosed
      override def anyCleanupException(): IOException = result
    }
  }

  override def toString: String = s"ConditionalUploadStream($path, overwrite=$overwrite, writeId=$writeId)"
}

private[spark] object ConditionalUploadStream {
  /** Threads that send parts, shared by every stream (each bounds its own parts in flight); daemon, idle ones end. */
  private val parts = Executors.newCachedThreadPool(new ThreadFactory {
    private val count = new AtomicInteger()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"checkpointfs-part-upload-${count.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  })
}
