package io.checkpointfs.spark
package store

import scala.util.control.NonFatal

/** The shim's one retry loop: bounded attempts with exponential back-off. */
private[spark] object Retry {

  /**
   * Run `body` up to `attempts` times. After a failure that `retryable` accepts, and while attempts remain,
   * `onRetry(error, attempt)` is called and the thread sleeps `baseDelayMs * 2^(attempt-1)`, at most `maxDelayMs`;
   * any other failure, or the last one, propagates.
   */
  def withBackoff[T](attempts: Int, baseDelayMs: Long, retryable: Throwable => Boolean = NonFatal(_),
                     onRetry: (Throwable, Int) => Unit = (_, _) => (), maxDelayMs: Long = Long.MaxValue)(
      body: => T): T = {
    var attempt = 1
    var result: Option[T] = None
    while (result.isEmpty) {
      try result = Some(body)
      catch {
        case e: Throwable if attempt < attempts && retryable(e) =>
          onRetry(e, attempt)
          sleepQuietly(math.min(maxDelayMs, baseDelayMs << math.min(attempt - 1, 30)))
          attempt += 1
      }
    }
    result.get
  }

  /** Sleep, keeping the thread's interrupt status if interrupted. */
  def sleepQuietly(ms: Long): Unit =
    try Thread.sleep(ms)
    catch { case _: InterruptedException => Thread.currentThread().interrupt() }
}
