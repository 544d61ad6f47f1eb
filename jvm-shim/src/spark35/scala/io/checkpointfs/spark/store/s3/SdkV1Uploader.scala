package io.checkpointfs.spark
package store
package s3

import java.io.{ByteArrayInputStream, FileNotFoundException}
import java.time.Instant

import com.amazonaws.AmazonClientException
import com.amazonaws.services.s3.AmazonS3
import com.amazonaws.services.s3.model._
import org.apache.hadoop.fs.FileSystem
import org.apache.hadoop.fs.s3a.{S3AFileSystem, S3AUtils}
import org.apache.hadoop.fs.s3a.api.RequestFactory

/** Everything that touches S3A or the SDK, loaded only for S3A file systems. */
private[spark] object SdkV1 {
  /** The uploader on the S3 client of the S3A file system `fs` (its credentials, endpoint, region, SDK retries). */
  def uploader(fs: FileSystem): MultipartUploader = {
    val s3a = fs.asInstanceOf[S3AFileSystem]
    val s3 = s3a.getAmazonS3ClientForTesting("checkpointfs: put-if-absent checkpoint writes (If-None-Match)")
    new SdkV1Uploader(s3, fs.getUri.getHost, s3a.getRequestFactory)
  }
}

/**
 * The shim's requests on AWS SDK v1. Every request is built by S3A's request factory (Hadoop 3.3.4's
 * `RequestFactory`), so it carries what S3A puts on its own: server-side encryption (`fs.s3a.encryption.*`, the SSE-C
 * key on HEAD and parts too), canned ACL, and the audit span's preparation. The shim adds the write id (user
 * metadata) and `If-None-Match: *`.
 */
private final class SdkV1Uploader(s3: AmazonS3, bucket: String, requests: RequestFactory) extends MultipartUploader {
  private val IfNoneMatch = "If-None-Match"

  /** The SDK's failures as S3A reports them (S3AUtils.translateException): the same error kinds as S3A's own
   * requests (AccessDeniedException, UnknownStoreException, AWSServiceThrottledException, FileNotFoundException,
   * RemoteFileChangedException for 412, InterruptedIOException...). */
  private def call[T](operation: String, key: String)(body: => T): T =
    try body
    catch { case e: AmazonClientException => throw S3AUtils.translateException(operation, s"s3a://$bucket/$key", e) }

  /** S3A's object metadata for a new object of `len` bytes (-1: unknown), with the write id. */
  private def metadata(writeId: String, len: Long): ObjectMetadata = {
    val md = requests.newObjectMetadata(len)
    md.addUserMetadata(Protocol.WriteIdKey, writeId)
    md
  }

  override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    put(key, data, len, ifNoneMatch, writeId, checksum(data, len))

  override def checksum(data: Array[Byte], len: Int): String = Checksums.sha256(data, len)

  /** PutObject with the body's SHA-256 (`x-amz-checksum-sha256`, a header SDK v1 does not model), which S3 keeps. */
  override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String,
      checksum: String): Unit = {
    val request = requests.newPutObjectRequest(key, metadata(writeId, len), new ByteArrayInputStream(data, 0, len))
    Checksums.value(checksum, "sha256").foreach { v =>
      request.putCustomRequestHeader("x-amz-checksum-sha256", v)
    }
    request.getRequestClientOptions.setReadLimit(len + 1) // the SDK may resend the whole body
    if (ifNoneMatch) request.putCustomRequestHeader(IfNoneMatch, "*")
    call("PutObject", key)(s3.putObject(request))
  }

  override def putFile(key: String, file: java.io.File, writeId: String): Unit =
    call("PutObject", key)(s3.putObject(requests.newPutObjectRequest(key, metadata(writeId, file.length), file)))

  override def startMultipart(key: String, writeId: String): String = {
    val request = requests.newMultipartUploadRequest(key)
    Option(request.getObjectMetadata).getOrElse {
      request.setObjectMetadata(new ObjectMetadata())
      request.getObjectMetadata
    }.addUserMetadata(Protocol.WriteIdKey, writeId)
    call("CreateMultipartUpload", key)(s3.initiateMultipartUpload(request).getUploadId)
  }

  override def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String = {
    val request = requests.newUploadPartRequest(key, uploadId, partNumber, len, new ByteArrayInputStream(data, 0, len),
      null, 0L)
    request.getRequestClientOptions.setReadLimit(len + 1)
    call("UploadPart", key)(s3.uploadPart(request).getETag)
  }

  override def complete(key: String, uploadId: String, etags: Seq[String], ifNoneMatch: Boolean): Unit = {
    val parts = new java.util.ArrayList[PartETag]()
    etags.zipWithIndex.foreach { case (etag, i) => parts.add(new PartETag(i + 1, etag)) }
    val request = requests.newCompleteMultipartUploadRequest(key, uploadId, parts)
    if (ifNoneMatch) request.putCustomRequestHeader(IfNoneMatch, "*")
    call("CompleteMultipartUpload", key)(s3.completeMultipartUpload(request))
  }

  override def abort(key: String, uploadId: String): Unit =
    call("AbortMultipartUpload", key)(s3.abortMultipartUpload(requests.newAbortMultipartUploadRequest(key, uploadId)))

  override def delete(key: String): Unit =
    call("DeleteObject", key)(s3.deleteObject(requests.newDeleteObjectRequest(key)))

  override def writeId(key: String): Option[String] = kept(key).map(_.writeId)

  /** HeadObject with `x-amz-checksum-mode: ENABLED`: the write id, and the checksum and size S3 kept. */
  override def kept(key: String): Option[Kept] =
    try {
      val request = requests.newGetObjectMetadataRequest(key)
      request.putCustomRequestHeader("x-amz-checksum-mode", "ENABLED")
      val head = call("HeadObject", key)(s3.getObjectMetadata(request))
      def raw(name: String): String = Option(head.getRawMetadataValue(name)).map(_.toString).orNull
      Some(Kept(Option(head.getUserMetaDataOf(Protocol.WriteIdKey)).getOrElse(""),
        Checksums.named(Seq("sha256" -> raw("x-amz-checksum-sha256"), "crc32c" -> raw("x-amz-checksum-crc32c"),
          "crc32" -> raw("x-amz-checksum-crc32"), "sha1" -> raw("x-amz-checksum-sha1"))),
        head.getContentLength))
    } catch { case _: FileNotFoundException => None }

  override def uploads(key: String): Seq[(String, Option[Instant])] = {
    val listing = call("ListMultipartUploads", key)(s3.listMultipartUploads(
      requests.newListMultipartUploadsRequest(MultipartUploader.uploadsPrefix(bucket, key))))
    val out = Seq.newBuilder[(String, Option[Instant])]
    listing.getMultipartUploads.forEach { u =>
      if (u.getKey == key) out += ((u.getUploadId, Option(u.getInitiated).map(_.toInstant)))
    }
    out.result()
  }
}
