package io.checkpointfs.spark
package direct

import java.io.{ByteArrayOutputStream, InputStream, OutputStream}

import org.apache.hadoop.fs.{ByteBufferReadable, CanUnbuffer, FSDataInputStream, PositionedReadable, Seekable,
  StreamCapabilities}
import org.apache.hadoop.fs.statistics.{IOStatistics, IOStatisticsSource, IOStatisticsSupport}

/**
 * A checkpoint file opened for reading, as one `open` call of [[ShimMetrics]]: each read runs as the call (the
 * requests S3A sends for it are the call's), the bytes read are counted, and closing the stream ends the call. The
 * stream's own IOStatistics (S3A's input stream statistics), capabilities, byte-buffer reads and unbuffering are
 * passed through, so that a reader sees what it would see of the stream unwrapped.
 */
private[spark] final class MeasuredInputStream(in: FSDataInputStream, call: ShimMetrics.Call)
  extends InputStream with Seekable with PositionedReadable with ByteBufferReadable with StreamCapabilities
    with CanUnbuffer with IOStatisticsSource {

  private var closed = false

  private def counted(n: Int): Int = {
    if (n > 0) call.operation.bytesRead.inc(n.toLong)
    n
  }

  override def read(): Int = call.run {
    val b = in.read()
    if (b >= 0) call.operation.bytesRead.inc()
    b
  }

  override def read(b: Array[Byte], off: Int, len: Int): Int = call.run(counted(in.read(b, off, len)))
  override def skip(n: Long): Long = call.run(in.skip(n))
  override def available(): Int = in.available()
  override def seek(pos: Long): Unit = call.run(in.seek(pos))
  override def getPos: Long = in.getPos
  override def seekToNewSource(targetPos: Long): Boolean = call.run(in.seekToNewSource(targetPos))

  override def read(position: Long, buffer: Array[Byte], offset: Int, length: Int): Int =
    call.run(counted(in.read(position, buffer, offset, length)))

  override def readFully(position: Long, buffer: Array[Byte], offset: Int, length: Int): Unit = call.run {
    in.readFully(position, buffer, offset, length)
    call.operation.bytesRead.inc(length.toLong)
  }

  override def readFully(position: Long, buffer: Array[Byte]): Unit = readFully(position, buffer, 0, buffer.length)

  override def read(buffer: java.nio.ByteBuffer): Int = call.run(counted(in.read(buffer)))
  override def hasCapability(capability: String): Boolean = in.hasCapability(capability)
  override def unbuffer(): Unit = in.unbuffer()
  override def getIOStatistics: IOStatistics = IOStatisticsSupport.retrieveIOStatistics(in)

  override def close(): Unit = synchronized {
    if (closed) return
    closed = true
    try call.run(in.close())
    finally call.finish()
  }
}

private[spark] object MeasuredInputStream {
  /** `in` read as the `open` call `call`, in the FSDataInputStream Spark expects. */
  def wrap(in: FSDataInputStream, call: ShimMetrics.Call): FSDataInputStream =
    new FSDataInputStream(new MeasuredInputStream(in, call))
}

/**
 * The bytes of a checkpoint file on their way to the store, as part of its create call: each write runs as the call
 * (requests sent meanwhile, such as a multipart part or the store check, are the call's), the bytes are counted, and
 * a copy of the first `keep` of them is kept (a file no longer than that is then known whole; see [[Knowledge]]).
 * The IOStatistics of `statistics` (the store's stream) are passed through.
 */
private[spark] final class MeasuredOutputStream(out: OutputStream, val call: ShimMetrics.Call, statistics: AnyRef,
    keep: Int = 0) extends java.io.FilterOutputStream(out) with IOStatisticsSource {

  private val copy = new ByteArrayOutputStream(math.min(keep, 4096))
  @volatile private var count = 0L

  override def write(b: Int): Unit = call.run {
    out.write(b)
    if (count < keep) copy.write(b)
    count += 1
  }

  override def write(b: Array[Byte], off: Int, len: Int): Unit = call.run {
    out.write(b, off, len)
    if (count + len <= keep) copy.write(b, off, len)
    count += len
  }

  override def flush(): Unit = call.run(out.flush())
  /** Closing is the stream's (DirectWriteOutputStream's) business: this one is closed through it. */
  override def close(): Unit = ()

  /** Bytes written so far. */
  def written: Long = count

  /** The whole content, when it fits in `keep` bytes. */
  def kept: Option[Array[Byte]] = if (count <= keep) Some(copy.toByteArray) else None

  override def getIOStatistics: IOStatistics = IOStatisticsSupport.retrieveIOStatistics(statistics)
}
