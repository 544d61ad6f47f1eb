package io.checkpointfs.spark

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean

import com.codahale.metrics.{Counter, Metric, MetricRegistry, Timer}

/**
 * What the shim did in this JVM, by the names of protocol.json's metrics table (the same names as Python's
 * managers): for each contract operation ([[Protocol.MetricOperations]]) its calls, requests, bytes written and read,
 * failures and a latency timer, named `<operation>.<metric>`; and the process-wide counters
 * ([[Protocol.MetricCounters]]). The metrics exist from the first use of this object, all at zero, so that Spark's
 * metrics system, which copies a registry's metrics when a source is registered, sees every name
 * ([[CheckpointfsPlugin]] registers them on the driver and on each executor).
 *
 * Requests are counted where they are sent: by [[RequestCounter]], an interceptor of the AWS SDK that S3A loads
 * (`fs.s3a.audit.execution.interceptors`, which `checkpointfs.spark.configure()` sets), for every request S3A's
 * client sends, the shim's own included. A request belongs to the [[Call]] in progress on the sending thread, or,
 * for requests S3A sends from its own threads (listing pages, block uploads), to the call that registered the
 * request's key ([[Call.track]]). Requests of no checkpoint call (the query's data) are not counted.
 */
private[spark] object ShimMetrics {
  /** Every metric of the table, by its name. */
  val registry: MetricRegistry = {
    val metrics = new MetricRegistry()
    for (operation <- Protocol.MetricOperations; (name, kind) <- Protocol.MetricsPerOperation) {
      if (kind == "timer") metrics.timer(s"$operation.$name") else metrics.counter(s"$operation.$name")
    }
    Protocol.MetricCounters.foreach(metrics.counter)
    metrics
  }

  /** A counter of the table (`conflicts`, `retries`, `open.requests`, ...). */
  def counter(name: String): Counter = {
    val found = registry.getCounters.get(name)
    if (found == null) throw new IllegalArgumentException(s"no checkpointfs counter named '$name' in protocol.json")
    found
  }

  /** One operation's metrics. */
  final class Operation(val name: String) {
    val calls: Counter = counter(s"$name.calls")
    val requests: Counter = counter(s"$name.requests")
    val bytesWritten: Counter = counter(s"$name.bytesWritten")
    val bytesRead: Counter = counter(s"$name.bytesRead")
    val failures: Counter = counter(s"$name.failures")
    val latency: Timer = registry.timer(s"$name.latency")

    /** A call of this operation starting now; its caller runs its parts with [[Call.run]] and ends it. */
    def start(): Call = new Call(this)

    /** Run `body` as one whole call: counted, timed, its requests attributed, a failure when it throws. */
    def call[T](body: Call => T): T = {
      val call = start()
      try call.run(body(call))
      catch { case e: Throwable => call.finish(failed = true); throw e }
      finally call.finish()
    }
  }

  val createIfAbsent = new Operation("createIfAbsent")
  val createOverwrite = new Operation("createOverwrite")
  val open = new Operation("open")
  val list = new Operation("list")
  val exists = new Operation("exists")
  val delete = new Operation("delete")

  val conflicts: Counter = counter("conflicts")
  val ambiguousSettled: Counter = counter("ambiguousSettled")
  val unknownOutcomes: Counter = counter("unknownOutcomes")
  val cancels: Counter = counter("cancels")
  val abortedUploads: Counter = counter("abortedUploads")
  val orphanUploadsCleaned: Counter = counter("orphanUploadsCleaned")
  val retries: Counter = counter("retries")
  val throttled: Counter = counter("throttled")
  val storeChecks: Counter = counter("storeChecks")
  val storeCheckSafe: Counter = counter("storeCheckSafe")
  val storeCheckUnsafe: Counter = counter("storeCheckUnsafe")
  val storeCheckUnavailable: Counter = counter("storeCheckUnavailable")
  /** Roots the shim is meant to write directly but left to Spark's manager (logged at WARN with the reason). */
  val unexpectedDelegations: Counter = counter("unexpectedDelegations")

  private val current = new ThreadLocal[Call]()
  /** Calls by the `bucket/key` (or `bucket/prefix`) they registered, for requests sent from other threads. */
  private val tracked = new ConcurrentHashMap[String, Call]()

  /**
   * One call of a contract operation, from its start to [[finish]] (for a stream, its close or cancel). Its parts
   * run with [[run]], which makes it the call of the running thread: each request sent meanwhile is counted in the
   * operation's `requests`.
   */
  final class Call private[ShimMetrics] (val operation: Operation) {
    private val startedNanos = System.nanoTime()
    private val ended = new AtomicBoolean(false)
    @volatile private var keys: List[String] = Nil
    @volatile private var failedRequest: String = null
    operation.calls.inc()

    /** Run `body` with this call as the running thread's call (restored afterwards). */
    def run[T](body: => T): T = {
      val before = current.get()
      current.set(this)
      try body
      finally if (before == null) current.remove() else current.set(before)
    }

    /** Count the requests S3A sends for `bucket`/`key` from its own threads as this call's, until it ends. */
    def track(bucket: String, key: String): Unit = {
      val id = s"$bucket/$key"
      keys = id :: keys
      tracked.put(id, this)
    }

    /** One request sent for this call (`what` names it: request type and key); `retry` when the SDK resent it. */
    private[spark] def requestSent(what: String, retry: Boolean): Unit = {
      operation.requests.inc()
      if (retry || (failedRequest != null && failedRequest == what)) retries.inc()
      failedRequest = null
    }

    /** The request `what` of this call failed (it may be sent again: then it is a retry). */
    private[spark] def requestFailed(what: String): Unit = failedRequest = what

    /** End the call (the first time only): its latency, and a failure when `failed`. */
    def finish(failed: Boolean = false): Unit = {
      if (!ended.compareAndSet(false, true)) return
      if (failed) operation.failures.inc()
      operation.latency.update(System.nanoTime() - startedNanos, java.util.concurrent.TimeUnit.NANOSECONDS)
      keys.foreach(id => tracked.remove(id, this))
    }
  }

  /** The call a request for `bucket`/`key` belongs to: the sending thread's, or the one tracking the key; or null. */
  private[spark] def callFor(bucket: String, key: String): Call = {
    val running = current.get()
    if (running != null) running
    else if (bucket == null || key == null) null
    else tracked.get(s"$bucket/$key")
  }

  /** Add every metric to `target` (the registry of Spark's plugin context), as the same objects: both show the same
   * counts. Names already there are left as they are. */
  def registerInto(target: MetricRegistry): Unit =
    registry.getMetrics.forEach { (name: String, metric: Metric) =>
      if (!target.getMetrics.containsKey(name)) target.register(name, metric)
    }
}
