package io.checkpointfs.spark

import java.io.{File, IOException}
import java.nio.file.Files

import scala.collection.mutable.ArrayBuffer

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/** [[SpillingUploadStream]]: nothing sent before close, memory up to the threshold, a temporary file beyond it that
 * never outlives the stream, a cancel that sends nothing. */
class SpillingUploadStreamSuite extends AnyFunSuite {
  private val path = new Path("gs://bucket/cp/offsets/7")

  /** What one stream sent: ("bytes" | "file", the content). */
  private final class Sent(threshold: Int, failWith: Option[IOException] = None) {
    val sends = ArrayBuffer.empty[(String, Seq[Byte])]
    val dir: File = Files.createTempDirectory("spill-suite-").toFile
    var fileSeen: Option[File] = None
    val stream = new SpillingUploadStream(path, threshold,
      (bytes, len) => { sends += (("bytes", bytes.take(len).toSeq)); failWith.foreach(e => throw e) },
      (file, len) => {
        assert(file.length == len)
        fileSeen = Some(file)
        sends += (("file", Files.readAllBytes(file.toPath).toSeq))
        failWith.foreach(e => throw e)
      },
      tempDir = Some(dir))
    def leftovers: Seq[String] = Option(dir.list()).map(_.toSeq).getOrElse(Nil)
  }

  private def data(n: Int, seed: Int = 0): Array[Byte] = Array.tabulate[Byte](n)(i => ((i + seed) % 251).toByte)

  test("a file up to the threshold is sent from memory, once, at close; nothing before") {
    val s = new Sent(threshold = 16)
    s.stream.write(data(10))
    s.stream.write(data(6, 10), 0, 6)
    s.stream.flush()
    assert(s.sends.isEmpty && s.leftovers.isEmpty)
    s.stream.close()
    assert(s.sends.toSeq == Seq(("bytes", (data(10) ++ data(6, 10)).toSeq)))
    s.stream.close() // a no-op
    assert(s.sends.size == 1)
  }

  test("an empty file is one send of no bytes") {
    val s = new Sent(threshold = 16)
    s.stream.close()
    assert(s.sends.toSeq == Seq(("bytes", Seq.empty[Byte])))
  }

  test("a file past the threshold spills to a local file, sent whole at close, then deleted") {
    val s = new Sent(threshold = 8)
    s.stream.write(data(5))
    assert(s.stream.spilledTo.isEmpty)
    s.stream.write(data(5, 5))
    (0 until 3).foreach(i => s.stream.write(i))
    assert(s.stream.spilledTo.isDefined && s.leftovers.size == 1 && s.sends.isEmpty)
    s.stream.close()
    assert(s.sends.toSeq == Seq(("file", (data(5) ++ data(5, 5) ++ Seq[Byte](0, 1, 2)).toSeq)))
    assert(s.leftovers.isEmpty && !s.fileSeen.get.exists)
  }

  test("write(int) at the threshold spills exactly there") {
    val s = new Sent(threshold = 3)
    (0 until 3).foreach(i => s.stream.write(i))
    assert(s.stream.spilledTo.isEmpty)
    s.stream.write(3)
    assert(s.stream.spilledTo.isDefined)
    s.stream.close()
    assert(s.sends.head._1 == "file" && s.sends.head._2 == Seq[Byte](0, 1, 2, 3))
  }

  test("abort sends nothing and deletes the spilled file; close after it is a no-op") {
    for (n <- Seq(4, 40)) {
      val s = new Sent(threshold = 16)
      s.stream.write(data(n))
      val result = s.stream.abort()
      assert(!result.alreadyClosed() && result.anyCleanupException() == null)
      s.stream.close()
      assert(s.sends.isEmpty && s.leftovers.isEmpty, n)
      assert(intercept[IOException](s.stream.write(1)).getMessage.contains("closed"))
    }
  }

  test("abort after close says so and sends nothing more") {
    val s = new Sent(threshold = 16)
    s.stream.close()
    assert(s.stream.abort().alreadyClosed() && s.sends.size == 1)
  }

  test("a failed send propagates and the spilled file is deleted all the same") {
    val s = new Sent(threshold = 4, failWith = Some(new IOException("412 conditionNotMet")))
    s.stream.write(data(9))
    assert(intercept[IOException](s.stream.close()).getMessage.contains("412"))
    assert(s.leftovers.isEmpty && s.sends.size == 1)
  }

  test("the stream says it can abort") {
    val s = new Sent(threshold = 4)
    assert(s.stream.hasCapability("fs.capability.outputstream.abortable"))
    assert(!s.stream.hasCapability("hflush"))
  }
}
