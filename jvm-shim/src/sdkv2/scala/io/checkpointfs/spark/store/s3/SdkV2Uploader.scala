package io.checkpointfs.spark
package store
package s3

import java.io.{ByteArrayInputStream, FileNotFoundException}
import java.time.Instant

import org.apache.hadoop.fs.FileSystem
import org.apache.hadoop.fs.s3a.{S3AFileSystem, S3AUtils}
import org.apache.hadoop.fs.s3a.api.RequestFactory
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration
import software.amazon.awssdk.core.exception.SdkException
import software.amazon.awssdk.core.sync.RequestBody
import software.amazon.awssdk.services.s3.S3Client
import software.amazon.awssdk.services.s3.model._

import io.checkpointfs.spark.Protocol // explicit: the SDK's model package has a Protocol too

/**
 * The shim's own conditional requests through the S3 client S3A configured (AWS SDK v2: Hadoop 3.4.1 and later;
 * shared by the spark40 and spark41 jar groups). `If-None-Match: *` is set through the request's override
 * configuration, which every SDK v2 release S3A ships accepts (2.24 has no `ifNoneMatch` field).
 *
 * Every request but the listing of uploads is built by S3A's own request factory, so it carries what S3A puts on
 * its own: server-side encryption (`fs.s3a.encryption.*`, the SSE-C key on the HEAD and the parts too), canned ACL,
 * storage class, content encoding, and the audit span's preparation. The multipart builders' signatures differ
 * between Hadoop 3.4.1 and 3.4.2, so each jar group's `compat.MultipartRequests` calls them.
 */
private[spark] object SdkV2Uploader {
  /** The uploader on the S3 client of the S3A file system `fs` (its credentials, endpoint, region, SDK retries). */
  def apply(fs: FileSystem): SdkV2Uploader = {
    val s3 = fs.asInstanceOf[S3AFileSystem].getS3AInternals
      .getAmazonS3Client("checkpointfs: put-if-absent checkpoint writes (If-None-Match)")
    new SdkV2Uploader(s3, fs.getUri.getHost, fs.asInstanceOf[S3AFileSystem].getRequestFactory)
  }
}

private[spark] final class SdkV2Uploader(s3: S3Client, bucket: String, requests: RequestFactory)
  extends MultipartUploader {

  /** The SDK's failures as S3A reports them (S3AUtils.translateException): the same error kinds as S3A's own
   * requests (AccessDeniedException, UnknownStoreException, AWSServiceThrottledException, FileNotFoundException,
   * RemoteFileChangedException for 412, InterruptedIOException...). */
  private def call[T](operation: String, key: String)(body: => T): T =
    try body
    catch { case e: SdkException => throw S3AUtils.translateException(operation, s"s3a://$bucket/$key", e) }

  /** `current` (what S3A's request factory set, if anything) plus `If-None-Match: *`. */
  private def ifNoneMatch(current: AwsRequestOverrideConfiguration): AwsRequestOverrideConfiguration =
    Option(current).map(_.toBuilder).getOrElse(AwsRequestOverrideConfiguration.builder())
      .putHeader("If-None-Match", "*").build()

  private def body(data: Array[Byte], len: Int): RequestBody =
    RequestBody.fromContentProvider(() => new ByteArrayInputStream(data, 0, len), len.toLong,
      "application/octet-stream")

  private def metadata(writeId: String): java.util.Map[String, String] =
    java.util.Collections.singletonMap(Protocol.WriteIdKey, writeId)

  override def put(key: String, data: Array[Byte], len: Int, conditional: Boolean, writeId: String): Unit =
    put(key, data, len, conditional, writeId, checksum(data, len))

  override def checksum(data: Array[Byte], len: Int): String = Checksums.sha256(data, len)

  /** PutObject with the body's SHA-256 (`x-amz-checksum-sha256`, which S3 verifies and keeps; never Content-MD5,
   * which directory buckets refuse). The value alone: with `checksumAlgorithm` set too, SDK 2.35 adds a checksum
   * of its own that MinIO finds does not match (400 XAmzContentChecksumMismatch on every put). */
  override def put(key: String, data: Array[Byte], len: Int, conditional: Boolean, writeId: String,
      checksum: String): Unit = {
    val request = requests.newPutObjectRequestBuilder(key, null, len.toLong, false).metadata(metadata(writeId))
    Checksums.value(checksum, "sha256").foreach(v => request.checksumSHA256(v))
    if (conditional) request.overrideConfiguration(ifNoneMatch(request.overrideConfiguration()))
    call("PutObject", key)(s3.putObject(request.build(), body(data, len)))
  }

  override def putFile(key: String, file: java.io.File, writeId: String): Unit = {
    val request = requests.newPutObjectRequestBuilder(key, null, file.length, false).metadata(metadata(writeId))
    call("PutObject", key)(s3.putObject(request.build(), RequestBody.fromFile(file)))
  }

  override def startMultipart(key: String, writeId: String): String =
    call("CreateMultipartUpload", key) {
      val built = MultipartRequests.create(requests, key).build()
      val withId = new java.util.HashMap[String, String](built.metadata())
      withId.put(Protocol.WriteIdKey, writeId)
      s3.createMultipartUpload(built.toBuilder.metadata(withId).build()).uploadId
    }

  override def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String =
    call("UploadPart", key) {
      s3.uploadPart(MultipartRequests.part(requests, key, uploadId, partNumber, len.toLong).build(),
        body(data, len)).eTag
    }

  override def complete(key: String, uploadId: String, etags: Seq[String], conditional: Boolean): Unit = {
    val parts = new java.util.ArrayList[CompletedPart]()
    etags.zipWithIndex.foreach { case (etag, i) =>
      parts.add(CompletedPart.builder().partNumber(i + 1).eTag(etag).build())
    }
    val request = MultipartRequests.complete(requests, key, uploadId, parts)
    if (conditional) request.overrideConfiguration(ifNoneMatch(request.overrideConfiguration()))
    call("CompleteMultipartUpload", key)(s3.completeMultipartUpload(request.build()))
  }

  override def abort(key: String, uploadId: String): Unit =
    call("AbortMultipartUpload", key) {
      s3.abortMultipartUpload(requests.newAbortMultipartUploadRequestBuilder(key, uploadId).build())
    }

  override def delete(key: String): Unit =
    call("DeleteObject", key)(s3.deleteObject(requests.newDeleteObjectRequestBuilder(key).build()))

  override def writeId(key: String): Option[String] = kept(key).map(_.writeId)

  /** HeadObject with checksum mode on: the write id, and the checksum and size S3 kept. */
  override def kept(key: String): Option[Kept] =
    try {
      val head = call("HeadObject", key)(s3.headObject(
        requests.newHeadObjectRequestBuilder(key).checksumMode(ChecksumMode.ENABLED).build()))
      Some(Kept(Option(head.metadata.get(Protocol.WriteIdKey)).getOrElse(""),
        Checksums.named(Seq("sha256" -> head.checksumSHA256, "crc32c" -> head.checksumCRC32C,
          "crc32" -> head.checksumCRC32, "sha1" -> head.checksumSHA1)),
        Option(head.contentLength).map(_.longValue).getOrElse(-1L)))
    } catch { case _: FileNotFoundException => None }

  override def uploads(key: String): Seq[(String, Option[Instant])] = {
    val listing = call("ListMultipartUploads", key)(
      s3.listMultipartUploads(ListMultipartUploadsRequest.builder().bucket(bucket)
        .prefix(MultipartUploader.uploadsPrefix(bucket, key)).build()))
    val out = Seq.newBuilder[(String, Option[Instant])]
    listing.uploads.forEach { u =>
      if (u.key == key) out += ((u.uploadId, Option(u.initiated)))
    }
    out.result()
  }
}
