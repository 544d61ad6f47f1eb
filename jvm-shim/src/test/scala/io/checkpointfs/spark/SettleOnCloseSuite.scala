package io.checkpointfs.spark

import java.io.IOException
import java.time.Instant

import org.apache.hadoop.fs.{Abortable, FileAlreadyExistsException, FileStatus, FSDataInputStream, Path}
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/**
 * What a failed `close()` of [[DirectWriteOutputStream]] becomes, with a stand-in store: the protocol's settle rule
 * with S3A's retries out of sight ([[Settle.hiddenAttemptsMaybeApplied]]).
 */
class SettleOnCloseSuite extends AnyFunSuite {
  private val path = new Path("s3a://bucket/cp/commits/3")
  private val writeId = "w-1"

  /** A store whose object carries `owner` (None: no object; Left: the read fails); counts the reads. */
  private class FakeStore(owner: Either[IOException, Option[String]]) extends DirectStore {
    var reads = 0
    override def describe: String = "fake"
    override def identity: StoreIdentity = StoreIdentity("", "bucket")
    override def create(path: Path, overwrite: Boolean, writeId: String): Upload =
      throw new UnsupportedOperationException
    override def put(path: Path, file: java.io.File, writeId: String): Boolean = false
    override def uploads(path: Path): Seq[(String, Option[Instant])] = Nil
    override def abort(path: Path, uploadId: String): Unit = ()
    override def head(path: Path): Option[String] = {
      reads += 1
      owner.fold(e => throw e, id => id)
    }
    override def exists(path: Path, file: Boolean): Boolean = false
    override def list(dir: Path): Array[FileStatus] = Array.empty
    override def open(path: Path, length: Option[Long]): FSDataInputStream = throw new UnsupportedOperationException
    override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] = None
    var deletes = 0
    override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit = deletes += 1
  }

  /** The object a store that keeps no write id kept: the checksum and size of what was written. */
  private class NoMetadata(checksum: String, size: Long) extends FakeStore(Right(Some(""))) {
    override def kept(path: Path): Option[Kept] = head(path).map(Kept(_, checksum, size))
  }

  /** Close a stream whose upload fails with `failure`; the published flag says whether `close()` published. */
  private def close(failure: IOException, store: FakeStore, overwrite: Boolean = false,
      sent: Option[Sent] = None): Boolean = {
    val failing = new Upload {
      override def write(b: Int): Unit = ()
      override def close(): Unit = throw failure
      override def abort(): Abortable.AbortableResult = Upload.aborted(false)
      override def startedMultipart: Boolean = false
      override def sentAtClose: Option[Sent] = sent
    }
    var published = false
    val options = Options(abortOnCancel = true, deleteAttempts = 1, Set.empty)
    val call = (if (overwrite) ShimMetrics.createOverwrite else ShimMetrics.createIfAbsent).start()
    val stream = DirectWriteOutputStream(store, path, overwrite, writeId, options, failing, call, 0) { (_, _) =>
      published = true
    }
    stream.close()
    published
  }

  /**
   * Cancel, by close-then-delete, a stream whose upload's close fails with `failure` (None: it succeeds) having sent
   * `sent`; the number of deletes the store saw.
   */
  private def cancel(store: FakeStore, failure: Option[IOException], sent: Option[Sent]): Int = {
    val upload = new Upload {
      override def write(b: Int): Unit = ()
      override def close(): Unit = failure.foreach(e => throw e)
      override def abort(): Abortable.AbortableResult = throw new UnsupportedOperationException
      override def startedMultipart: Boolean = false
      override def sentAtClose: Option[Sent] = sent
    }
    val options = Options(abortOnCancel = false, deleteAttempts = 1, Set.empty)
    DirectWriteOutputStream(store, path, overwrite = false, writeId, options, upload,
      ShimMetrics.createIfAbsent.start(), 0)((_, _) => ()).cancel()
    store.deletes
  }

  private def status(code: Int): IOException = new StatusCodeException(code)

  /** How much each of `counters` grew while `body` ran. */
  private def growth(counters: String*)(body: => Unit): Seq[Long] = {
    val before = counters.map(ShimMetrics.counter(_).getCount)
    body
    counters.zip(before).map { case (name, was) => ShimMetrics.counter(name).getCount - was }
  }

  test("throttled to the end with no object: unknown, since S3A may have retried an attempt that landed") {
    val store = new FakeStore(Right(None))
    val grew = growth("unknownOutcomes", "createIfAbsent.failures", "createIfAbsent.calls") {
      val e = intercept[WriteOutcomeUnknownException](close(status(503), store))
      assert(store.reads == 1 && e.getMessage.contains("may or may not become visible"))
    }
    assert(grew == Seq(1, 1, 1))
  }

  test("an earlier attempt of ours landed: success, and the file is published") {
    val grew = growth("ambiguousSettled", "createIfAbsent.failures", "conflicts") {
      assert(close(status(500), new FakeStore(Right(Some(writeId)))))
      assert(close(new RemoteFileChangedException("412 after a lost answer"), new FakeStore(Right(Some(writeId)))))
    }
    assert(grew == Seq(2, 0, 0))
  }

  test("a 412 is a conflict whether the object is another writer's or gone") {
    val grew = growth("conflicts", "createIfAbsent.failures") {
      for (owner <- Seq(Some("theirs"), Some(""), None)) {
        intercept[FileAlreadyExistsException](close(status(412), new FakeStore(Right(owner))))
      }
    }
    assert(grew == Seq(3, 3))
  }

  test("a definitive refusal or a 404 is rethrown as it is, with no read") {
    for (failure <- Seq(status(403), status(400), new java.io.FileNotFoundException("gone"))) {
      val store = new FakeStore(Right(Some(writeId)))
      assert(intercept[IOException](close(failure, store)) eq failure)
      assert(store.reads == 0)
    }
  }

  test("a read-back that fails makes the outcome unknown, the read's failure attached") {
    val readError = new IOException("HEAD failed")
    val e = intercept[WriteOutcomeUnknownException](close(status(500), new FakeStore(Left(readError))))
    assert(e.getSuppressed.contains(readError) && e.getCause.getMessage.contains("500"))
  }

  test("when overwriting, another writer's object after a 500 is unknown, not a conflict") {
    intercept[WriteOutcomeUnknownException](close(status(500), new FakeStore(Right(Some("theirs"))), overwrite = true))
  }

  test("an interruption passes through unchanged, with no read") {
    val store = new FakeStore(Right(None))
    val stop = new java.io.InterruptedIOException("stop")
    assert(intercept[IOException](close(stop, store)) eq stop)
    assert(store.reads == 0)
  }

  test("a store that keeps no write id: the checksum and size it kept settle a lost answer") {
    val ours = Sent(Checksums.sha256(Array[Byte](1, 2, 3), 3), 3)
    assert(close(status(500), new NoMetadata(ours.checksum, 3), sent = Some(ours)), "our bytes: success")
    intercept[FileAlreadyExistsException](close(status(500), new NoMetadata("sha256:other", 3), sent = Some(ours)))
    intercept[FileAlreadyExistsException](close(status(500), new NoMetadata(ours.checksum, 4), sent = Some(ours)))
    intercept[FileAlreadyExistsException](close(status(500), new NoMetadata(ours.checksum, 3), sent = None))
  }

  test("close-then-delete recognises its own object by its write id, and leaves another writer's") {
    assert(cancel(new FakeStore(Right(Some(writeId))), None, None) == 1)
    assert(cancel(new FakeStore(Right(Some("theirs"))), None, None) == 0)
    assert(cancel(new FakeStore(Right(None)), None, None) == 0)
    assert(cancel(new FakeStore(Right(Some(writeId))), Some(status(500)), None) == 1, "a failed close that landed")
    assert(cancel(new FakeStore(Right(Some("theirs"))), Some(status(500)), None) == 0)
  }

  test("close-then-delete on a store that keeps no write id: its own object by the checksum and size it sent") {
    val ours = Sent(Checksums.sha256(Array[Byte](1, 2, 3), 3), 3)
    assert(cancel(new NoMetadata(ours.checksum, 3), None, Some(ours)) == 1, "our bytes: deleted")
    assert(cancel(new NoMetadata("sha256:other", 3), None, Some(ours)) == 0, "replaced since the close: left")
    assert(cancel(new NoMetadata(ours.checksum, 4), None, Some(ours)) == 0, "another size: left")
    assert(cancel(new NoMetadata(ours.checksum, 3), Some(status(500)), Some(ours)) == 1, "a failed close that landed")
    assert(cancel(new NoMetadata("sha256:other", 3), Some(status(500)), Some(ours)) == 0)
    // nothing tells it apart (a multipart upload sends no checksum): after a close that succeeded, the close is the
    // evidence and the object is deleted; after one that failed, it is another writer's, as settling calls it
    assert(cancel(new NoMetadata(ours.checksum, 3), None, None) == 1)
    assert(cancel(new NoMetadata("", 3), None, Some(ours)) == 1)
    assert(cancel(new NoMetadata(ours.checksum, 3), Some(status(500)), None) == 0)
  }

  test("close-then-delete whose failed close leaves the object unreadable fails loudly") {
    val e = intercept[AbortFailedException](cancel(new FakeStore(Left(new IOException("HEAD failed"))),
      Some(status(500)), None))
    assert(e.getMessage.contains("partial data may be visible"))
  }
}
