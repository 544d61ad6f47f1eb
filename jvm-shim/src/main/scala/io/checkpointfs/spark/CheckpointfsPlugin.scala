package io.checkpointfs.spark

import java.util.{Collections, Map => JMap}

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}

/**
 * The shim's source in Spark's metrics system, through Spark's public plugin API (`spark.plugins`, which
 * `checkpointfs.spark.configure()` sets): on the driver and on each executor it registers [[ShimMetrics]] with the
 * plugin context's registry, which Spark reports to every configured sink under the source
 * `io.checkpointfs.spark.CheckpointfsPlugin` (for example
 * `<app>.driver.io.checkpointfs.spark.CheckpointfsPlugin.createIfAbsent.requests`). On the driver it first checks
 * that the connectors the session's settings name load ([[ConnectorCheck]]): a missing hadoop-aws fails the session's
 * start with a message naming the jar, instead of the first query that touches S3A with a ClassNotFoundException.
 * It changes nothing else.
 */
class CheckpointfsPlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new DriverPlugin {
    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      ConnectorCheck.require(sc.getConf.getAll.toMap, sc.hadoopConfiguration)
      ShimMetrics.registerInto(ctx.metricRegistry())
      Collections.emptyMap[String, String]()
    }
  }

  /** On executors of their own JVM. In local mode the executor shares the driver's JVM, whose source already shows
   * every count (the metrics are JVM-wide): registering them twice would show them twice, the second time under no
   * application id, with a WARN from Spark's metrics system at every start. */
  override def executorPlugin(): ExecutorPlugin = new ExecutorPlugin {
    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit =
      if (!ctx.conf().get("spark.master", "").startsWith("local")) ShimMetrics.registerInto(ctx.metricRegistry())
  }
}
