package io.checkpointfs.spark
package direct

import java.io.{EOFException, InputStream}

import org.apache.hadoop.fs.{PositionedReadable, Seekable}

/** A file's bytes in memory, readable as Hadoop's FSDataInputStream needs (seekable, positioned reads). */
private[spark] final class BytesInputStream(bytes: Array[Byte]) extends InputStream with Seekable with PositionedReadable {
  private var pos = 0

  override def read(): Int = if (pos < bytes.length) { pos += 1; bytes(pos - 1) & 0xff } else -1

  override def read(b: Array[Byte], off: Int, len: Int): Int = {
    if (len == 0) return 0
    if (pos >= bytes.length) return -1
    val n = math.min(len, bytes.length - pos)
    System.arraycopy(bytes, pos, b, off, n)
    pos += n
    n
  }

  override def available(): Int = bytes.length - pos
  override def skip(n: Long): Long = { val k = math.max(0L, math.min(n, (bytes.length - pos).toLong)); pos += k.toInt; k }
  override def seek(target: Long): Unit = {
    if (target < 0 || target > bytes.length) throw new EOFException(s"seek to $target outside 0..${bytes.length}")
    pos = target.toInt
  }
  override def getPos: Long = pos
  override def seekToNewSource(targetPos: Long): Boolean = false

  override def read(position: Long, buffer: Array[Byte], offset: Int, length: Int): Int = {
    if (position >= bytes.length) return -1
    val n = math.min(length.toLong, bytes.length - position).toInt
    System.arraycopy(bytes, position.toInt, buffer, offset, n)
    n
  }

  override def readFully(position: Long, buffer: Array[Byte], offset: Int, length: Int): Unit = {
    if (position < 0 || position + length > bytes.length) {
      throw new EOFException(s"read of $length bytes at $position past the end (${bytes.length} bytes)")
    }
    System.arraycopy(bytes, position.toInt, buffer, offset, length)
  }

  override def readFully(position: Long, buffer: Array[Byte]): Unit = readFully(position, buffer, 0, buffer.length)
}
