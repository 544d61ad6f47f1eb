package io.checkpointfs.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.util.VersionInfo

/**
 * The connectors a session was set up for, checked on the driver when it starts ([[CheckpointfsPlugin]]): where the
 * session's settings name a connector's file system (what `checkpointfs.spark.configure()` sets:
 * `spark.hadoop.fs.s3a.impl`, `spark.hadoop.fs.gs.impl`, `spark.hadoop.fs.azure.*`), its classes must load, or the
 * session refuses to start with a [[CheckpointStoreConfigException]] naming the jar and its version. Without the
 * check, whatever touches the scheme first (a file sink's path, before any checkpoint) fails with Hadoop's raw
 * `ClassNotFoundException` / `NoClassDefFoundError`, which names a class and no jar.
 */
private[spark] object ConnectorCheck {

  /** A connector: the Spark setting that says the session uses it, and the classes that must then load. */
  final case class Connector(setting: String, classes: Configuration => Seq[String], jar: String)

  private def s3aSdk: String =
    if (VersionInfo.getVersion.startsWith("3.3.")) "com.amazonaws.services.s3.AmazonS3"
    else "software.amazon.awssdk.services.s3.S3Client"

  val Connectors: Seq[Connector] = Seq(
    Connector("spark.hadoop.fs.s3a.impl", conf => Seq(conf.get("fs.s3a.impl"), s3aSdk),
      s"hadoop-aws-${VersionInfo.getVersion}.jar (the same version as the Hadoop that Spark ships) and the AWS SDK " +
        "jars it needs"),
    Connector("spark.hadoop.fs.gs.impl", conf => Seq(conf.get("fs.gs.impl")),
      "Google's gcs-connector (its shaded jar; checkpointfs.spark.configure(gcs=...) fetches the release for this " +
        "Hadoop)"),
    Connector("spark.hadoop.fs.azure.", _ => Seq("org.apache.hadoop.fs.azurebfs.AzureBlobFileSystem"),
      s"hadoop-azure-${VersionInfo.getVersion}.jar (the same version as the Hadoop that Spark ships) and the jars it " +
        "needs beside Spark (azure-storage, azure-keyvault-core, hadoop-shaded-guava, ...)"))

  /**
   * The first connector of [[Connectors]] that `settings` (the session's Spark settings, by key) set up and whose
   * classes do not load through `conf`'s class loader (the one Hadoop loads file systems with): a message saying
   * which jar to add; None when every connector set up loads.
   */
  def missing(settings: Map[String, String], conf: Configuration): Option[String] =
    Connectors.iterator.filter(c => settings.keysIterator.exists(setUp(c, _))).flatMap { connector =>
      connector.classes(conf).filter(_ != null).find(!loads(_, conf)).map { cls =>
        val why = settings.get(connector.setting).fold(s"${connector.setting}* is set")(v => s"${connector.setting}=$v")
        s"$why, but the class $cls cannot be loaded: add ${connector.jar} to spark.jars " +
          "(checkpointfs.spark.configure() does this, and checks the jars before the session starts)"
      }
    }.toSeq.headOption

  /** Refuse to start, with a [[CheckpointStoreConfigException]], when [[missing]] names a connector. */
  def require(settings: Map[String, String], conf: Configuration): Unit =
    missing(settings, conf).foreach(message => throw new CheckpointStoreConfigException(message))

  /** Whether the Spark setting `key` sets `connector` up (its setting, or one under it when it ends in a dot). */
  private def setUp(connector: Connector, key: String): Boolean =
    key == connector.setting || (connector.setting.endsWith(".") && key.startsWith(connector.setting))

  private def loads(name: String, conf: Configuration): Boolean =
    try {
      Class.forName(name, false, Option(conf.getClassLoader).getOrElse(getClass.getClassLoader))
      true
    } catch { case _: ClassNotFoundException | _: LinkageError => false }
}
