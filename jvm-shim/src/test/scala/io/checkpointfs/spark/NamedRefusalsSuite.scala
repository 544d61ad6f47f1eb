package io.checkpointfs.spark

import java.io.IOException
import java.time.Instant

import org.apache.hadoop.fs.{FileStatus, FSDataInputStream, Path}
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure.AzureBlobException

/**
 * [[NamedRefusals]]: a missing bucket or container and refused credentials, met by any request of a store, come out
 * saying so on their first line, with the store's failure as their cause; every other failure passes unchanged.
 */
class NamedRefusalsSuite extends AnyFunSuite {
  private val path = new Path("abfs://ckpt@devstoreaccount1.dfs.core.windows.net/cp/offsets/0")

  /** A store each of whose requests fails with `failure`. */
  private final class FailingStore(failure: => IOException, noun: String = "container") extends DirectStore {
    override def describe: String = "failing"
    override def identity: StoreIdentity = StoreIdentity("http://127.0.0.1:10000/devstoreaccount1", "ckpt", noun)
    override def create(path: Path, overwrite: Boolean, writeId: String): Upload = throw failure
    override def put(path: Path, file: java.io.File, writeId: String): Boolean = throw failure
    override def uploads(path: Path): Seq[(String, Option[Instant])] = throw failure
    override def abort(path: Path, uploadId: String): Unit = throw failure
    override def head(path: Path): Option[String] = throw failure
    override def exists(path: Path, file: Boolean): Boolean = throw failure
    override def list(dir: Path): Array[FileStatus] = throw failure
    override def open(path: Path, length: Option[Long]): FSDataInputStream = throw failure
    override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] = throw failure
    override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit = throw failure
  }

  /** The failure of a store with a 404 carrying no code (GCS's answer to a write into a missing bucket). */
  private final class StatusOnly(status: Int) extends IOException(s"Upload failed: $status\n{ code: $status }") {
    def statusCode(): Int = status
  }

  private val calls: Seq[(String, DirectStore => Any)] = Seq(
    "create" -> (_.create(path, false, "w")),
    "exists" -> (_.exists(path, true)),
    "list" -> (_.list(path)),
    "head" -> (_.head(path)),
    "open" -> (_.open(path, None)),
    "delete" -> (_.delete(path, None, true)))

  test("a missing container, met by any request, says so first, the store's answer as its cause") {
    val answer = new AzureBlobException(404, "ContainerNotFound", "GET ...: 404 The specified container does not exist.")
    for ((name, call) <- calls) {
      val e = intercept[BucketNotFoundException](call(new NamedRefusals(new FailingStore(answer))))
      assert(e.getMessage.linesIterator.next().startsWith(s"$path: the container 'ckpt' does not exist (at " +
        "http://127.0.0.1:10000/devstoreaccount1)"), name)
      assert(e.getCause eq answer, name)
      assert(Failures.classify(e).error == "BucketNotFoundError", name)
    }
  }

  test("a 404 to a write is a missing bucket; to a read or probe it is the file's, unchanged") {
    val store = new NamedRefusals(new FailingStore(new StatusOnly(404), noun = "bucket"))
    val created = intercept[BucketNotFoundException](store.create(path, false, "w"))
    assert(created.getMessage.contains("the bucket 'ckpt' does not exist"))
    assert(created.getMessage.linesIterator.size == 1, "only the first line of the store's answer is quoted")
    val read = intercept[IOException](store.open(path, None))
    assert(read.isInstanceOf[StatusOnly], read)
  }

  test("refused credentials (401, 403, an auth code) say so first, as an AccessDeniedException") {
    for (answer <- Seq(new AzureBlobException(403, "AuthorizationFailure", "HEAD ...: 403 Server failed to " +
        "authenticate the request"), new StatusOnly(401), new java.nio.file.AccessDeniedException("s3a://b/k"))) {
      for ((name, call) <- calls) {
        val e = intercept[CredentialsRefusedException](call(new NamedRefusals(new FailingStore(answer))))
        assert(e.isInstanceOf[java.nio.file.AccessDeniedException])
        assert(e.getMessage.startsWith(s"$path: the store refused the credentials for the container 'ckpt'"), name)
        assert(e.getCause eq answer, name)
      }
    }
  }

  test("other failures, and an exception already said plainly, pass unchanged") {
    for (answer <- Seq(new AzureBlobException(500, "InternalError", "500"), new AzureBlobException(412,
        "ConditionNotMet", "412"), new java.net.SocketTimeoutException("read timed out"), new IOException("other"),
        new BucketNotFoundException("said", null))) {
      for ((name, call) <- calls) {
        val e = intercept[IOException](call(new NamedRefusals(new FailingStore(answer))))
        assert(e eq answer, s"$name: $answer")
      }
    }
  }
}
