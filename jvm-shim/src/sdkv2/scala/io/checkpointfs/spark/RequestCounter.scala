package io.checkpointfs.spark

import software.amazon.awssdk.core.SdkRequest
import software.amazon.awssdk.core.interceptor.{Context, ExecutionAttribute, ExecutionAttributes, ExecutionInterceptor}
import software.amazon.awssdk.services.s3.model._

/**
 * Counts the requests S3A's S3 client sends for the shim's calls ([[ShimMetrics]]): each HTTP attempt is one request
 * of the call it belongs to, an attempt after the first of one execution (the SDK's retry) or an execution sent
 * again after a failed one (S3A's retry) is a retry, and an answer 503 or 429 is a throttled one. Requests of no
 * checkpoint call pass untouched and uncounted; nothing about a request is changed.
 *
 * S3A loads it from `fs.s3a.audit.execution.interceptors` (Hadoop 3.4 and later, with S3A's auditing on: the
 * default), which `checkpointfs.spark.configure()` sets; it must be set before the S3A file system is created.
 */
class RequestCounter extends ExecutionInterceptor {
  import RequestCounter._

  override def beforeExecution(context: Context.BeforeExecution, attributes: ExecutionAttributes): Unit = {
    val (bucket, key) = target(context.request())
    val call = ShimMetrics.callFor(bucket, key)
    if (call != null) {
      attributes.putAttribute(CallAttribute, call)
      attributes.putAttribute(AttemptsAttribute, Integer.valueOf(0))
    }
  }

  override def beforeTransmission(context: Context.BeforeTransmission, attributes: ExecutionAttributes): Unit = {
    val call = attributes.getAttribute(CallAttribute)
    if (call != null) {
      val attempts = attributes.getAttribute(AttemptsAttribute).intValue
      attributes.putAttribute(AttemptsAttribute, Integer.valueOf(attempts + 1))
      val what = describe(context.request())
      call.requestSent(what, retry = attempts > 0)
      if (log.isDebugEnabled) log.debug("{} request {} (attempt {})", call.operation.name, what, attempts + 1)
    }
  }

  override def afterTransmission(context: Context.AfterTransmission, attributes: ExecutionAttributes): Unit = {
    if (attributes.getAttribute(CallAttribute) != null) {
      val status = context.httpResponse().statusCode()
      if (status == 503 || status == 429) ShimMetrics.throttled.inc()
    }
  }

  override def onExecutionFailure(context: Context.FailedExecution, attributes: ExecutionAttributes): Unit = {
    val call = attributes.getAttribute(CallAttribute)
    if (call != null) call.requestFailed(describe(context.request()))
  }
}

private[spark] object RequestCounter {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[RequestCounter])

  /** The fully-qualified name to list in `fs.s3a.audit.execution.interceptors`. */
  val ClassName: String = classOf[RequestCounter].getName

  /** The SDK refuses a second attribute of the same name in one JVM: this class may be loaded by more than one class
   * loader (a session's own, in Spark Connect), so each load names its attributes apart. */
  private val loadId = java.util.UUID.randomUUID().toString
  private val CallAttribute = new ExecutionAttribute[ShimMetrics.Call](s"checkpointfs.call.$loadId")
  private val AttemptsAttribute = new ExecutionAttribute[Integer](s"checkpointfs.attempts.$loadId")

  /** The bucket and key (a listing's prefix) a request is about; nulls for another request. */
  private[spark] def target(request: SdkRequest): (String, String) = request match {
    case r: PutObjectRequest => (r.bucket, r.key)
    case r: GetObjectRequest => (r.bucket, r.key)
    case r: HeadObjectRequest => (r.bucket, r.key)
    case r: DeleteObjectRequest => (r.bucket, r.key)
    case r: CreateMultipartUploadRequest => (r.bucket, r.key)
    case r: UploadPartRequest => (r.bucket, r.key)
    case r: CompleteMultipartUploadRequest => (r.bucket, r.key)
    case r: AbortMultipartUploadRequest => (r.bucket, r.key)
    case r: ListObjectsV2Request => (r.bucket, r.prefix)
    case r: ListObjectsRequest => (r.bucket, r.prefix)
    case r: ListMultipartUploadsRequest => (r.bucket, r.prefix)
    case _ => (null, null)
  }

  /** What a request is, to tell a request sent again from another one: its type, bucket, key (and part). */
  private def describe(request: SdkRequest): String = {
    val (bucket, key) = target(request)
    val part = request match {
      case r: UploadPartRequest => s" part ${r.partNumber}"
      case _ => ""
    }
    s"${request.getClass.getSimpleName} $bucket/$key$part"
  }
}
