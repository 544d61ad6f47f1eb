package io.checkpointfs.spark

import java.io.IOException

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/** [[Knowledge]], [[Probes]] and [[Retry]], on their own. */
class ShimPartsSuite extends AnyFunSuite {
  private val root = new Path("s3a://bucket/cp")
  private def at(rel: String): Path = new Path(root, rel)
  private def bytes(n: Int): Array[Byte] = Array.fill[Byte](n)(7)

  test("Knowledge keeps the bytes of log-batch files only, up to the protocol's size") {
    val k = new Knowledge()
    assert(k.bytesToKeep(at("commits/4"), putIfAbsent = true) == Protocol.MaxContentBytes)
    assert(k.bytesToKeep(at("commits/4.compact"), putIfAbsent = true) == Protocol.MaxContentBytes)
    assert(k.bytesToKeep(at("state/0/0/4.delta"), putIfAbsent = true) == 0)
    assert(k.bytesToKeep(at("commits/4"), putIfAbsent = false) == 0)
    k.published(root, at("commits/4"), 3, Some(bytes(3)), putIfAbsent = true)
    k.published(root, at("state/0/0/4.delta"), 3, Some(bytes(3)), putIfAbsent = true)
    val big = Protocol.MaxContentBytes + 1
    k.published(root, at("offsets/9"), big, Some(bytes(big)), putIfAbsent = true)
    assert(k.content(at("commits/4")).map(_.length).contains(3))
    assert(k.content(at("state/0/0/4.delta")).isEmpty && k.isPublished(at("state/0/0/4.delta")))
    assert(k.content(at("offsets/9")).isEmpty && k.length(at("offsets/9")).contains(big.toLong))
    assert(k.keptBytes == 3)
  }

  test("Knowledge forgets beyond its capacity (the protocol's by default) and keeps bytes within its budget") {
    val k = new Knowledge()
    (0 to Protocol.KnowledgeCapacity).foreach(i => k.published(root, at(s"commits/$i"), 0, None, putIfAbsent = true))
    assert(!k.isPublished(at("commits/0")) && k.isPublished(at("commits/1")))
    val small = new Knowledge(capacity = 2, budget = 10)
    Seq("offsets/1", "offsets/2").foreach(p => small.published(root, at(p), 6, Some(bytes(6)), putIfAbsent = true))
    // the oldest file's bytes went to keep within the budget; it stays known as published
    assert(small.keptBytes == 6 && small.content(at("offsets/2")).isDefined && small.isPublished(at("offsets/1")))
    small.published(root, at("offsets/3"), 1, Some(bytes(1)), putIfAbsent = true)
    assert(!small.isPublished(at("offsets/1")) && small.keptBytes == 7)
  }

  test("Knowledge: an overwrite is not remembered as published; forget drops what lies below a path") {
    val k = new Knowledge()
    k.published(root, at("offsets/1"), 2, Some(bytes(2)), putIfAbsent = false)
    assert(!k.isPublished(at("offsets/1")) && k.isDirectory(at("offsets")))
    k.published(root, at("state/0/1/2.delta"), 2, None, putIfAbsent = true)
    k.published(root, at("commits/1"), 2, Some(bytes(2)), putIfAbsent = true)
    k.forget(at("state"))
    assert(!k.isPublished(at("state/0/1/2.delta")) && !k.isDirectory(at("state/0")))
    assert(k.isPublished(at("commits/1")) && k.keptBytes == 2)
    k.forget(at("commits/1"))
    assert(k.keptBytes == 0 && k.content(at("commits/1")).isEmpty)
  }

  test("Probes.isFileName: the protocol's file names") {
    Seq("12", "12.compact", "3.delta", "3_ab-1.zip", "4.snapshot", "5.changelog", "metadata", ".1.delta.crc", "X.CRC")
      .foreach(n => assert(Probes.isFileName(n), n))
    Seq("offsets", ".crc", "12.json", "metadata2", "a12", "_metadata", "3_x.zip.tmp")
      .foreach(n => assert(!Probes.isFileName(n), n))
    assert(Probes.isLogBatchName("7.compact") && !Probes.isLogBatchName("7.delta"))
  }

  test("Probes.previousBatches: the batch before a log batch, plain or compacted") {
    assert(Probes.previousBatches("8") == Seq("7", "7.compact"))
    assert(Probes.previousBatches("10.compact") == Seq("9", "9.compact"))
    assert(Probes.previousBatches("0").isEmpty && Probes.previousBatches("0.compact").isEmpty)
    assert(Probes.previousBatches("8.delta").isEmpty && Probes.previousBatches("metadata").isEmpty)
    assert(Probes.previousBatches("100000000000000000000") == Seq("99999999999999999999", "99999999999999999999.compact"))
  }

  test("Probes.isBelow and mode") {
    assert(Probes.isBelow(root, at("offsets/1")) && Probes.isBelow(root, at("offsets")))
    assert(!Probes.isBelow(root, root) && !Probes.isBelow(at("offsets"), root))
    assert(!Probes.isBelow(root, new Path("s3a://bucket/cp2/x")))
    assert(Probes.mode(" FULL ") == Probes.FullMode && Probes.mode("file-names") == Probes.FileNamesMode)
    assert(Probes.mode("Log-Order") == Probes.LogOrderMode)
    val e = intercept[IllegalArgumentException](Probes.mode("sometimes"))
    assert(e.getMessage.contains(Probes.ModeKey))
  }

  test("Retry: attempts, retryable failures and back-off") {
    var calls = 0
    var retried = List.empty[Int]
    val value = Retry.withBackoff(4, 1L, onRetry = (_, attempt) => retried :+= attempt) {
      calls += 1
      if (calls < 3) throw new IOException(s"try $calls") else "done"
    }
    assert(value == "done" && calls == 3 && retried == List(1, 2))

    calls = 0
    val last = intercept[IOException](Retry.withBackoff(3, 1L) { calls += 1; throw new IOException(s"try $calls") })
    assert(calls == 3 && last.getMessage == "try 3")

    calls = 0
    intercept[IOException](Retry.withBackoff(5, 1L, retryable = _ => false) { calls += 1; throw new IOException })
    assert(calls == 1)
  }
}
