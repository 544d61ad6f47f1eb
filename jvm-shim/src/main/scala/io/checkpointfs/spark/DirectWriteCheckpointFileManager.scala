package io.checkpointfs.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs._
import org.slf4j.LoggerFactory

import io.checkpointfs.spark.compat.{CancellableFSDataOutputStream, CheckpointFileManager, ManagerBase}
import io.checkpointfs.spark.direct.{CheckpointRoots, DirectWriteManager, Options, Probes}
import io.checkpointfs.spark.store.{DirectStore, Failures, FileSystemStore, Registry, Upload}
import io.checkpointfs.spark.store.s3.OwnS3A

/**
 * Spark's `CheckpointFileManager` for object stores without rename. Set
 * `spark.sql.streaming.checkpointFileManagerClass` to this class.
 *
 * It chooses once, for the root it is made for, between checkpointfs's direct implementation
 * ([[io.checkpointfs.spark.direct.DirectWriteManager]], the JVM twin of Python's `DirectWriteManager`) on the store
 * [[io.checkpointfs.spark.store.Registry]] opens for the root's file system, and the manager Spark would have chosen
 * itself, and forwards every call of the contract to the one chosen:
 *
 *  - `s3a://` (and `s3://`, `s3n://` served by S3A; `s3://` served by anything else, such as EMR's EMRFS, through
 *    the shim's own S3A for the bucket, [[io.checkpointfs.spark.store.s3.OwnS3A]], unless
 *    `checkpointfs.s3.own.s3a=false`): every checkpoint file written straight to its final key, with
 *    no existence or parent probes; put-if-absent is `If-None-Match: *`, sent as the jar's Spark line allows
 *    (`compat.LineStore`: the shim's own requests through S3A's S3 client, S3A's conditional create for large files
 *    on Hadoop 3.4.2+);
 *  - `gs://` with Google's connector (`GoogleHadoopFileSystem`, shaded or not): `ifGenerationMatch=0` through the
 *    connector's storage layer, nothing sent before `close()`; Hadoop 3.5's own hadoop-gcp is delegated
 *    ([[io.checkpointfs.spark.store.Registry.HadoopGcpReason]]);
 *  - `abfs[s]://` (Spark 4.1 and later: hadoop-azure 3.4.2+) for a flat-namespace account over the Blob endpoint
 *    with a Shared Key: one `Put Blob` with `If-None-Match: *` sent by the shim; other Azure accounts, auths and lines
 *    are delegated;
 *  - every other scheme (`file`, `hdfs`, `wasb`, ...), and any scheme listed in
 *    [[DirectWriteCheckpointFileManager.RenameSchemesKey]], is delegated to the manager Spark would have chosen
 *    itself (FileContext- or FileSystem-based, rename), with one INFO line per checkpoint root: the shim set for a
 *    whole cluster leaves queries on other stores as they would be without it. A root on a scheme the shim is meant
 *    to write directly (s3a; gs:// on Google's connector; abfs:// on a flat namespace with a Shared Key) that ends
 *    up delegated (a connector version that lacks a call the shim makes, say) is said at WARN, naming the reason, and
 *    counted (`unexpectedDelegations`).
 *  - Before the JVM's first put-if-absent to a bucket, the store is checked
 *    ([[io.checkpointfs.spark.store.StoreCheck]], the wrapper store [[io.checkpointfs.spark.store.CheckedStore]]).
 *
 * Settings, read from the Hadoop configuration (`spark.hadoop.` prefix in Spark):
 * `checkpointfs.cancel.strategy` (`abort` or `close-then-delete`), `checkpointfs.cancel.delete.attempts` (default 3),
 * `checkpointfs.rename.schemes` (comma-separated), `checkpointfs.exists.probe` (`log-order`, the default,
 * `file-names` or `full`; see [[io.checkpointfs.spark.direct.Probes]]), `checkpointfs.store.check`,
 * `checkpointfs.s3.own.s3a`.
 */
class DirectWriteCheckpointFileManager private[spark] (path: Path, hadoopConf: Configuration,
    openStore: (Path, FileSystem, Options) => Either[Registry.Delegation, DirectStore],
    sparkManager: (Path, Configuration) => CheckpointFileManager) extends ManagerBase {

  import DirectWriteCheckpointFileManager._

  /** The constructor Spark calls: the store from [[Registry]], else the manager Spark would have made itself. */
  def this(path: Path, hadoopConf: Configuration) =
    this(path, hadoopConf, Registry.open, (p, conf) => CheckpointFileManager.create(p, conf))

  SettingsCheck.require(hadoopConf, path.toString)
  private val options: Options = Options(hadoopConf)
  /** The file system of the path's scheme, as Spark and the user's code get it. */
  private val servedBy: FileSystem = openFileSystem(path, hadoopConf)
  /**
   * The file system checkpoint files are written, read and listed through: `servedBy`, or, for `s3://` served by
   * something other than S3A (EMRFS), the shim's own S3A for the bucket ([[OwnS3A]]; `checkpointfs.s3.own.s3a`).
   */
  private val fs: FileSystem =
    if (OwnS3A.applies(servedBy, options)) OwnS3A.forBucket(servedBy, hadoopConf) else servedBy

  /** The directory this manager was made for. */
  private val root: Path = fs.makeQualified(path)
  /** The checkpoint (or sink output) directory `root` belongs to: what log lines name once per process. */
  private val checkpointRoot: Path = CheckpointRoots.checkpointRootOf(root)

  /** The manager every call goes to, chosen once: the direct one (Right), or Spark's own (Left). */
  private val chosen: Either[CheckpointFileManager, DirectWriteManager] =
    openStore(path, fs, options) match {
      case Right(store) =>
        CheckpointRoots.announce(checkpointRoot) {
          if (fs ne servedBy) log.info("{}: {}", checkpointRoot, OwnS3A.startLine(servedBy): Any)
          log.info("{}: checkpoint files are written directly with {} (no rename); store check {}", checkpointRoot,
            store.describe, if (options.storeCheck) "on" else s"OFF (${Protocol.StoreCheckKey}=false)")
          if (!options.storeCheck) {
            log.warn("{}: {}=false: the store is trusted to refuse a second put-if-absent without being checked; a " +
              "store that ignores If-None-Match lets two writers of this checkpoint both succeed", checkpointRoot,
              Protocol.StoreCheckKey: Any)
          }
        }
        Right(new DirectWriteManager(path, fs, store, options))
      case Left(delegation) =>
        val conf = new Configuration(hadoopConf)
        conf.unset(ManagerClassKey)
        val spark = sparkManager(path, conf)
        CheckpointRoots.announce(checkpointRoot) {
          announceDelegation(checkpointRoot, Registry.schemeOf(fs), fs.getClass.getName, spark.getClass.getSimpleName,
            delegation)
        }
        Left(spark)
    }

  private val target: CheckpointFileManager = chosen.fold(identity, identity)

  /** Whether this manager writes directly (true) or delegates to Spark's rename-based manager (false). */
  def isDirect: Boolean = chosen.isRight

  override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream =
    target.createAtomic(path, overwriteIfPossible)

  override def open(path: Path): FSDataInputStream = target.open(path)

  override def list(path: Path, filter: PathFilter): Array[FileStatus] = target.list(path, filter)

  override def mkdirs(path: Path): Unit = target.mkdirs(path)

  /** Spark's manager's answers are recorded too (probe kind `delegated`); the direct one records its own. */
  override def exists(path: Path): Boolean = {
    val answer = target.exists(path)
    if (!isDirect && Probes.recording) Probes.record(root, fs.makeQualified(path), Probes.DelegatedProbe, answer)
    answer
  }

  override def delete(path: Path): Unit = target.delete(path)

  override def isLocal: Boolean = target.isLocal

  override def createCheckpointDirectory(): Path = target.createCheckpointDirectory()

  override protected def closeManager(): Unit = chosen.fold(closeOther, _.close())

  override def toString: String = s"${getClass.getSimpleName}($path, ${chosen.fold(d =>
    s"delegating to ${d.getClass.getSimpleName}", _ => "direct")})"
}

object DirectWriteCheckpointFileManager {
  private val log = LoggerFactory.getLogger(classOf[DirectWriteCheckpointFileManager])

  val ManagerClassKey = "spark.sql.streaming.checkpointFileManagerClass"

  val AbortableCapability: String = Upload.AbortableCapability
  /** Hadoop's openFile() option giving the file's length, so S3A opens it without a HEAD (Hadoop 3.3.5+). */
  val OpenFileLengthOption: String = FileSystemStore.OpenFileLengthOption
  /** S3A's change detection settings: `open()` uses a listed status only while S3A enforces the listed ETag. */
  val ChangeDetectionModeKey: String = FileSystemStore.ChangeDetectionModeKey
  val ChangeDetectionSourceKey: String = FileSystemStore.ChangeDetectionSourceKey
  /** Listed files up to this size are read whole by `open()`, with one GET (their status known from the listing). */
  val MaxEagerReadBytes: Long = FileSystemStore.MaxEagerReadBytes

  /** Why a scheme other than S3A and Google's gs:// connector is delegated. */
  val OtherSchemeReason: String = Registry.OtherSchemeReason
  /** Why Hadoop 3.5's hadoop-gcp is delegated (docs/spark.md has the details). */
  val HadoopGcpReason: String = Registry.HadoopGcpReason

  val CancelStrategyKey: String = Options.CancelStrategyKey
  val DeleteAttemptsKey: String = Options.DeleteAttemptsKey
  val RenameSchemesKey: String = Options.RenameSchemesKey
  /** The schemes trusted for atomic rename unless `checkpointfs.rename.schemes` says otherwise (protocol.json). */
  val DefaultRenameSchemes: String = Options.DefaultRenameSchemes

  /**
   * Say, once per checkpoint root, that `root` is left to Spark's manager `manager`, and why: at INFO when that is
   * by design (another scheme, a scheme trusted for rename, an account or a line the shim does not write); at WARN,
   * counted in [[ShimMetrics.unexpectedDelegations]], when the shim is meant to write it directly (s3a; gs:// on
   * Google's connector; abfs:// on a flat-namespace account with a Shared Key) and could not.
   */
  private[spark] def announceDelegation(root: Path, scheme: String, fsClass: String, manager: String,
      delegation: Registry.Delegation, say: (Boolean, String) => Unit = sayDelegation): Unit = {
    val line = s"$root: scheme '$scheme' ($fsClass) is not written directly by checkpointfs; delegating to Spark's " +
      s"$manager: ${delegation.reason}"
    if (!delegation.meant) say(false, line)
    else {
      ShimMetrics.unexpectedDelegations.inc()
      say(true, s"$line. checkpointfs is meant to write this store directly: this checkpoint's files go through " +
        "Spark's rename-based manager instead (temporary files, copies and existence probes; counted in the " +
        "metric unexpectedDelegations)")
    }
  }

  private def sayDelegation(warn: Boolean, line: String): Unit = if (warn) log.warn(line) else log.info(line)

  /** The path's file system, with a message that says what to fix when its connector is missing. */
  private def openFileSystem(path: Path, conf: Configuration): FileSystem = {
    val scheme = Option(path.toUri.getScheme).getOrElse("(default file system)")
    def missing(what: String, cause: Throwable): CheckpointStoreConfigException = {
      val hint = if (scheme == "s3a" || scheme == "s3") {
        s"add hadoop-aws-${org.apache.hadoop.util.VersionInfo.getVersion}.jar (the same version as the Hadoop " +
          "that Spark ships) and the AWS SDK jars it needs to spark.jars; checkpointfs.spark.configure() does this"
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
}
