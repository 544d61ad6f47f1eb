package io.checkpointfs.spark.compat

import java.io.{ByteArrayInputStream, FileNotFoundException}
import java.time.Instant

import com.amazonaws.AmazonClientException
import com.amazonaws.services.s3.AmazonS3
import com.amazonaws.services.s3.model._
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.fs.s3a.{S3AFileSystem, S3AUtils}

import io.checkpointfs.spark.{ConditionalUploader, DirectStore, OwnConditionalWriteStore}

/**
 * Spark 3.5 (Hadoop 3.3.4, AWS SDK v1): S3A has no conditional create, so the shim sends PutObject and
 * CompleteMultipartUpload with `If-None-Match: *` itself, through the S3 client S3A configured.
 */
private[spark] object LineStore {
  val PutIfAbsent = "the shim's own If-None-Match: * PutObject / CompleteMultipartUpload (S3A's AWS SDK v1 client)"

  def open(fs: FileSystem, path: Path): Option[DirectStore] =
    if (!DirectStore.isS3A(fs)) None
    else {
      OwnConditionalWriteStore.requireConditionalWrites(fs, path, PutIfAbsent)
      Some(SdkV1.store(fs))
    }
}

/** Everything that touches S3A or the SDK, loaded only for S3A file systems. */
private object SdkV1 {
  def store(fs: FileSystem): DirectStore = {
    val s3 = fs.asInstanceOf[S3AFileSystem]
      .getAmazonS3ClientForTesting("checkpointfs: put-if-absent checkpoint writes (If-None-Match)")
    OwnConditionalWriteStore.forCheckpoints(new SdkV1Uploader(s3, fs.getUri.getHost), fs)
  }
}

private final class SdkV1Uploader(s3: AmazonS3, bucket: String) extends ConditionalUploader {
  private val IfNoneMatch = "If-None-Match"

  /** The SDK's failures as S3A reports them (S3AUtils.translateException): the same error kinds as S3A's own
   * requests (AccessDeniedException, UnknownStoreException, AWSServiceThrottledException, FileNotFoundException,
   * RemoteFileChangedException for 412, InterruptedIOException...). */
  private def call[T](operation: String, key: String)(body: => T): T =
    try body
    catch { case e: AmazonClientException => throw S3AUtils.translateException(operation, s"s3a://$bucket/$key", e) }

  private def metadata(writeId: String, len: Long): ObjectMetadata = {
    val md = new ObjectMetadata()
    if (len >= 0) md.setContentLength(len)
    md.addUserMetadata(DirectStore.WriteIdKey, writeId)
    md
  }

  override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit = {
    val request = new PutObjectRequest(bucket, key, new ByteArrayInputStream(data, 0, len), metadata(writeId, len))
    request.getRequestClientOptions.setReadLimit(len + 1) // the SDK may resend the whole body
    if (ifNoneMatch) request.putCustomRequestHeader(IfNoneMatch, "*")
    call("PutObject", key)(s3.putObject(request))
  }

  override def putFile(key: String, file: java.io.File, writeId: String): Unit =
    call("PutObject", key)(s3.putObject(new PutObjectRequest(bucket, key, file).withMetadata(metadata(writeId, file.length))))

  override def startMultipart(key: String, writeId: String): String =
    call("CreateMultipartUpload", key) {
      s3.initiateMultipartUpload(new InitiateMultipartUploadRequest(bucket, key, metadata(writeId, -1))).getUploadId
    }

  override def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String = {
    val request = new UploadPartRequest().withBucketName(bucket).withKey(key).withUploadId(uploadId)
      .withPartNumber(partNumber).withInputStream(new ByteArrayInputStream(data, 0, len)).withPartSize(len.toLong)
    request.getRequestClientOptions.setReadLimit(len + 1)
    call("UploadPart", key)(s3.uploadPart(request).getETag)
  }

  override def complete(key: String, uploadId: String, etags: Seq[String], ifNoneMatch: Boolean): Unit = {
    val parts = new java.util.ArrayList[PartETag]()
    etags.zipWithIndex.foreach { case (etag, i) => parts.add(new PartETag(i + 1, etag)) }
    val request = new CompleteMultipartUploadRequest(bucket, key, uploadId, parts)
    if (ifNoneMatch) request.putCustomRequestHeader(IfNoneMatch, "*")
    call("CompleteMultipartUpload", key)(s3.completeMultipartUpload(request))
  }

  override def abort(key: String, uploadId: String): Unit =
    call("AbortMultipartUpload", key)(s3.abortMultipartUpload(new AbortMultipartUploadRequest(bucket, key, uploadId)))

  override def writeId(key: String): Option[String] =
    try Some(Option(call("HeadObject", key)(s3.getObjectMetadata(bucket, key)).getUserMetaDataOf(DirectStore.WriteIdKey))
      .getOrElse(""))
    catch { case _: FileNotFoundException => None }

  override def uploads(key: String): Seq[(String, Option[Instant])] = {
    val listing = call("ListMultipartUploads", key)(
      s3.listMultipartUploads(new ListMultipartUploadsRequest(bucket).withPrefix(key)))
    val out = Seq.newBuilder[(String, Option[Instant])]
    listing.getMultipartUploads.forEach { u =>
      if (u.getKey == key) out += ((u.getUploadId, Option(u.getInitiated).map(_.toInstant)))
    }
    out.result()
  }
}
