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
  private class Bucket(honoursPut: Boolean = true, honoursComplete: Boolean = true) extends ConditionalUploader {
    val objects = mutable.Map.empty[String, String]
    val uploads = mutable.Map.empty[String, String]
    val sent = mutable.ArrayBuffer.empty[String]
    val faults = mutable.Queue.empty[(String, IOException, Boolean)]

    private def request[T](name: String)(apply: => T): T = {
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

  private val store = StoreCheck.Store("http://127.0.0.1:9000", "bucket")

  private def check(bucket: ConditionalUploader, kind: StoreCheck.Kind = StoreCheck.PutObject): Unit =
    StoreCheck.ensure(kind, store, bucket, "cp/offsets", "s3a://bucket/cp/offsets/0")

  test("a store that refuses the second put-if-absent passes with 3 requests, once per JVM") {
    val bucket = new Bucket()
    check(bucket)
    assert(bucket.sent == Seq("PutObject", "PutObject", "DeleteObject"))
    assert(bucket.objects.isEmpty)
    check(bucket)
    assert(bucket.sent.size == 3)
  }

  test("the canary is in the file's directory, under the reserved name") {
    val bucket = new Bucket(honoursPut = false)
    val seen = mutable.Set.empty[String]
    val spying = new ConditionalUploader {
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
    assert(bucket.sent == Seq("PutObject", "PutObject", "DeleteObject"))
    intercept[UnsafeStoreException](check(bucket))
    assert(bucket.sent.size == 3, "the verdict is remembered: no new requests")
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
    assert(bucket.sent == Seq("PutObject", "HeadObject", "PutObject", "DeleteObject"))
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

  test("the multipart gate runs the check once, before the write that passes the limit") {
    var checks = 0
    val sink = new ByteArrayOutputStream()
    val gate = new MultipartGate(sink, 10, () => checks += 1)
    gate.write(new Array[Byte](10), 0, 10)
    assert(checks == 0)
    gate.write(1)
    assert(checks == 1 && sink.size == 11)
    gate.write(new Array[Byte](100), 0, 100)
    assert(checks == 1)
    val failing = new MultipartGate(new ByteArrayOutputStream(), 0, () => throw new UnsafeStoreException("no"))
    intercept[UnsafeStoreException](failing.write(1))
  }
}
