package io.checkpointfs.spark
package store
package s3

import java.io.{ByteArrayOutputStream, IOException}

import org.apache.hadoop.fs.{Abortable, FSDataOutputStream, Path}

/**
 * Put-if-absent on Hadoop 3.4.2+ with the fewest steps for the files checkpoints are made of: a file up to
 * `threshold` bytes (the checkpoint part size) is buffered in memory and sent as one PutObject by the shim through
 * S3A's own S3 client (`uploader`: `If-None-Match: *` unless overwriting, the write id in user metadata, errors as
 * S3A translates them). S3A's block output stream costs about twice the JVM CPU of that one request for a ~250-byte
 * file (jvm-bench, docs/benchmarks.md). A file that grows beyond `threshold` is handed, with the bytes buffered so
 * far, to S3A's conditional create on `large` (the checkpoint-write instance, parallel block uploads). `abort()`
 * before `close()` sends nothing for a buffered file and aborts the large stream otherwise.
 */
private[spark] final class SmallPutStream(
    path: Path,
    key: String,
    overwrite: Boolean,
    writeId: String,
    threshold: Int,
    uploader: MultipartUploader,
    large: S3AConditionalCreate)
  extends Upload {

  private final class Buffer extends ByteArrayOutputStream(math.min(threshold, 4 * 1024)) {
    def bytes: Array[Byte] = buf
  }

  private var buffer: Buffer = new Buffer
  @volatile private var largeStream: FSDataOutputStream = _
  private var closed = false
  @volatile private var sentAtCloseNow: Option[Sent] = None

  override def sentAtClose: Option[Sent] = sentAtCloseNow

  /** Whether S3A's stream, once the file outgrew the buffer, started a multipart upload. */
  override def startedMultipart: Boolean = largeStream != null && large.startedMultipart(largeStream)

  override def write(b: Int): Unit = {
    checkOpen()
    if (largeStream == null && buffer.size + 1 > threshold) spill()
    if (largeStream != null) largeStream.write(b) else buffer.write(b)
  }

  override def write(b: Array[Byte], off: Int, len: Int): Unit = {
    checkOpen()
    if (largeStream == null && buffer.size.toLong + len > threshold) spill()
    if (largeStream != null) largeStream.write(b, off, len) else buffer.write(b, off, len)
  }

  override def flush(): Unit = if (largeStream != null) largeStream.flush()

  private def checkOpen(): Unit = if (closed) throw new IOException(s"$path: the stream is closed")

  /** Continue in S3A's stream, starting with the bytes buffered so far. */
  private def spill(): Unit = {
    val out = large.create(path, overwrite, writeId)
    largeStream = out
    out.write(buffer.bytes, 0, buffer.size)
    buffer = null
  }

  override def close(): Unit = {
    if (closed) return
    closed = true
    if (largeStream != null) largeStream.close()
    else {
      val checksum = uploader.checksum(buffer.bytes, buffer.size)
      sentAtCloseNow = Some(Sent(checksum, buffer.size.toLong))
      try uploader.put(key, buffer.bytes, buffer.size, !overwrite, writeId, checksum)
      finally buffer = null // release the data
    }
  }

  override def abort(): Abortable.AbortableResult = {
    val wasClosed = closed
    closed = true
    buffer = null
    if (!wasClosed && largeStream != null) largeStream.abort()
    else Upload.aborted(wasClosed)
  }

  override def toString: String = s"SmallPutStream($path, overwrite=$overwrite, writeId=$writeId)"
}
