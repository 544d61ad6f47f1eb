package io.checkpointfs.spark

import java.io.{EOFException, FileNotFoundException, IOException, InterruptedIOException}
import java.net.{ConnectException, SocketException, SocketTimeoutException, UnknownHostException}

import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

// Stand-ins for S3A's and the AWS SDK's exceptions: the classifier knows them only by name and by reflection.
class RemoteFileChangedException(message: String) extends IOException(message)
class AWSServiceThrottledException(message: String) extends IOException(message)
class UnknownStoreException(message: String) extends IOException(message)
/** S3A's AWSServiceIOException on AWS SDK v2: `statusCode()`. */
class StatusCodeException(status: Int, cause: Throwable = null) extends IOException(s"status $status", cause) {
  def statusCode(): Int = status
}
/** AWS SDK v1's AmazonServiceException: `getStatusCode()`, `getErrorCode()`. */
class SdkV1ServiceException(status: Int, code: String) extends RuntimeException(code) {
  def getStatusCode(): Int = status
  def getErrorCode(): String = code
}
/** The error code as an S3A exception exposes it directly: `errorCode()`. */
class ErrorCodeException(code: String) extends IOException(code) {
  def errorCode(): String = code
}
/** AWS SDK v2's AwsServiceException: `statusCode()`, `awsErrorDetails().errorCode()`. */
class SdkV2ServiceException(status: Int, code: String) extends RuntimeException(code) {
  def statusCode(): Int = status
  def awsErrorDetails(): SdkV2ErrorDetails = new SdkV2ErrorDetails(code)
}
class SdkV2ErrorDetails(code: String) {
  def errorCode(): String = code
}
/** A subclass of a transport exception: matched through its superclass. */
class ProxyResetException extends SocketException("reset by a proxy")

/** How JVM failures are read as answers and classified ([[Failures]]), with no store behind them. */
class FailuresSuite extends AnyFunSuite {

  private def classOfFailure(t: Throwable): String = Failures.classify(t).name
  private def wrapped(t: Throwable): IOException = new IOException(s"s3a: $t", t)

  test("transport failures, found anywhere in the chain, by class or superclass") {
    assert(classOfFailure(wrapped(new ConnectException("refused"))) == Protocol.Unavailable)
    assert(classOfFailure(new UnknownHostException("nowhere")) == Protocol.Unavailable)
    assert(classOfFailure(new SocketTimeoutException("read timed out")) == Protocol.Settle)
    assert(classOfFailure(wrapped(new EOFException("short"))) == Protocol.Settle)
    assert(classOfFailure(wrapped(new SocketException("Connection reset"))) == Protocol.Settle)
    assert(Failures.answerOf(new ProxyResetException).transport.contains("reset"))
    // ConnectException is a SocketException: the connect kind is tried first
    assert(Failures.answerOf(wrapped(new ConnectException("refused"))).transport.contains("connect"))
  }

  test("rules' JVM classes, by simple or qualified name") {
    assert(classOfFailure(new RemoteFileChangedException("412")) == Protocol.Conflict)
    assert(classOfFailure(wrapped(new AWSServiceThrottledException("slow down"))) == Protocol.Retry)
    val bucket = Failures.classify(new UnknownStoreException("no bucket"))
    assert(bucket.name == Protocol.Refuse && bucket.error == "BucketNotFoundError")
    val denied = Failures.classify(new java.nio.file.AccessDeniedException("s3a://b/k"))
    assert(denied.name == Protocol.Refuse && denied.error == "AccessDeniedError")
    assert(classOfFailure(new FileNotFoundException("s3a://b/k")) == Protocol.NotFound)
  }

  test("HTTP status and error code by reflection, on any exception of the chain") {
    assert(Failures.answerOf(wrapped(new StatusCodeException(503))).status == 503)
    assert(classOfFailure(wrapped(new StatusCodeException(503))) == Protocol.Retry)
    assert(classOfFailure(wrapped(new SdkV1ServiceException(412, "PreconditionFailed"))) == Protocol.Conflict)
    assert(classOfFailure(new SdkV2ServiceException(404, "NoSuchUpload")) == Protocol.UploadGone) // the code comes first
    assert(classOfFailure(new StatusCodeException(400, new SdkV2ServiceException(400, "RequestTimeout"))) == Protocol.Retry)
    assert(Failures.answerOf(new ErrorCodeException("SlowDown")).code == "SlowDown")
    assert(classOfFailure(new ErrorCodeException("SlowDown")) == Protocol.Retry)
    val answer = Failures.answerOf(new StatusCodeException(500, new SdkV2ServiceException(0, "InternalError")))
    assert(answer.status == 500 && answer.code == "InternalError" && answer.transport.isEmpty)
  }

  test("answers no rule names take the defaults of their range") {
    assert(classOfFailure(new StatusCodeException(418)) == Protocol.Table.default4xx)
    assert(classOfFailure(new StatusCodeException(507)) == Protocol.Table.default5xx)
    assert(classOfFailure(new IOException("stream closed")) == Protocol.Table.defaultUnanswered)
  }

  test("classify uses the table it is given") {
    val table = Protocol.Table.copy(defaultUnanswered = Protocol.Refuse)
    assert(Failures.classify(new IOException("?"), table).name == Protocol.Refuse)
  }

  test("interruptions are told apart from timeouts") {
    assert(Failures.isInterruption(wrapped(new InterruptedIOException("stop"))))
    assert(Failures.isInterruption(new java.nio.channels.ClosedByInterruptException))
    assert(!Failures.isInterruption(new SocketTimeoutException("timed out")))
    assert(!Failures.isInterruption(new IOException("x")))
  }

  test("the cause chain is bounded and cycle-safe") {
    val a = new IOException("a")
    val b = new IOException("b", a)
    a.initCause(b)
    assert(Failures.chain(a) == List(a, b))
  }
}
