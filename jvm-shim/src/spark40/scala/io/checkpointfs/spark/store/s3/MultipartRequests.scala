package io.checkpointfs.spark
package store
package s3

import org.apache.hadoop.fs.s3a.api.RequestFactory
import org.apache.hadoop.fs.s3a.impl.PutObjectOptions
import software.amazon.awssdk.services.s3.model.{CompletedPart, CompleteMultipartUploadRequest,
  CreateMultipartUploadRequest, UploadPartRequest}

/** Multipart requests built by S3A's request factory, with Hadoop 3.4.1's signatures (see `SdkV2Uploader`). */
private[spark] object MultipartRequests {
  def create(requests: RequestFactory, key: String): CreateMultipartUploadRequest.Builder =
    requests.newMultipartUploadRequestBuilder(key, PutObjectOptions.keepingDirs())

  def part(requests: RequestFactory, key: String, uploadId: String, partNumber: Int, size: Long): UploadPartRequest.Builder =
    requests.newUploadPartRequestBuilder(key, uploadId, partNumber, size)

  def complete(requests: RequestFactory, key: String, uploadId: String,
               parts: java.util.List[CompletedPart]): CompleteMultipartUploadRequest.Builder =
    requests.newCompleteMultipartUploadRequestBuilder(key, uploadId, parts)
}
