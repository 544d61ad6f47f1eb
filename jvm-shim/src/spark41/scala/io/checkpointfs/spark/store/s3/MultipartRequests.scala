package io.checkpointfs.spark
package store
package s3

import org.apache.hadoop.fs.s3a.api.RequestFactory
import org.apache.hadoop.fs.s3a.impl.PutObjectOptions
import software.amazon.awssdk.services.s3.model.{CompletedPart, CompleteMultipartUploadRequest,
  CreateMultipartUploadRequest, UploadPartRequest}

/**
 * Multipart requests built by S3A's request factory, with Hadoop 3.4.2's signatures (see `SdkV2Uploader`). On this
 * line S3A's own conditional create uploads large checkpoint files, so these serve the store check's multipart
 * half ([[io.checkpointfs.spark.StoreCheck]]). `PutObjectOptions.defaultOptions()`: Hadoop 3.5 dropped
 * `keepingDirs()`, which 3.4.2's `defaultOptions()` returns.
 */
private[spark] object MultipartRequests {
  def create(requests: RequestFactory, key: String): CreateMultipartUploadRequest.Builder =
    requests.newMultipartUploadRequestBuilder(key, PutObjectOptions.defaultOptions())

  /** Every part is declared possibly the last: the uploader does not know, and S3 checks part sizes itself. */
  def part(requests: RequestFactory, key: String, uploadId: String, partNumber: Int, size: Long): UploadPartRequest.Builder =
    requests.newUploadPartRequestBuilder(key, uploadId, partNumber, true, size)

  def complete(requests: RequestFactory, key: String, uploadId: String,
               parts: java.util.List[CompletedPart]): CompleteMultipartUploadRequest.Builder =
    requests.newCompleteMultipartUploadRequestBuilder(key, uploadId, parts, PutObjectOptions.defaultOptions())
}
