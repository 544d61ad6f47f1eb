package io.checkpointfs.spark

import java.io.{ByteArrayInputStream, FileNotFoundException}
import java.time.Instant

import org.apache.hadoop.fs.FileSystem
import org.apache.hadoop.fs.s3a.{S3AFileSystem, S3AUtils}
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration
import software.amazon.awssdk.core.exception.SdkException
import software.amazon.awssdk.core.sync.RequestBody
import software.amazon.awssdk.services.s3.S3Client
import software.amazon.awssdk.services.s3.model._

/**
 * The shim's own conditional requests through the S3 client S3A configured (AWS SDK v2: Hadoop 3.4.1 and later;
 * shared by the spark40 and spark41 jar groups). `If-None-Match: *` is set through the request's override
 * configuration, which every SDK v2 release S3A ships accepts (2.24 has no `ifNoneMatch` field).
 */
private[spark] object SdkV2Uploader {
  /** The uploader on the S3 client of the S3A file system `fs` (its credentials, endpoint, region, SDK retries). */
  def apply(fs: FileSystem): SdkV2Uploader = {
    val s3 = fs.asInstanceOf[S3AFileSystem].getS3AInternals
      .getAmazonS3Client("checkpointfs: put-if-absent checkpoint writes (If-None-Match)")
    new SdkV2Uploader(s3, fs.getUri.getHost)
  }
}

private[spark] final class SdkV2Uploader(s3: S3Client, bucket: String) extends ConditionalUploader {

  /** The SDK's failures as S3A reports them (S3AUtils.translateException): the same error kinds as S3A's own
   * requests (AccessDeniedException, UnknownStoreException, AWSServiceThrottledException, FileNotFoundException,
   * RemoteFileChangedException for 412, InterruptedIOException...). */
  private def call[T](operation: String, key: String)(body: => T): T =
    try body
    catch { case e: SdkException => throw S3AUtils.translateException(operation, s"s3a://$bucket/$key", e) }

  private def ifNoneMatch(b: AwsRequestOverrideConfiguration.Builder): Unit = {
    b.putHeader("If-None-Match", "*")
    ()
  }

  private def body(data: Array[Byte], len: Int): RequestBody =
    RequestBody.fromContentProvider(() => new ByteArrayInputStream(data, 0, len), len.toLong,
      "application/octet-stream")

  private def metadata(writeId: String): java.util.Map[String, String] =
    java.util.Collections.singletonMap(DirectStore.WriteIdKey, writeId)

  override def put(key: String, data: Array[Byte], len: Int, conditional: Boolean, writeId: String): Unit = {
    val request = PutObjectRequest.builder().bucket(bucket).key(key).contentLength(len.toLong)
      .metadata(metadata(writeId))
    if (conditional) request.overrideConfiguration(ifNoneMatch(_))
    call("PutObject", key)(s3.putObject(request.build(), body(data, len)))
  }

  override def startMultipart(key: String, writeId: String): String =
    call("CreateMultipartUpload", key) {
      s3.createMultipartUpload(CreateMultipartUploadRequest.builder().bucket(bucket).key(key)
        .metadata(metadata(writeId)).build()).uploadId
    }

  override def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String =
    call("UploadPart", key) {
      s3.uploadPart(UploadPartRequest.builder().bucket(bucket).key(key).uploadId(uploadId).partNumber(partNumber)
        .contentLength(len.toLong).build(), body(data, len)).eTag
    }

  override def complete(key: String, uploadId: String, etags: Seq[String], conditional: Boolean): Unit = {
    val parts = new java.util.ArrayList[CompletedPart]()
    etags.zipWithIndex.foreach { case (etag, i) =>
      parts.add(CompletedPart.builder().partNumber(i + 1).eTag(etag).build())
    }
    val request = CompleteMultipartUploadRequest.builder().bucket(bucket).key(key).uploadId(uploadId)
      .multipartUpload(CompletedMultipartUpload.builder().parts(parts).build())
    if (conditional) request.overrideConfiguration(ifNoneMatch(_))
    call("CompleteMultipartUpload", key)(s3.completeMultipartUpload(request.build()))
  }

  override def abort(key: String, uploadId: String): Unit =
    call("AbortMultipartUpload", key) {
      s3.abortMultipartUpload(AbortMultipartUploadRequest.builder().bucket(bucket).key(key).uploadId(uploadId).build())
    }

  override def writeId(key: String): Option[String] =
    try {
      val head = call("HeadObject", key)(s3.headObject(HeadObjectRequest.builder().bucket(bucket).key(key).build()))
      Some(Option(head.metadata.get(DirectStore.WriteIdKey)).getOrElse(""))
    } catch { case _: FileNotFoundException => None }

  override def uploads(key: String): Seq[(String, Option[Instant])] = {
    val listing = call("ListMultipartUploads", key)(
      s3.listMultipartUploads(ListMultipartUploadsRequest.builder().bucket(bucket).prefix(key).build()))
    val out = Seq.newBuilder[(String, Option[Instant])]
    listing.uploads.forEach { u =>
      if (u.key == key) out += ((u.uploadId, Option(u.initiated)))
    }
    out.result()
  }
}
