package io.checkpointfs.spark.compat

import java.io.{ByteArrayInputStream, FileNotFoundException}
import java.time.Instant

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.fs.s3a.{S3AFileSystem, S3AUtils}
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration
import software.amazon.awssdk.core.exception.SdkException
import software.amazon.awssdk.core.sync.RequestBody
import software.amazon.awssdk.services.s3.S3Client
import software.amazon.awssdk.services.s3.model._

import io.checkpointfs.spark.{ConditionalUploader, DirectStore, OwnConditionalWriteStore}

/**
 * Spark 4.0 (Hadoop 3.4.1, AWS SDK v2 2.24): S3A has no conditional create, so the shim sends PutObject and
 * CompleteMultipartUpload with `If-None-Match: *` itself, through the S3 client S3A configured. The header is set
 * through the request's override configuration (this SDK release has no `ifNoneMatch` field).
 */
private[spark] object LineStore {
  val PutIfAbsent = "the shim's own If-None-Match: * PutObject / CompleteMultipartUpload (S3A's AWS SDK v2 client)"
  private val S3AClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"

  def open(fs: FileSystem, path: Path): Option[DirectStore] =
    if (fs.getClass.getName != S3AClass) None
    else {
      OwnConditionalWriteStore.requireConditionalWrites(fs, path, PutIfAbsent)
      Some(SdkV2.store(fs))
    }
}

/** Everything that touches S3A or the SDK, loaded only for S3A file systems. */
private object SdkV2 {
  def store(fs: FileSystem): DirectStore = {
    val s3 = fs.asInstanceOf[S3AFileSystem].getS3AInternals
      .getAmazonS3Client("checkpointfs: put-if-absent checkpoint writes (If-None-Match)")
    new OwnConditionalWriteStore(new SdkV2Uploader(s3, fs.getUri.getHost),
      OwnConditionalWriteStore.partSize(fs.getConf))
  }
}

private final class SdkV2Uploader(s3: S3Client, bucket: String) extends ConditionalUploader {

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
