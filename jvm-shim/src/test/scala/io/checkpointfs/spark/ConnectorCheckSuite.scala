package io.checkpointfs.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.util.VersionInfo
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[ConnectorCheck]]: a session whose settings name a connector whose classes do not load is refused at start, the
 * message naming the jar (hadoop-aws of Spark's Hadoop version for s3a://); connectors not set up are not checked.
 */
class ConnectorCheckSuite extends AnyFunSuite {

  /** Hadoop's settings for `settings` (Spark's `spark.hadoop.` keys), loading classes with `loader`. */
  private def conf(settings: Map[String, String], loader: ClassLoader = getClass.getClassLoader): Configuration = {
    val c = new Configuration(false)
    settings.collect { case (k, v) if k.startsWith("spark.hadoop.") => c.set(k.stripPrefix("spark.hadoop."), v) }
    c.setClassLoader(loader)
    c
  }

  /** A loader that finds the JDK's classes only: hadoop-aws, the GCS connector and hadoop-azure are all missing. */
  private val jdkOnly = new ClassLoader(null) {}

  test("a missing hadoop-aws names hadoop-aws of Spark's Hadoop, however fs.s3a.impl names S3A") {
    for (impl <- Seq("io.checkpointfs.spark.CheckpointS3AFileSystem", "org.apache.hadoop.fs.s3a.S3AFileSystem")) {
      val settings = Map("spark.hadoop.fs.s3a.impl" -> impl)
      val e = intercept[CheckpointStoreConfigException](ConnectorCheck.require(settings, conf(settings, jdkOnly)))
      assert(e.getMessage.contains(s"add hadoop-aws-${VersionInfo.getVersion}.jar"), e.getMessage)
      assert(e.getMessage.startsWith(s"spark.hadoop.fs.s3a.impl=$impl, but the class $impl cannot be loaded"))
    }
  }

  test("gs:// and abfs:// set up without their connectors name them") {
    val gs = Map("spark.hadoop.fs.gs.impl" -> "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem")
    assert(ConnectorCheck.missing(gs, conf(gs, jdkOnly)).exists(_.contains("Google's gcs-connector")))
    val abfs = Map("spark.hadoop.fs.azure.account.key.a.dfs.core.windows.net" -> "secret-account-key")
    val said = ConnectorCheck.missing(abfs, conf(abfs, jdkOnly))
    assert(said.exists(m => m.startsWith("spark.hadoop.fs.azure.* is set") &&
      m.contains(s"hadoop-azure-${VersionInfo.getVersion}.jar")), said)
    assert(!said.exists(_.contains(abfs.values.head)), "a setting's value (a key) is never in the message")
  }

  test("classes that load pass; connectors not set up are not checked") {
    val local = Map("spark.hadoop.fs.gs.impl" -> "org.apache.hadoop.fs.LocalFileSystem")
    assert(ConnectorCheck.missing(local, conf(local)).isEmpty)
    val unrelated = Map("spark.hadoop.fs.s3a.impl.disable.cache" -> "true", "spark.app.name" -> "q")
    assert(ConnectorCheck.missing(unrelated, conf(unrelated, jdkOnly)).isEmpty)
  }
}
