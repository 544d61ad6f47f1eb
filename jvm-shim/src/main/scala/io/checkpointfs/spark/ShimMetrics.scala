package io.checkpointfs.spark

import com.codahale.metrics.{Counter, Metric, MetricRegistry, Timer}

/**
 * What the shim did in this JVM, by the names of protocol.json's metrics table (the same names as Python's
 * managers): for each contract operation ([[Protocol.MetricOperations]]) its calls, requests, bytes written and read,
 * failures and a latency timer, named `<operation>.<metric>`; and the process-wide counters
 * ([[Protocol.MetricCounters]]). The metrics exist from the first use of this object, all at zero, so that Spark's
 * metrics system, which copies a registry's metrics when a source is registered, sees every name
 * ([[CheckpointfsPlugin]] registers them on the driver and on each executor).
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

  /** One operation's metrics. */
  final class Operation(name: String) {
    val calls: Counter = counter(s"$name.calls")
    val requests: Counter = counter(s"$name.requests")
    val bytesWritten: Counter = counter(s"$name.bytesWritten")
    val bytesRead: Counter = counter(s"$name.bytesRead")
    val failures: Counter = counter(s"$name.failures")
    val latency: Timer = registry.timer(s"$name.latency")

    /** Run `body` as one call of the operation: counted, timed, and counted as a failure when it throws. */
    def call[T](body: => T): T = {
      calls.inc()
      val timing = latency.time()
      try body
      catch { case e: Throwable => failures.inc(); throw e }
      finally timing.stop()
    }
  }

  val createIfAbsent = new Operation("createIfAbsent")
  val createOverwrite = new Operation("createOverwrite")
  val open = new Operation("open")
  val list = new Operation("list")
  val exists = new Operation("exists")
  val delete = new Operation("delete")

  /** A process-wide counter of the table (`conflicts`, `retries`, ...). */
  def counter(name: String): Counter = {
    val found = registry.getCounters.get(name)
    if (found == null) throw new IllegalArgumentException(s"no checkpointfs metric named '$name' in protocol.json")
    found
  }

  /** Add every metric to `target` (the registry of Spark's plugin context), as the same objects: both show the same
   * counts. Names already there are left as they are. */
  def registerInto(target: MetricRegistry): Unit =
    registry.getMetrics.forEach { (name: String, metric: Metric) =>
      if (!target.getMetrics.containsKey(name)) target.register(name, metric)
    }
}
