package io.checkpointfs.spark

import java.io.IOException

import org.apache.hadoop.fs.Path

/**
 * A write whose outcome could not be decided: the object may or may not become visible. Never success, never a
 * conflict. The Python side maps it to `checkpointfs.errors.WriteOutcomeUnknownError`.
 */
class WriteOutcomeUnknownException(val path: Path, message: String, cause: Throwable)
  extends IOException(s"$path: $message", cause)

/**
 * A cancel that could not be completed: partial data may be visible at the path. Fatal for the writer.
 * The Python side maps it to `checkpointfs.errors.AbortFailedError`.
 */
class AbortFailedException(val path: Path, message: String, cause: Throwable)
  extends IOException(s"$path: $message", cause)

/**
 * The manager cannot work with the file system of the checkpoint path as configured (missing hadoop-aws, a store
 * without conditional writes, a scheme with neither atomic rename nor conditional create). The message says what
 * to fix.
 */
class CheckpointStoreConfigException(message: String, cause: Throwable) extends IOException(message, cause) {
  def this(message: String) = this(message, null)
}

/** How failures that S3A raises are classified, without a compile-time dependency on hadoop-aws or the AWS SDK. */
private[spark] object Failures {

  /** The exception and its causes, outermost first (bounded, cycle-safe). */
  def chain(t: Throwable): List[Throwable] = {
    val out = List.newBuilder[Throwable]
    var seen = Set.empty[Throwable]
    var current = t
    var depth = 0
    while (current != null && !seen.contains(current) && depth < 16) {
      out += current
      seen += current
      current = current.getCause
      depth += 1
    }
    out.result()
  }

  /** The HTTP status an S3A or AWS SDK exception in the chain carries (`statusCode()`), else 0. */
  def httpStatus(t: Throwable): Int =
    chain(t).iterator.map(statusOf).find(_ > 0).getOrElse(0)

  /** `statusCode()` (S3A, AWS SDK v2, the shim's own requests) or `getStatusCode()` (AWS SDK v1). */
  private def statusOf(t: Throwable): Int =
    Iterator("statusCode", "getStatusCode").map { name =>
      try {
        t.getClass.getMethod(name).invoke(t) match {
          case i: java.lang.Integer => i.intValue
          case _ => 0
        }
      } catch {
        case _: ReflectiveOperationException | _: SecurityException => 0
      }
    }.find(_ > 0).getOrElse(0)

  private def named(t: Throwable, simpleName: String): Boolean = {
    var c: Class[_] = t.getClass
    while (c != null) {
      if (c.getSimpleName == simpleName) return true
      c = c.getSuperclass
    }
    false
  }

  /** A conditional write found the key taken: HTTP 412 (S3A raises RemoteFileChangedException for it). */
  def isPreconditionFailed(t: Throwable): Boolean =
    httpStatus(t) == 412 || chain(t).exists(named(_, "RemoteFileChangedException"))

  /**
   * The thread was interrupted (Spark stopping a query or killing a task). Such failures are passed on unchanged,
   * so that Spark recognises them as a stop and not as a query failure.
   */
  def isInterruption(t: Throwable): Boolean =
    Thread.currentThread().isInterrupted || chain(t).exists { c =>
      // exactly InterruptedIOException: its subclass SocketTimeoutException is a timeout, an ambiguous outcome
      c.getClass == classOf[java.io.InterruptedIOException] || c.isInstanceOf[InterruptedException] ||
        c.isInstanceOf[java.nio.channels.ClosedByInterruptException]
    }

  /** A concurrent conditional request on the same key (HTTP 409 ConditionalRequestConflict). */
  def isConflict(t: Throwable): Boolean = httpStatus(t) == 409

  /** Throttling: the request was refused, not applied. */
  def isThrottled(t: Throwable): Boolean = {
    val s = httpStatus(t)
    s == 503 || s == 429 || chain(t).exists(named(_, "AWSServiceThrottledException"))
  }

  /**
   * Failures that say the request was refused outright and could not have been applied by any attempt:
   * credentials, permissions, a missing bucket, a malformed or unsupported request.
   */
  def isDefinitiveRefusal(t: Throwable): Boolean = {
    val s = httpStatus(t)
    Set(400, 401, 403, 405, 411, 501).contains(s) ||
      chain(t).exists { c =>
        c.isInstanceOf[java.nio.file.AccessDeniedException] || named(c, "UnknownStoreException") ||
          c.isInstanceOf[java.net.UnknownHostException]
      }
  }
}
