package io.checkpointfs.spark

import java.util.concurrent.{Executors, TimeUnit}

import com.codahale.metrics.MetricRegistry
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/** The shim's metrics ([[ShimMetrics]]): the table's names, calls, and which call a request belongs to. */
class ShimMetricsSuite extends AnyFunSuite {

  test("every name of protocol.json's table is registered from the start, with its kind") {
    val names = ShimMetrics.registry.getNames.toArray.map(_.toString).toSet
    val expected = (for (op <- Protocol.MetricOperations; (m, _) <- Protocol.MetricsPerOperation) yield s"$op.$m") ++
      Protocol.MetricCounters
    assert(names == expected.toSet)
    for (op <- Protocol.MetricOperations) assert(ShimMetrics.registry.getTimers.containsKey(s"$op.latency"))
    assert(Protocol.MetricOperations == Seq("createIfAbsent", "createOverwrite", "open", "list", "exists", "delete"))
  }

  test("registerInto shares the same objects with the plugin's registry, leaving names already there alone") {
    val target = new MetricRegistry()
    val mine = target.counter("conflicts")
    ShimMetrics.registerInto(target)
    assert(target.getNames.size == ShimMetrics.registry.getNames.size)
    assert(target.getCounters.get("conflicts") eq mine)
    assert(target.getCounters.get("retries") eq ShimMetrics.retries)
  }

  test("a call counts once, times once, and a failure only when it failed") {
    val op = ShimMetrics.exists
    val (calls, failures, timed) = (op.calls.getCount, op.failures.getCount, op.latency.getCount)
    assert(op.call(_ => 42) == 42)
    intercept[IllegalStateException](op.call(_ => throw new IllegalStateException("x")))
    val call = op.start()
    call.finish()
    call.finish(failed = true)
    assert(op.calls.getCount - calls == 3 && op.failures.getCount - failures == 1 && op.latency.getCount - timed == 3)
  }

  test("a request belongs to the running thread's call, else to the call tracking its key, else to none") {
    val running = ShimMetrics.open.start()
    val tracking = ShimMetrics.list.start()
    tracking.track("b", "cp/offsets/")
    try {
      assert(running.run(ShimMetrics.callFor("b", "cp/offsets/")) eq running)
      assert(ShimMetrics.callFor("b", "cp/offsets/") eq tracking)
      val pool = Executors.newSingleThreadExecutor()
      try assert(pool.submit(() => ShimMetrics.callFor("b", "cp/offsets/")).get(10, TimeUnit.SECONDS) eq tracking)
      finally pool.shutdown()
      assert(ShimMetrics.callFor("b", "data/part-0") == null)
      assert(ShimMetrics.callFor(null, null) == null)
    } finally {
      running.finish()
      tracking.finish()
    }
    assert(ShimMetrics.callFor("b", "cp/offsets/") == null, "an ended call tracks nothing")
  }

  test("a request sent again after a failed one, or resent by the SDK, is a retry") {
    val call = ShimMetrics.delete.start()
    val (requests, retries) = (ShimMetrics.delete.requests.getCount, ShimMetrics.retries.getCount)
    call.requestSent("DeleteObjectRequest b/k", retry = false)
    call.requestFailed("DeleteObjectRequest b/k")
    call.requestSent("DeleteObjectRequest b/k", retry = false)
    call.requestSent("DeleteObjectRequest b/k", retry = true)
    call.requestFailed("HeadObjectRequest b/k")
    call.requestSent("DeleteObjectRequest b/k", retry = false)
    call.finish()
    assert(ShimMetrics.delete.requests.getCount - requests == 4 && ShimMetrics.retries.getCount - retries == 2)
  }

  test("a file's context names its checkpoint, batch or state version, and write id") {
    assert(Events.context(new org.apache.hadoop.fs.Path("s3a://b/q/cp/offsets/12"), "w1") ==
      "[checkpoint=s3a://b/q/cp file=s3a://b/q/cp/offsets/12 batch=12 write_id=w1]")
    assert(Events.context(new org.apache.hadoop.fs.Path("s3a://b/cp/sources/0/9.compact")) ==
      "[checkpoint=s3a://b/cp file=s3a://b/cp/sources/0/9.compact batch=9]")
    assert(Events.context(new org.apache.hadoop.fs.Path("s3a://b/cp/state/0/3/7.delta"), "w") ==
      "[checkpoint=s3a://b/cp file=s3a://b/cp/state/0/3/7.delta version=7 write_id=w]")
    assert(Events.context(new org.apache.hadoop.fs.Path("s3a://b/out/_spark_metadata/4")) ==
      "[checkpoint=s3a://b/out file=s3a://b/out/_spark_metadata/4 batch=4]")
  }
}
