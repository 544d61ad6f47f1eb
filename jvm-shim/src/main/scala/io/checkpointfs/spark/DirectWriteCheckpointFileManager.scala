package io.checkpointfs.spark

import java.io.FileNotFoundException
import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs._
import org.slf4j.LoggerFactory

import io.checkpointfs.spark.compat.{CancellableFSDataOutputStream, CheckpointFileManager, LineStore, ManagerBase}
import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store.{DirectStore, Failures, MultipartGate, StoreCheck}
import io.checkpointfs.spark.store.azure.AzureDirectStore
import io.checkpointfs.spark.store.gcs.{GcsConnector, GcsDirectStore}

/**
 * Spark's `CheckpointFileManager` for object stores without rename, the JVM twin of checkpointfs's Python
 * `DirectWriteManager`. Set `spark.sql.streaming.checkpointFileManagerClass` to this class.
 *
 *  - On S3A every checkpoint file is written straight to its final key, with no existence or parent probes.
 *    `createAtomic(path, overwriteIfPossible = false)` is a conditional write (`If-None-Match: *`); a lost race
 *    surfaces from `close()` as Hadoop's `FileAlreadyExistsException`. How the conditional write is sent depends
 *    on the Spark line this jar was built for (`compat.LineStore`): S3A's conditional create on Hadoop 3.4.2+, the
 *    shim's own requests through S3A's S3 client on Hadoop 3.3.4 and 3.4.1. Each object carries a unique write id
 *    in its user metadata (`x-amz-meta-` + [[Protocol.WriteIdKey]]), read back after an ambiguous failure to tell "my
 *    earlier attempt landed" from "another writer won". `cancel()` aborts (Hadoop `Abortable`), so nothing is
 *    published.
 *  - On `gs://` with Google's connector (`GoogleHadoopFileSystem`, shaded or not) every checkpoint file is created
 *    through the connector's storage layer with `ifGenerationMatch=0` and no probe, the write id in its metadata,
 *    nothing sent before `close()` (one request for a file up to the part size; [[GcsDirectStore]]). Hadoop 3.5's
 *    own hadoop-gcp is delegated ([[DirectWriteCheckpointFileManager.HadoopGcpReason]]).
 *  - On `abfs[s]://` (Spark 4.1 and later: hadoop-azure 3.4.2+) for a flat-namespace account over the Blob endpoint
 *    with a Shared Key, every checkpoint file is one `Put Blob` with `If-None-Match: *` sent by the shim
 *    ([[AzureDirectStore]]); other Azure accounts, auths and lines are delegated.
 *  - Every other scheme (`file`, `hdfs`, `wasb`, ...), and any scheme listed in
 *    [[DirectWriteCheckpointFileManager.RenameSchemesKey]], is delegated to the manager Spark would have chosen
 *    itself (FileContext- or FileSystem-based, rename), with one INFO line per checkpoint root: the shim set for a
 *    whole cluster leaves queries on other stores as they would be without it.
 *  - Before the JVM's first put-if-absent to a bucket, the store is checked ([[StoreCheck]]).
 *
 * Settings, read from the Hadoop configuration (`spark.hadoop.` prefix in Spark):
 * `checkpointfs.cancel.strategy` (`abort` or `close-then-delete`), `checkpointfs.cancel.delete.attempts` (default 3),
 * `checkpointfs.rename.schemes` (comma-separated), `checkpointfs.exists.probe` (`log-order`, the default,
 * `file-names` or `full`; see [[Probes]]).
 */
class DirectWriteCheckpointFileManager(path: Path, hadoopConf: Configuration) extends ManagerBase {

  import DirectWriteCheckpointFileManager._

  SettingsCheck.require(hadoopConf, path.toString)
  private val settings: Settings = Settings(hadoopConf)
  private val fs: FileSystem = openFileSystem(path, hadoopConf)
  private val scheme: String = Option(fs.getUri.getScheme).getOrElse("").toLowerCase(Locale.ROOT)

  /** The directory this manager was made for: `exists()` probes it, and what lies above it, in full. */
  private val root: Path = fs.makeQualified(path)
  /** The checkpoint (or sink output) directory `root` belongs to: what log lines name once per process. */
  private val checkpointRoot: Path = CheckpointRoots.checkpointRootOf(root)
  private val probeMode: String = Probes.mode(hadoopConf.get(Probes.ModeKey, Probes.LogOrderMode))
  private val known = new Knowledge()

  /**
   * How files are written directly (S3A, Google's GCS connector), or why not (Left), when the scheme is left to
   * Spark's own manager: any other file system, and any scheme listed in `checkpointfs.rename.schemes` (trusted
   * explicitly, `s3a` included).
   */
  private val chosen: Either[String, DirectStore] =
    if (settings.renameSchemes.contains(scheme)) Left(s"the scheme is trusted for atomic rename ($RenameSchemesKey)")
    else if (GcsConnector.isGoogleConnector(fs)) GcsDirectStore.open(fs)
    else if (GcsConnector.isHadoopGcp(fs)) Left(HadoopGcpReason)
    else if (AzureDirectStore.isAbfs(fs)) LineStore.openAzure(fs)
    else LineStore.open(fs, path).toRight(OtherSchemeReason)

  private val store: Option[DirectStore] = chosen.toOption

  /** How put-if-absent is sent, for the log line. */
  private def putIfAbsentText: String = store match {
    case Some(_: GcsDirectStore) => GcsDirectStore.PutIfAbsent
    case Some(_: AzureDirectStore) => AzureDirectStore.PutIfAbsent
    case _ => LineStore.PutIfAbsent
  }

  /** The bucket of the file system (S3A's host part), which requests name. */
  private val bucket: String = fs.getUri.getHost

  /** The store's identity for the store check: its endpoint and bucket. */
  private lazy val storeId = store match {
    case Some(_: GcsDirectStore) =>
      StoreCheck.Store(fs.getConf.getTrimmed(GcsDirectStore.RootUrlKey, GcsDirectStore.DefaultRootUrl), fs.getUri.getHost)
    case Some(azure: AzureDirectStore) =>
      val container = azure.uploader.client.containerUrl
      StoreCheck.Store(container.substring(0, container.lastIndexOf('/')), container.substring(container.lastIndexOf('/') + 1))
    case _ => StoreCheck.Store(fs.getConf.getTrimmed("fs.s3a.endpoint", ""), fs.getUri.getHost)
  }

  /** Spark's own manager, when this manager does not write directly; None when it does. */
  private val delegate: Option[CheckpointFileManager] = chooseMode()

  private def chooseMode(): Option[CheckpointFileManager] = {
    if (store.isDefined) {
      CheckpointRoots.announce(checkpointRoot) {
        log.info("{}: checkpoint files are written directly with {} (no rename); store check {}", checkpointRoot,
          putIfAbsentText, if (settings.storeCheck) "on" else s"OFF (${Protocol.StoreCheckKey}=false)")
        if (!settings.storeCheck) {
          log.warn("{}: {}=false: the store is trusted to refuse a second put-if-absent without being checked; a " +
            "store that ignores If-None-Match lets two writers of this checkpoint both succeed", checkpointRoot,
            Protocol.StoreCheckKey: Any)
        }
      }
      CheckpointRoots.register(root, this)
      None
    } else {
      val conf = new Configuration(hadoopConf)
      conf.unset(ManagerClassKey)
      val spark = CheckpointFileManager.create(path, conf)
      val why = chosen.left.getOrElse("")
      CheckpointRoots.announce(checkpointRoot) {
        log.info(s"$checkpointRoot: scheme '$scheme' (${fs.getClass.getName}) is not written directly by " +
          s"checkpointfs; delegating to Spark's ${spark.getClass.getSimpleName}: $why")
      }
      Some(spark)
    }
  }

  /** A unique id for one write, stamped on the object it makes. */
  private def newWriteId(): String = java.util.UUID.randomUUID().toString.replace("-", "")

  /** Whether this manager writes directly (true) or delegates to Spark's rename-based manager (false). */
  def isDirect: Boolean = delegate.isEmpty

  override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream =
    delegate match {
      case Some(d) => d.createAtomic(path, overwriteIfPossible)
      case None =>
        val direct = store.get
        val writeId = newWriteId()
        val qualified = fs.makeQualified(path)
        val call = (if (overwriteIfPossible) ShimMetrics.createOverwrite else ShimMetrics.createIfAbsent).start()
        try call.run {
          call.track(bucket, DirectStore.keyOf(qualified))
          val checked = !overwriteIfPossible && settings.storeCheck
          val dirKey = DirectStore.parentOf(DirectStore.keyOf(qualified))
          val (firstCheck, largeCheck) = direct.storeChecks
          if (checked) StoreCheck.ensure(firstCheck, storeId, direct.requests, dirKey, path.toString)
          known.forgetExactly(qualified)
          val out = direct.create(path, overwriteIfPossible, writeId)
          if (log.isDebugEnabled) log.debug(s"$path: writing directly (overwrite=$overwriteIfPossible, write id $writeId)")
          val data =
            if (!checked) out
            else new MultipartGate(out, direct.putFileLimit,
              () => StoreCheck.ensure(largeCheck, storeId, direct.requests, dirKey, path.toString))
          val kept = new KeepingOutputStream(data, known.bytesToKeep(qualified, putIfAbsent = !overwriteIfPossible))
          new DirectWriteOutputStream(direct, fs, path, overwriteIfPossible, writeId, settings, out, kept, call,
            k => known.published(root, qualified, k.written, k.kept, putIfAbsent = !overwriteIfPossible))
        } catch {
          case e: Throwable =>
            call.finish(failed = true)
            throw e
        }
    }

  /**
   * One GetObject at most for a file this manager wrote or listed, with no HEAD before it ([[Knowledge]]):
   *
   *  - a small file this manager published (put-if-absent, not deleted since) is read from memory, with no request:
   *    S3 never changes such an object in place;
   *  - a file a listing showed, of at most [[DirectWriteCheckpointFileManager.MaxEagerReadBytes]], is read whole
   *    here with one GET that carries the listed status (`openFile().withFileStatus`: S3A skips its HEAD, and the
   *    GET is conditional on the listed ETag, `If-Match`). Should that read fail in any way (the object changed or
   *    went away since the listing, an error), the status is forgotten and the file is opened as S3A opens it
   *    (below), so the caller sees what it would have seen without the listing: the current content, or S3A's
   *    FileNotFoundException from `open()`. Used only while S3A enforces the ETag
   *    (`fs.s3a.change.detection.mode` `server` or `client`, `fs.s3a.change.detection.source` `etag`: the defaults);
   *  - a larger file this manager published is opened with its length (`fs.option.openfile.length`): no HEAD with
   *    S3A's classic input stream on Hadoop 3.3.5 and later; Hadoop 3.5's default `analytics` stream and Hadoop
   *    3.3.4 still send one;
   *  - anything else is S3A's `open()`: a HEAD, then the GET.
   */
  override def open(path: Path): FSDataInputStream = delegate match {
    case Some(d) => d.open(path)
    case None =>
      val qualified = fs.makeQualified(path)
      val call = ShimMetrics.open.start()
      try call.run {
        call.track(bucket, DirectStore.keyOf(qualified))
        val inMemory = known.content(qualified).orElse {
          known.status(qualified).filter(_.getPath == qualified).flatMap { s =>
            if (store.get.readsListed(s)) readListed(s)(store.get.readListed(s))
            else if (listedStatusUsable(s)) readListed(s)(readWithStatus(s))
            else None
          }
        }
        val in = inMemory match {
          case Some(bytes) => new FSDataInputStream(new BytesInputStream(bytes))
          case None =>
            known.length(qualified) match {
              case Some(length) => openWithLength(qualified, length)
              case None => fs.open(qualified)
            }
        }
        MeasuredInputStream.wrap(in, call)
      } catch {
        case e: Throwable =>
          call.finish(failed = true)
          throw e
      }
  }

  /** Whether `status` (from a listing) lets S3A send one GET conditional on the object's ETag. */
  private def listedStatusUsable(status: FileStatus): Boolean =
    etagEnforced && status.isFile && status.getLen > 0 && status.getLen <= MaxEagerReadBytes && (status match {
      case e: EtagSource => e.getEtag != null && e.getEtag.nonEmpty
      case _ => false
    })

  private lazy val etagEnforced: Boolean = {
    val conf = fs.getConf
    val mode = conf.getTrimmed(ChangeDetectionModeKey, "server").toLowerCase(Locale.ROOT)
    val source = conf.getTrimmed(ChangeDetectionSourceKey, "etag").toLowerCase(Locale.ROOT)
    (mode == "server" || mode == "client") && source == "etag"
  }

  /** The whole file a listing showed, read with one GET conditional on its listed ETag (S3A). */
  private def readWithStatus(status: FileStatus): Option[Array[Byte]] = {
    val in = awaitOpen(status.getPath, fs.openFile(status.getPath).withFileStatus(status).build())
    try readFully(in, status.getLen.toInt)
    finally in.close()
  }

  /** The whole file a listing showed, as `read` reads it (one GET, as listed); None when that fails. */
  private def readListed(status: FileStatus)(read: => Option[Array[Byte]]): Option[Array[Byte]] = {
    val path = status.getPath
    try {
      val bytes = read
      if (bytes.isEmpty) known.forgetStatus(path)
      bytes
    } catch {
      case e: java.io.InterruptedIOException => throw e
      case NonFatal(e) =>
        if (Thread.currentThread().isInterrupted) throw e
        log.debug(s"$path: the read with its listed status failed ($e); opening it afresh")
        known.forgetStatus(path)
        None
    }
  }

  /** Exactly `length` bytes, then the end of the stream; None when the stream holds another length. */
  private def readFully(in: java.io.InputStream, length: Int): Option[Array[Byte]] = {
    val bytes = new Array[Byte](length)
    var at = 0
    while (at < length) {
      val n = in.read(bytes, at, length - at)
      if (n < 0) return None
      at += n
    }
    if (in.read() >= 0) None else Some(bytes)
  }

  private def openWithLength(path: Path, length: Long): FSDataInputStream =
    awaitOpen(path, fs.openFile(path).opt(OpenFileLengthOption, length.toString).build())

  private def awaitOpen(path: Path, future: java.util.concurrent.CompletableFuture[FSDataInputStream]): FSDataInputStream =
    try future.get()
    catch {
      case e: java.util.concurrent.ExecutionException => e.getCause match {
        case io: java.io.IOException => throw io
        case u: java.io.UncheckedIOException => throw u.getCause
        case r: RuntimeException => throw r
        case other => throw new java.io.IOException(s"$path: open failed", other)
      }
      case e: InterruptedException =>
        Thread.currentThread().interrupt()
        throw new java.io.InterruptedIOException(s"$path: interrupted while opening").initCause(e)
    }

  override def list(path: Path, filter: PathFilter): Array[FileStatus] = delegate match {
    case Some(d) => d.list(path, filter)
    case None => ShimMetrics.list.call { call =>
      call.track(bucket, DirectStore.keyOf(fs.makeQualified(path)).stripSuffix("/") + "/")
      val statuses = store.get.listDirectory(fs.makeQualified(path)) match {
        case Some(all) => all.filter(s => filter.accept(s.getPath))
        case None =>
          try fs.listStatus(path, filter)
          catch { case _: FileNotFoundException => Array.empty[FileStatus] }
      }
      known.listed(root, statuses.toSeq, p => fs.makeQualified(p))
      statuses.sortBy(_.getPath.toString)
    }
  }

  /** On an object store there are no directories to make: a no-op that sends no request. */
  override def mkdirs(path: Path): Unit = delegate match {
    case Some(d) => d.mkdirs(path)
    case None => ()
  }

  /**
   * A file or a directory is at `path`, with the fewest requests ([[Probes]] has the rule and Spark's call sites):
   * no request for a file this manager published and has not deleted, nor (mode `log-order`) for the next batch
   * of a log it writes; one HEAD (S3A's file probe) for a path below
   * the root named as Spark names only files and not a directory this manager has seen; otherwise S3A's full
   * probe, a HEAD and, when that finds no file, one LIST (the root, what lies above it, directories). Each answer
   * is logged at DEBUG by the `io.checkpointfs.spark.Probes` logger ([[Probes.record]]).
   */
  override def exists(path: Path): Boolean = delegate match {
    case Some(d) =>
      val answer = d.exists(path)
      if (Probes.recording) Probes.record(root, fs.makeQualified(path), Probes.DelegatedProbe, answer)
      answer
    case None => ShimMetrics.exists.call { _ =>
      val qualified = fs.makeQualified(path)
      val probe =
        if (probeMode == Probes.FullMode) Probes.FullProbe
        else if (known.isPublished(qualified)) Probes.KnownProbe
        else if (probeMode == Probes.LogOrderMode && settings.storeCheck && isNextBatch(qualified)) {
          Probes.NextBatchProbe
        }
        else if (Probes.isBelow(root, qualified) && Probes.isFileName(qualified.getName) &&
          !known.isDirectory(qualified)) Probes.FileProbe
        else Probes.FullProbe
      val answer = probe match {
        case Probes.KnownProbe => true
        case Probes.NextBatchProbe => false
        case Probes.FileProbe => store.get.probeFile(qualified).getOrElse(isFile(qualified))
        case _ => store.get.probePath(qualified).getOrElse(fs.exists(qualified))
      }
      if (Probes.recording) Probes.record(root, qualified, probe, answer)
      answer
    }
  }

  /**
   * Whether the qualified `path` is the next batch of a metadata log this manager writes (Probes, mode
   * `log-order`): a log batch below the root (Spark's logs: directly in it), whose previous batch this manager
   * published beside it with put-if-absent and has not deleted.
   */
  private def isNextBatch(path: Path): Boolean = Probes.isBelow(root, path) &&
    Probes.previousBatches(path.getName).exists(b => known.isPublished(new Path(path.getParent, b)))

  /** S3A's file probe: one HEAD (deprecated on FileSystem in general; S3A's own is a HEAD and nothing else). */
  @scala.annotation.nowarn("cat=deprecation")
  private def isFile(p: Path): Boolean = fs.isFile(p)

  override def delete(path: Path): Unit = delegate match {
    case Some(d) => d.delete(path)
    case None => ShimMetrics.delete.call { _ =>
      val qualified = fs.makeQualified(path)
      val listed = known.status(qualified).filter(_.getPath == qualified)
      known.forget(qualified)
      // A name Spark gives only to files is deleted with the store's own request where it has one (one DELETE on
      // gs://, without the connector's status probe and parent-directory marker)
      val deleted = Probes.isFileName(qualified.getName) && !known.isDirectory(qualified) &&
        store.get.deleteFile(qualified, listed)
      if (!deleted) {
        try fs.delete(path, true)
        catch { case _: FileNotFoundException => () }
      }
    }
  }

  override def isLocal: Boolean = delegate match {
    case Some(d) => d.isLocal
    case None => false
  }

  override def createCheckpointDirectory(): Path = delegate match {
    case Some(d) => d.createCheckpointDirectory()
    case None => fs.makeQualified(path)
  }

  override protected def closeManager(): Unit = {
    if (store.isDefined) CheckpointRoots.unregister(root, this)
    delegate.foreach(closeOther)
  }

  /**
   * Upload the local regular `file` to the qualified `path` below this manager's root, replacing what is there,
   * as one PutObject read from the file, with no probe ([[CheckpointS3AFileSystem]]'s `copyFromLocalFile`). False,
   * with nothing sent, when this manager cannot: it delegates to a rename-based manager, or the file is larger than
   * one PutObject of its store. A failed PutObject raises S3A's error for the path (nothing of it is visible).
   */
  private[spark] def putLocalFile(file: java.io.File, path: Path): Boolean = store match {
    case Some(direct) if file.length <= direct.putFileLimit =>
      known.forgetExactly(path)
      val writeId = newWriteId()
      direct.putFile(path, file, writeId)
      if (log.isDebugEnabled) log.debug(s"$path: uploaded ${file.length} bytes from $file (write id $writeId)")
      true
    case _ => false
  }

  override def toString: String =
    s"${getClass.getSimpleName}($path, ${delegate.map(d => s"delegating to ${d.getClass.getSimpleName}").getOrElse("direct")})"
}

object DirectWriteCheckpointFileManager {
  private val log = LoggerFactory.getLogger(classOf[DirectWriteCheckpointFileManager])

  val AbortableCapability = "fs.capability.outputstream.abortable"
  /** Hadoop's openFile() option giving the file's length, so S3A opens it without a HEAD (Hadoop 3.3.5+). */
  val OpenFileLengthOption = "fs.option.openfile.length"
  /** S3A's change detection settings: `open()` uses a listed status only while S3A enforces the listed ETag. */
  val ChangeDetectionModeKey = "fs.s3a.change.detection.mode"
  val ChangeDetectionSourceKey = "fs.s3a.change.detection.source"
  /** Listed files up to this size are read whole by `open()`, with one GET (their status known from the listing). */
  val MaxEagerReadBytes: Long = 1024 * 1024

  val ManagerClassKey = "spark.sql.streaming.checkpointFileManagerClass"

  /** Why a scheme other than S3A and Google's gs:// connector is delegated. */
  val OtherSchemeReason: String = "checkpointfs writes directly only S3A (scheme s3a, or s3 and s3n served by " +
    "S3AFileSystem), gs:// with Google's connector (com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem) and, on " +
    "Spark 4.1 and later, abfs[s]:// on a flat-namespace account with a Shared Key, and leaves other file systems " +
    "(wasb[s]:// included) to Spark, as without checkpointfs"

  /** Why Hadoop 3.5's hadoop-gcp is delegated (docs/spark.md has the details). */
  val HadoopGcpReason: String = "Hadoop's own GCS connector (hadoop-gcp, Hadoop 3.5) offers no create without an " +
    "existence probe, cannot store a write id in the object's metadata (so an answer lost in transit could not be " +
    "settled) and keeps its storage client private; set fs.gs.impl=com.google.cloud.hadoop.fs.gcs." +
    "GoogleHadoopFileSystem (Google's gcs-connector) for direct writes on gs://"
  val CancelStrategyKey = "checkpointfs.cancel.strategy"
  val DeleteAttemptsKey = "checkpointfs.cancel.delete.attempts"
  val RenameSchemesKey = "checkpointfs.rename.schemes"
  /** The schemes trusted for atomic rename unless `checkpointfs.rename.schemes` says otherwise (protocol.json). */
  val DefaultRenameSchemes: String = SettingsCheck.setting(RenameSchemesKey).default.get

  /** The manager's settings, read once they passed [[SettingsCheck]] (defaults from protocol.json). */
  private[spark] final case class Settings(abortOnCancel: Boolean, deleteAttempts: Int, renameSchemes: Set[String],
      storeCheck: Boolean = true)

  private[spark] object Settings {
    private def text(conf: Configuration, key: String): String =
      conf.getTrimmed(key, SettingsCheck.setting(key).default.get).toLowerCase(Locale.ROOT)

    def apply(conf: Configuration): Settings = {
      val schemes = conf.getTrimmedStrings(RenameSchemesKey, DefaultRenameSchemes.split(","): _*)
        .map(_.toLowerCase(Locale.ROOT)).filter(_.nonEmpty).toSet
      new Settings(text(conf, CancelStrategyKey) == "abort", text(conf, DeleteAttemptsKey).stripPrefix("+").toInt,
        schemes, text(conf, Protocol.StoreCheckKey) == "true")
    }
  }

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
