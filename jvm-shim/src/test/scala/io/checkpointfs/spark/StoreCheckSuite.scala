package io.checkpointfs.spark

import java.io.{ByteArrayOutputStream, IOException}
import java.time.Instant

import scala.collection.mutable

import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/**
 * The store check ([[StoreCheck]]) on an in-memory stand-in for S3's conditional requests: the verdicts, the
 * requests each check sends, and no verdict from failures that are neither a refusal nor a success.
 */
class StoreCheckSuite extends AnyFunSuite with BeforeAndAfterEach {

  override def beforeEach(): Unit = StoreCheck.forget()

  /** An S3 bucket in memory: objects with their write ids; `honoursPut`/`honoursComplete` say whether
   * `If-None-Match: *` is enforced; `faults` are thrown by the next requests, after (`applied`) or before applying. */
  private class Bucket(honoursPut: Boolean = true, honoursComplete: Boolean = true) extends MultipartUploader {
    val objects = mutable.Map.empty[String, String]
    val uploads = mutable.Map.empty[String, String]
    val sent = mutable.ArrayBuffer.empty[String]
    val faults = mutable.Queue.empty[(String, IOException, Boolean)]

    protected def request[T](name: String)(apply: => T): T = {
      sent += name
      faults.dequeueFirst(_._1 == name) match {
        case Some((_, e, applied)) =>
          if (applied) apply
          throw e
        case None => apply
      }
    }

    private def write(key: String, writeId: String, conditional: Boolean, honours: Boolean): Unit = {
      if (conditional && honours && objects.contains(key)) throw new StatusCodeException(412)
      objects(key) = writeId
    }

    override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
      request("PutObject")(write(key, writeId, ifNoneMatch, honoursPut))
    override def putFile(key: String, file: java.io.File, writeId: String): Unit = throw new UnsupportedOperationException
    override def startMultipart(key: String, writeId: String): String = request("CreateMultipartUpload") {
      val id = s"upload-${uploads.size + 1}"
      uploads(id) = writeId
      id
    }
    override def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String =
      request("UploadPart")("etag-1")
    override def complete(key: String, uploadId: String, etags: Seq[String], ifNoneMatch: Boolean): Unit =
      request("CompleteMultipartUpload") {
        write(key, uploads(uploadId), ifNoneMatch, honoursComplete)
        uploads.remove(uploadId)
      }
    override def abort(key: String, uploadId: String): Unit = request("AbortMultipartUpload")(uploads.remove(uploadId))
    override def writeId(key: String): Option[String] = request("HeadObject")(objects.get(key))
    override def uploads(key: String): Seq[(String, Option[Instant])] =
      request("ListMultipartUploads")(uploads.keys.toSeq.sorted.map(id => (id, None)))
    override def delete(key: String): Unit = request("DeleteObject")(objects.remove(key))
  }

  private val store = StoreIdentity("http://127.0.0.1:9000", "bucket")

  private def check(bucket: ConditionalUploader, kind: StoreCheck.Kind = StoreCheck.PutObject): Unit =
    StoreCheck.ensure(kind, store, bucket, "cp/offsets", "s3a://bucket/cp/offsets/0")

  test("a store that refuses the second put-if-absent passes with 5 requests, once per JVM") {
    val bucket = new Bucket()
    check(bucket)
    assert(bucket.sent == Seq("HeadObject", "PutObject", "HeadObject", "PutObject", "DeleteObject"))
    assert(bucket.objects.isEmpty)
    check(bucket)
    assert(bucket.sent.size == 5)
  }

  test("the canary is in the file's directory, under the reserved name") {
    val bucket = new Bucket(honoursPut = false)
    val seen = mutable.Set.empty[String]
    val spying = new MultipartUploader {
      override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit = {
        seen += key
        bucket.put(key, data, len, ifNoneMatch, writeId)
      }
      override def putFile(key: String, file: java.io.File, writeId: String): Unit = ()
      override def startMultipart(key: String, writeId: String): String = bucket.startMultipart(key, writeId)
      override def uploadPart(key: String, u: String, n: Int, d: Array[Byte], l: Int): String = bucket.uploadPart(key, u, n, d, l)
      override def complete(key: String, u: String, e: Seq[String], c: Boolean): Unit = bucket.complete(key, u, e, c)
      override def abort(key: String, u: String): Unit = bucket.abort(key, u)
      override def writeId(key: String): Option[String] = bucket.writeId(key)
      override def uploads(key: String): Seq[(String, Option[Instant])] = Nil
      override def delete(key: String): Unit = bucket.delete(key)
    }
    intercept[UnsafeStoreException](check(spying))
    assert(seen.size == 1 && seen.head.startsWith("cp/offsets/" + Protocol.StoreCheckCanaryPrefix))
  }

  test("a store that ignores If-None-Match on PutObject is refused, named, and remembered") {
    val bucket = new Bucket(honoursPut = false)
    val e = intercept[UnsafeStoreException](check(bucket))
    val message = e.getMessage
    assert(message.startsWith("s3a://bucket/cp/offsets/0: the store (bucket 'bucket' at http://127.0.0.1:9000)"))
    assert(message.contains("the second PutObject succeeded") && message.contains("checkpointfs doctor"))
    assert(message.contains(Protocol.StoreCheckKey + "=false"))
    assert(e.isInstanceOf[CheckpointStoreConfigException])
    assert(bucket.objects.isEmpty, "the canary is deleted")
    assert(bucket.sent == Seq("HeadObject", "PutObject", "HeadObject", "PutObject", "DeleteObject"))
    intercept[UnsafeStoreException](check(bucket))
    assert(bucket.sent.size == 5, "the verdict is remembered: no new requests")
  }

  test("the multipart check: refused completion passes with 7 requests; an accepted one is unsafe") {
    val good = new Bucket()
    check(good, StoreCheck.Multipart)
    assert(good.sent == Seq("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload",
      "AbortMultipartUpload", "ListMultipartUploads", "DeleteObject"))
    assert(good.objects.isEmpty && good.uploads.isEmpty)

    StoreCheck.forget()
    val ceph = new Bucket(honoursComplete = false) // Ceph RGW before 2025: PutObject honoured, completion not
    check(ceph)
    val e = intercept[UnsafeStoreException](check(ceph, StoreCheck.Multipart))
    assert(e.getMessage.contains("CompleteMultipartUpload succeeded over the existing object"))
    assert(ceph.objects.isEmpty && ceph.uploads.isEmpty)

    StoreCheck.forget()
    val lost = new Bucket() // the first CreateMultipartUpload landed, its answer lost, and the SDK retried it
    lost.startMultipart("cp/offsets/" + Protocol.StoreCheckCanaryPrefix + "x", "hidden")
    check(lost, StoreCheck.Multipart)
    assert(lost.uploads.isEmpty, "the upload the hidden retry left open is aborted too")
  }

  test("a lost answer to the canary's create is settled by its write id") {
    val bucket = new Bucket()
    bucket.faults += (("PutObject", new StatusCodeException(500), true))
    check(bucket)
    assert(bucket.sent == Seq("HeadObject", "PutObject", "HeadObject", "HeadObject", "PutObject", "DeleteObject"))
  }

  test("a head of the missing canary key refused (S3 without s3:ListBucket) fails at start, naming it") {
    val bucket = new Bucket()
    bucket.faults += (("HeadObject", new StatusCodeException(403), false))
    val e = intercept[CredentialsRefusedException](check(bucket))
    assert(e.getMessage.startsWith("s3a://bucket/cp/offsets/0: the store check's head of its canary key"))
    assert(e.getMessage.contains("s3:ListBucket") && e.getMessage.contains("'bucket'"))
    assert(bucket.sent == Seq("HeadObject") && bucket.objects.isEmpty, "nothing written")
    bucket.faults += (("HeadObject", new StatusCodeException(503), false))
    intercept[IOException](check(bucket)) // anything else is no verdict: the next write checks again
    assert(bucket.sent == Seq("HeadObject", "HeadObject"))
    check(bucket)
    assert(bucket.sent.size == 7)
  }

  private type ObjectKept = io.checkpointfs.spark.Kept
  private val ObjectKept = io.checkpointfs.spark.Kept

  /** A bucket that drops user metadata and keeps the checksum sent with each write (a directory bucket without
   * user metadata). */
  private class NoMetadataBucket extends Bucket() {
    val sums = mutable.Map.empty[String, (String, Long)]
    override def checksum(data: Array[Byte], len: Int): String = Checksums.sha256(data, len)
    override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String,
        checksum: String): Unit = {
      if (!objects.contains(key)) sums(key) = (checksum, len.toLong)
      super.put(key, data, len, ifNoneMatch, "") // the store drops user metadata
    }
    override def kept(key: String): Option[ObjectKept] = request("HeadObject")(objects.get(key).map { id =>
      val (sum, size) = sums.getOrElse(key, ("", -1L))
      ObjectKept(id, sum, size)
    })
  }

  test("a store without user metadata: the canary's lost answer is settled by checksum and size, and said") {
    val bucket = new NoMetadataBucket
    bucket.faults += (("PutObject", new StatusCodeException(500), true))
    check(bucket)
    assert(bucket.sent == Seq("HeadObject", "PutObject", "HeadObject", "HeadObject", "PutObject", "DeleteObject"))
    assert(bucket.sums.values.forall(_._1.startsWith("sha256:")))
    assert(StoreCheck.keeps(Some(ObjectKept("", "sha256:x", 3))).contains("settled by checksum and size"))
    assert(StoreCheck.keeps(Some(ObjectKept("w", "", 3))).contains("settled by the write id"))
    assert(StoreCheck.keeps(Some(ObjectKept("", "", 3))).contains("cannot be settled"))
  }

  test("a second write that failed but landed is unsafe; one that failed without landing gives no verdict") {
    val firstFails = new Bucket(honoursPut = false)
    firstFails.faults += (("PutObject", new StatusCodeException(500), false)) // the canary's create: not applied
    val noCanary = intercept[IOException](check(firstFails))
    assert(!noCanary.isInstanceOf[UnsafeStoreException] && noCanary.getMessage.contains("could not create its canary"))

    val replaced = new Bucket(honoursPut = false) {
      private var puts = 0
      override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit = {
        puts += 1
        super.put(key, data, len, ifNoneMatch, writeId)
        if (puts == 2) throw new StatusCodeException(503)
      }
    }
    val e = intercept[UnsafeStoreException](check(replaced))
    assert(e.getMessage.contains("the second write landed although the store answered"))

    StoreCheck.forget()
    val throttled = new Bucket() {
      private var puts = 0
      override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit = {
        puts += 1
        if (puts == 2) throw new StatusCodeException(503) // throttled to the end, nothing applied
        super.put(key, data, len, ifNoneMatch, writeId)
      }
    }
    val noVerdict = intercept[IOException](check(throttled))
    assert(!noVerdict.isInstanceOf[UnsafeStoreException])
    assert(noVerdict.getMessage.contains("could not be checked"))
    assert(throttled.objects.isEmpty, "the canary is deleted")
    check(new Bucket()) // no verdict was remembered: the next write checks again
  }

  /** An upload that keeps what it is given. */
  private final class Kept extends Upload {
    val bytes = new ByteArrayOutputStream()
    var closed = false
    override def write(b: Int): Unit = bytes.write(b)
    override def close(): Unit = closed = true
    override def abort(): org.apache.hadoop.fs.Abortable.AbortableResult = Upload.aborted(closed)
    override def startedMultipart: Boolean = false
  }

  test("the store's gate runs the large check once, before the write that passes the limit") {
    var checks = 0
    val sink = new Kept
    val gate = new CheckedStore.Gate(sink, 10, () => checks += 1)
    gate.write(new Array[Byte](10), 0, 10)
    assert(checks == 0)
    gate.write(1)
    assert(checks == 1 && sink.bytes.size == 11)
    gate.write(new Array[Byte](100), 0, 100)
    assert(checks == 1)
    gate.close()
    assert(sink.closed && gate.hasCapability(Upload.AbortableCapability))
    val failing = new CheckedStore.Gate(new Kept, 0, () => throw new UnsafeStoreException("no"))
    intercept[UnsafeStoreException](failing.write(1))
  }

  /** A store on `bucket` whose uploads are [[Kept]], with the S3 checks before its put-if-absent writes. */
  private final class KeptStore(bucket: Bucket) extends DirectStore {
    val created = mutable.ArrayBuffer.empty[(String, Boolean)]
    override def describe: String = "kept"
    override def identity: StoreIdentity = store
    override def create(path: org.apache.hadoop.fs.Path, overwrite: Boolean, writeId: String): Upload = {
      created += ((path.toString, overwrite))
      new Kept
    }
    override def put(path: org.apache.hadoop.fs.Path, file: java.io.File, writeId: String): Boolean = false
    override def uploads(path: org.apache.hadoop.fs.Path): Seq[(String, Option[Instant])] = Nil
    override def abort(path: org.apache.hadoop.fs.Path, uploadId: String): Unit = ()
    override def head(path: org.apache.hadoop.fs.Path): Option[String] = None
    override def exists(path: org.apache.hadoop.fs.Path, file: Boolean): Boolean = false
    override def list(dir: org.apache.hadoop.fs.Path): Array[org.apache.hadoop.fs.FileStatus] = Array.empty
    override def open(path: org.apache.hadoop.fs.Path, length: Option[Long]): org.apache.hadoop.fs.FSDataInputStream =
      throw new UnsupportedOperationException
    override def readListed(status: org.apache.hadoop.fs.FileStatus): Option[() => Option[Array[Byte]]] = None
    override def delete(path: org.apache.hadoop.fs.Path, listed: Option[org.apache.hadoop.fs.FileStatus],
        file: Boolean): Unit = ()
  }

  test("CheckedStore: the put check before a put-if-absent, the multipart one past the limit, none to overwrite") {
    val bucket = new Bucket()
    val inner = new KeptStore(bucket)
    val checked = new CheckedStore(inner, StoreCheck.Plan(StoreCheck.PutObject, StoreCheck.Multipart, bucket, 4))
    val path = new org.apache.hadoop.fs.Path("s3a://bucket/cp/offsets/0")
    val overwrite = checked.create(path, overwrite = true, "w0")
    overwrite.write(new Array[Byte](10), 0, 10)
    assert(bucket.sent.isEmpty, "an overwrite is not checked")
    val small = checked.create(path, overwrite = false, "w1")
    assert(bucket.sent == Seq("HeadObject", "PutObject", "HeadObject", "PutObject", "DeleteObject"))
    small.write(new Array[Byte](4), 0, 4)
    assert(bucket.sent.size == 5)
    small.write(1)
    assert(bucket.sent.size == 12 && bucket.sent.drop(5).head == "PutObject", "the multipart check, 7 requests")
    assert(inner.created.map(_._2) == Seq(true, false))
    checked.create(path, overwrite = false, "w2").write(new Array[Byte](100), 0, 100)
    assert(bucket.sent.size == 12, "both verdicts are remembered")
    assert(checked.identity == store && checked.describe == "kept")
  }
}
