package io.checkpointfs.spark

import java.io.{ByteArrayOutputStream, OutputStream}

import org.apache.hadoop.fs.{FSDataInputStream, FSDataOutputStream, PositionedReadable, Seekable}
import org.apache.hadoop.fs.statistics.{IOStatistics, IOStatisticsSource, IOStatisticsSupport}
import org.apache.hadoop.fs.statistics.impl.IOStatisticsBinding
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/** The streams of a measured call: bytes read counted, the call ended on close, the store's IOStatistics seen. */
class MeasuredStreamsSuite extends AnyFunSuite {
  private def statistics(name: String, value: Long): IOStatistics = {
    val store = IOStatisticsBinding.iostatisticsStore().withCounters(name).build()
    store.setCounter(name, value)
    store
  }

  test("a read file counts its bytes in open.bytesRead and ends its call when closed") {
    val op = ShimMetrics.open
    val (read, timed) = (op.bytesRead.getCount, op.latency.getCount)
    val call = op.start()
    val in = MeasuredInputStream.wrap(new FSDataInputStream(new BytesInputStream("0123456789".getBytes)), call)
    val buffer = new Array[Byte](4)
    assert(in.read(buffer) == 4 && in.read() == '4'.toInt)
    in.readFully(8L, buffer, 0, 2)
    assert(op.bytesRead.getCount - read == 7 && op.latency.getCount == timed)
    in.close()
    in.close()
    assert(op.latency.getCount - timed == 1)
  }

  test("the stream a create writes through passes the store stream's IOStatistics through") {
    val s3aLike = new OutputStream with IOStatisticsSource {
      private val stats = statistics("object_put_request", 1)
      override def write(b: Int): Unit = ()
      override def getIOStatistics: IOStatistics = stats
    }
    val call = ShimMetrics.createIfAbsent.start()
    try {
      val out = new FSDataOutputStream(new MeasuredOutputStream(new ByteArrayOutputStream(), call, s3aLike), null)
      val seen = IOStatisticsSupport.retrieveIOStatistics(out)
      assert(seen != null && seen.counters().get("object_put_request") == 1L)
    } finally call.finish()
  }

  test("a read file passes the opened stream's IOStatistics through") {
    final class Inner extends java.io.InputStream with Seekable with PositionedReadable with IOStatisticsSource {
      private val bytes = new BytesInputStream(Array[Byte](1))
      override def read(): Int = bytes.read()
      override def seek(pos: Long): Unit = bytes.seek(pos)
      override def getPos: Long = bytes.getPos
      override def seekToNewSource(pos: Long): Boolean = false
      override def read(position: Long, buffer: Array[Byte], offset: Int, length: Int): Int =
        bytes.read(position, buffer, offset, length)
      override def readFully(position: Long, buffer: Array[Byte], offset: Int, length: Int): Unit =
        bytes.readFully(position, buffer, offset, length)
      override def readFully(position: Long, buffer: Array[Byte]): Unit = bytes.readFully(position, buffer)
      override def getIOStatistics: IOStatistics = statistics("stream_read_bytes", 1)
    }
    val in = MeasuredInputStream.wrap(new FSDataInputStream(new Inner), ShimMetrics.open.start())
    try assert(IOStatisticsSupport.retrieveIOStatistics(in).counters().get("stream_read_bytes") == 1L)
    finally in.close()
  }
}
