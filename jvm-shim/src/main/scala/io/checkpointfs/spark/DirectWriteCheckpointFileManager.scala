package io.checkpointfs.spark

import java.io.{FileNotFoundException, IOException}
import java.nio.charset.StandardCharsets
import java.util.Locale

import scala.language.existentials
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs._
import org.slf4j.LoggerFactory

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream

/**
 * Spark's `CheckpointFileManager` for object stores without rename, the JVM twin of checkpointfs's Python
 * `DirectWriteManager`. Set `spark.sql.streaming.checkpointFileManagerClass` to this class.
 *
 *  - On S3A (any file system that takes `fs.s3a.create.header.*` create options) every checkpoint file is written
 *    straight to its final key through the `createFile` builder, with no existence or parent probes.
 *    `createAtomic(path, overwriteIfPossible = false)` is a conditional create (`If-None-Match: *`); a lost race
 *    surfaces from `close()` as Hadoop's `FileAlreadyExistsException`. Each object carries a unique write id in its
 *    user metadata (`x-amz-meta-checkpointfs-write-id`), read back after an ambiguous failure to tell "my earlier
 *    attempt landed" from "another writer won". `cancel()` aborts (Hadoop `Abortable`), so nothing is published.
 *  - For schemes whose rename is atomic (`file`, `hdfs`, `viewfs`, ...; see [[DirectWriteCheckpointFileManager.RenameSchemesKey]])
 *    it delegates to the manager Spark would have chosen itself (FileContext- or FileSystem-based, rename).
 *  - Anything else is refused at construction, so a query fails at start with a message saying what to fix.
 *
 * Settings, read from the Hadoop configuration (`spark.hadoop.` prefix in Spark):
 * `checkpointfs.cancel.strategy` (`abort` or `close-then-delete`), `checkpointfs.cancel.delete.attempts` (default 3),
 * `checkpointfs.rename.schemes` (comma-separated).
 */
class DirectWriteCheckpointFileManager(path: Path, hadoopConf: Configuration) extends CheckpointFileManager {

  import DirectWriteCheckpointFileManager._

  private val fs: FileSystem = openFileSystem(path, hadoopConf)
  private val scheme: String = Option(fs.getUri.getScheme).getOrElse("").toLowerCase(Locale.ROOT)
  private val settings: Settings = Settings(hadoopConf)

  /** Spark's own manager, when the scheme has atomic rename; None when this manager writes directly. */
  private val delegate: Option[CheckpointFileManager] = chooseMode()

  private def chooseMode(): Option[CheckpointFileManager] = {
    if (supportsCreateHeaders(fs, path)) {
      if (!fs.hasPathCapability(path, ConditionalCreateOption)) {
        throw new CheckpointStoreConfigException(
          s"$path: the S3A file system has conditional create disabled, so checkpoint files could be overwritten " +
            s"by a concurrent query. Set fs.s3a.create.conditional.enabled=true (hadoop-aws 3.4.2 or later, " +
            s"against a store that supports If-None-Match writes).")
      }
      log.info("{}: checkpoint files are written directly with conditional creates (no rename)", path)
      None
    } else if (settings.renameSchemes.contains(scheme)) {
      val conf = new Configuration(hadoopConf)
      conf.unset(ManagerClassKey)
      log.info("{}: scheme '{}' has atomic rename; delegating to Spark's rename-based manager", path, scheme)
      Some(CheckpointFileManager.create(path, conf))
    } else {
      throw new CheckpointStoreConfigException(
        s"$path: ${getClass.getSimpleName} supports S3A (s3a://, with hadoop-aws) and file systems with atomic " +
          s"rename (${settings.renameSchemes.toSeq.sorted.mkString(", ")}); scheme '$scheme' " +
          s"(${fs.getClass.getName}) has neither conditional create nor a rename this manager trusts. " +
          s"Add the scheme to $RenameSchemesKey only if its rename is atomic and never replaces an existing file.")
    }
  }

  /** Whether this manager writes directly (true) or delegates to Spark's rename-based manager (false). */
  def isDirect: Boolean = delegate.isEmpty

  /** The Spark manager this one delegates to, if any (for diagnostics). */
  def delegateManager: Option[CheckpointFileManager] = delegate

  override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream =
    delegate match {
      case Some(d) => d.createAtomic(path, overwriteIfPossible)
      case None =>
        val writeId = java.util.UUID.randomUUID().toString.replace("-", "")
        val builder = fs.createFile(path)
          .create()
          .overwrite(overwriteIfPossible)
          .recursive()
          .must(CreatePerformanceOption, true)
          .opt(CreateHeaderPrefix + WriteIdKey, writeId)
        if (!overwriteIfPossible) builder.must(ConditionalCreateOption, true)
        val out = builder.build()
        log.debug("{}: writing directly (overwrite={}, write id {})", path, overwriteIfPossible, writeId)
        new DirectWriteOutputStream(fs, path, overwriteIfPossible, writeId, settings, out)
    }

  override def open(path: Path): FSDataInputStream = delegate match {
    case Some(d) => d.open(path)
    case None => fs.open(path)
  }

  override def list(path: Path, filter: PathFilter): Array[FileStatus] = delegate match {
    case Some(d) => d.list(path, filter)
    case None =>
      val statuses =
        try fs.listStatus(path, filter)
        catch { case _: FileNotFoundException => Array.empty[FileStatus] }
      statuses.sortBy(_.getPath.toString)
  }

  /** On an object store there are no directories to make: a no-op that sends no request. */
  override def mkdirs(path: Path): Unit = delegate match {
    case Some(d) => d.mkdirs(path)
    case None => ()
  }

  override def exists(path: Path): Boolean = delegate match {
    case Some(d) => d.exists(path)
    case None => fs.exists(path)
  }

  override def delete(path: Path): Unit = delegate match {
    case Some(d) => d.delete(path)
    case None =>
      try fs.delete(path, true)
      catch { case _: FileNotFoundException => () }
  }

  override def isLocal: Boolean = delegate match {
    case Some(d) => d.isLocal
    case None => false
  }

  override def createCheckpointDirectory(): Path = delegate match {
    case Some(d) => d.createCheckpointDirectory()
    case None => fs.makeQualified(path)
  }

  override def close(): Unit = delegate.foreach(_.close())

  override def toString: String =
    s"${getClass.getSimpleName}($path, ${delegate.map(d => s"delegating to ${d.getClass.getSimpleName}").getOrElse("direct")})"
}

object DirectWriteCheckpointFileManager {
  private val log = LoggerFactory.getLogger(classOf[DirectWriteCheckpointFileManager])

  /** User-metadata key holding the id of the create that wrote an object (the Python side uses the same). */
  val WriteIdKey = "checkpointfs-write-id"
  /** S3A create-file option prefix for object headers; user metadata becomes `x-amz-meta-<name>`. */
  val CreateHeaderPrefix = "fs.s3a.create.header."
  /** S3A's XAttr name for a user-metadata entry. */
  val WriteIdXAttr: String = "header." + WriteIdKey
  /** Hadoop's create-file option for put-if-absent (HADOOP-19256). */
  val ConditionalCreateOption = "fs.option.create.conditional.overwrite"
  /** S3A create-file option that skips the existence and parent probes. */
  val CreatePerformanceOption = "fs.s3a.create.performance"
  val AbortableCapability = "fs.capability.outputstream.abortable"

  val ManagerClassKey = "spark.sql.streaming.checkpointFileManagerClass"
  val CancelStrategyKey = "checkpointfs.cancel.strategy"
  val DeleteAttemptsKey = "checkpointfs.cancel.delete.attempts"
  val RenameSchemesKey = "checkpointfs.rename.schemes"
  val DefaultRenameSchemes = "file,hdfs,viewfs,webhdfs,swebhdfs,ofs,o3fs"

  private[spark] final case class Settings(abortOnCancel: Boolean, deleteAttempts: Int, renameSchemes: Set[String])

  private[spark] object Settings {
    def apply(conf: Configuration): Settings = {
      val strategy = conf.getTrimmed(CancelStrategyKey, "abort").toLowerCase(Locale.ROOT)
      if (strategy != "abort" && strategy != "close-then-delete") {
        throw new IllegalArgumentException(
          s"$CancelStrategyKey must be 'abort' or 'close-then-delete', got '$strategy'")
      }
      val attempts = conf.getInt(DeleteAttemptsKey, 3)
      if (attempts < 1) throw new IllegalArgumentException(s"$DeleteAttemptsKey must be at least 1, got $attempts")
      val schemes = conf.getTrimmedStrings(RenameSchemesKey, DefaultRenameSchemes.split(","): _*)
        .map(_.toLowerCase(Locale.ROOT)).filter(_.nonEmpty).toSet
      new Settings(strategy == "abort", attempts, schemes)
    }
  }

  /** The path's file system, with a message that says what to fix when its connector is missing. */
  private def openFileSystem(path: Path, conf: Configuration): FileSystem = {
    val scheme = Option(path.toUri.getScheme).getOrElse("(default file system)")
    def missing(what: String, cause: Throwable): CheckpointStoreConfigException = {
      val hint = if (scheme == "s3a" || scheme == "s3") {
        s"add hadoop-aws-${org.apache.hadoop.util.VersionInfo.getVersion}.jar (the same version as the Hadoop " +
          "that Spark ships) and the AWS SDK v2 jars it needs to spark.jars; checkpointfs.spark.configure() does this"
      } else {
        "add the connector jar of that file system to spark.jars"
      }
      new CheckpointStoreConfigException(s"$path: $what for scheme '$scheme': $hint", cause)
    }
    try path.getFileSystem(conf)
    catch {
      case e: UnsupportedFileSystemException => throw missing("no Hadoop FileSystem", e)
      case e: NoClassDefFoundError => throw missing(s"a class of the file system is missing (${e.getMessage})", e)
      case e: RuntimeException if Failures.chain(e).exists(_.isInstanceOf[ClassNotFoundException]) =>
        throw missing(s"the FileSystem class is not on the class path (${e.getMessage})", e)
    }
  }

  /** Whether the file system takes S3A's `fs.s3a.create.header.*` options (and returns them as XAttrs). */
  private def supportsCreateHeaders(fs: FileSystem, path: Path): Boolean =
    try fs.hasPathCapability(path, "fs.s3a.create.header")
    catch { case NonFatal(_) => false }

  /** The write id stamped on the object at `path`: None when absent, Some("") when it has none. */
  private[spark] def readWriteId(fs: FileSystem, path: Path): Option[String] =
    try Option(fs.getXAttr(path, WriteIdXAttr)).map(new String(_, StandardCharsets.UTF_8)).orElse(Some(""))
    catch { case _: FileNotFoundException => None }

  private[spark] def sleepQuietly(ms: Long): Unit =
    try Thread.sleep(ms)
    catch { case _: InterruptedException => Thread.currentThread().interrupt() }

}
