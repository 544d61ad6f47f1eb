package io.checkpointfs.spark
package store

/**
 * How failures that S3A raises are sorted by the answer table of protocol.json ([[Protocol.Table]]), without a
 * compile-time dependency on hadoop-aws or the AWS SDK: [[answerOf]] reads the failure as an [[Answer]] (status,
 * error code, transport kind, class names), and [[classify]] gives its class as Python's `Rules.classify` would.
 */
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

  /** `t` as the table sees it: the first status and error code of its chain, its transport kind and class names. */
  def answerOf(t: Throwable, table: AnswerTable = Protocol.Table): Answer = {
    val causes = chain(t)
    val names = causes.flatMap(classNames).toSet
    Answer(status = causes.iterator.map(statusOf).find(_ > 0).getOrElse(0),
      code = causes.iterator.map(errorCodeOf).find(_.nonEmpty).getOrElse(""),
      transport = table.transportOf(names), classNames = names)
  }

  /** The class of the failure `t` in `table` (interruptions are the caller's to pass on first: [[isInterruption]]). */
  def classify(t: Throwable, table: AnswerTable = Protocol.Table): AnswerClass = table.classify(answerOf(t, table))

  /** `statusCode()` (S3A, AWS SDK v2, the shim's own requests) or `getStatusCode()` (AWS SDK v1). */
  private def statusOf(t: Throwable): Int =
    Iterator("statusCode", "getStatusCode").map(call(t, _)).collectFirst {
      case Some(i: java.lang.Integer) if i.intValue > 0 => i.intValue
    }.getOrElse(0)

  /**
   * The S3 error code `t` carries: `errorCode()` (S3A's AWSServiceIOException where it has one), `getErrorCode()`
   * (AWS SDK v1, S3A on it), `awsErrorDetails().errorCode()` (AWS SDK v2); "" when none.
   */
  private def errorCodeOf(t: Throwable): String = {
    val direct = Iterator("errorCode", "getErrorCode").map(call(t, _))
    val details = Iterator(call(t, "awsErrorDetails").flatMap(d => call(d, "errorCode")))
    (direct ++ details).collectFirst { case Some(code: String) if code.nonEmpty => code }.getOrElse("")
  }

  /** The result of the public no-argument method `name` of `target`, None when it has none or it fails. */
  private def call(target: AnyRef, name: String): Option[AnyRef] =
    try Option(target.getClass.getMethod(name).invoke(target))
    catch { case _: ReflectiveOperationException | _: SecurityException | _: RuntimeException => None }

  /** The simple and qualified names of the class of `t` and of its superclasses. */
  def classNames(t: Throwable): Seq[String] =
    Iterator.iterate[Class[_]](t.getClass)(_.getSuperclass).takeWhile(_ != null)
      .flatMap(c => Seq(c.getSimpleName, c.getName)).filter(_.nonEmpty).toSeq

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
}
