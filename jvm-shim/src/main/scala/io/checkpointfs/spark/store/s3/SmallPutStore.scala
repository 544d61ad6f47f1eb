package io.checkpointfs.spark
package store
package s3

import java.io.{ByteArrayOutputStream, IOException, OutputStream}
import java.util.Locale

import org.apache.hadoop.fs.{Abortable, FSDataOutputStream, Path, StreamCapabilities}

/**
 * Put-if-absent on Hadoop 3.4.2+ with the fewest steps for the files checkpoints are made of: a file up to
 * `threshold` bytes (the checkpoint part size) is buffered in memory and sent as one PutObject by the shim through
 * S3A's own S3 client (`uploader`: `If-None-Match: *` unless overwriting, the write id in user metadata, errors as
 * S3A translates them). S3A's block output stream costs about twice the JVM CPU of that one request for a ~250-byte
 * file (jvm-bench, docs/benchmarks.md). A file that grows beyond `threshold` is handed, with the bytes buffered so
 * far, to S3A's conditional create on `large` (the checkpoint-write instance, parallel block uploads).
 */
private[spark] final class SmallPutStore(protected val uploader: ConditionalUploader, large: S3AConditionalCreateStore,
    threshold: Int) extends UploaderStore {

  override def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream =
    new FSDataOutputStream(new SmallPutStream(path, DirectStore.keyOf(path), overwrite, writeId, threshold, uploader,
      () => large.create(path, overwrite, writeId)), null)

  override def startedMultipart(out: FSDataOutputStream): Boolean = out.getWrappedStream match {
    case s: SmallPutStream => s.largeStream.exists(large.startedMultipart)
    case _ => true
  }

  override def putFileLimit: Long = threshold.toLong
}

/**
 * The output stream of [[SmallPutStore]]: bytes in memory up to `threshold`, sent as one PutObject on `close()`;
 * past it, the buffered bytes and everything after go to the stream `openLarge` makes. `abort()` before `close()`
 * sends nothing for a buffered file and aborts the large stream otherwise.
 */
private[spark] final class SmallPutStream(
    path: Path,
    key: String,
    overwrite: Boolean,
    writeId: String,
    threshold: Int,
    uploader: ConditionalUploader,
    openLarge: () => FSDataOutputStream)
  extends OutputStream with Abortable with StreamCapabilities {

  private final class Buffer extends ByteArrayOutputStream(math.min(threshold, 4 * 1024)) {
    def bytes: Array[Byte] = buf
  }

  private var buffer: Buffer = new Buffer
  @volatile private var large: FSDataOutputStream = _
  private var closed = false

  /** The S3A stream the file went to, once it outgrew the buffer. */
  def largeStream: Option[FSDataOutputStream] = Option(large)

  override def write(b: Int): Unit = {
    checkOpen()
    if (large == null && buffer.size + 1 > threshold) spill()
    if (large != null) large.write(b) else buffer.write(b)
  }

  override def write(b: Array[Byte], off: Int, len: Int): Unit = {
    checkOpen()
    if (large == null && buffer.size.toLong + len > threshold) spill()
    if (large != null) large.write(b, off, len) else buffer.write(b, off, len)
  }

  override def flush(): Unit = if (large != null) large.flush()

  private def checkOpen(): Unit = if (closed) throw new IOException(s"$path: the stream is closed")

  /** Continue in S3A's stream, starting with the bytes buffered so far. */
  private def spill(): Unit = {
    val out = openLarge()
    large = out
    out.write(buffer.bytes, 0, buffer.size)
    buffer = null
  }

  override def close(): Unit = {
    if (closed) return
    closed = true
    if (large != null) large.close()
    else {
      try uploader.put(key, buffer.bytes, buffer.size, !overwrite, writeId)
      finally buffer = null // release the data
    }
  }

  override def abort(): Abortable.AbortableResult = {
    val wasClosed = closed
    closed = true
    buffer = null
    if (!wasClosed && large != null) large.abort()
    else new Abortable.AbortableResult {
      override def alreadyClosed(): Boolean = wasClosed
      override def anyCleanupException(): IOException = null
    }
  }

  override def hasCapability(capability: String): Boolean =
    capability.toLowerCase(Locale.ROOT) == "fs.capability.outputstream.abortable"

  override def toString: String = s"SmallPutStream($path, overwrite=$overwrite, writeId=$writeId)"
}
