package io.checkpointfs.spark
package store
package gcs

import java.io.{FileInputStream, FileNotFoundException, IOException}
import java.nio.ByteBuffer
import java.nio.channels.WritableByteChannel
import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}
import org.apache.hadoop.util.ShutdownHookManager
import org.slf4j.LoggerFactory

/**
 * Put-if-absent on `gs://` through Google's Cloud Storage connector ([[GcsConnector]]), with no existence or
 * directory probe: the object is created with `ifGenerationMatch=0` (a lost race is GCS's 412, which
 * [[DirectWriteOutputStream]] turns into Hadoop's `FileAlreadyExistsException`), the write id in its metadata
 * (settled by [[head]] after an ambiguous answer).
 *
 * Nothing is sent before `close()` ([[SpillingUploadStream]]): the connector starts its upload when a channel is
 * opened and has no cancel, so a cancel must come before any request. A file up to `threshold` bytes (the
 * protocol's part size) is held in memory and sent as one `multipart` upload request by the `small` connector
 * instance (direct upload on); a larger one is spilled to a local temporary file and sent at close as a resumable
 * upload by the `large` instance (chunks of the part size; the precondition is checked when the last chunk
 * finalizes the object). Overwrite tries generation 0 first (one request for a new name, which is what Spark's
 * overwrites almost always are: fresh version numbers), and on a 412 reads the generation and writes conditionally
 * on it, a few times; the connector offers no unconditional create.
 */
private[spark] final class GcsDirectStore(fs: FileSystem, gcsUploader: GcsUploader, threshold: Int,
    blockSize: Long) extends SendAtCloseStore(fs, gcsUploader, threshold) {

  override def describe: String = GcsDirectStore.PutIfAbsent

  override val identity: StoreIdentity =
    StoreIdentity(fs.getConf.getTrimmed(GcsDirectStore.RootUrlKey, GcsDirectStore.DefaultRootUrl), fs.getUri.getHost)

  /** A file: one `objects.get` of the shim's (the connector's own probe sends more). */
  override def exists(path: Path, file: Boolean): Boolean =
    if (file) uploader.writeId(DirectStore.keyOf(path)).isDefined else super.exists(path, file)

  /** One `objects.list` with delimiter `/` a page; each file's status carries its generation. */
  override def list(dir: Path): Array[FileStatus] = {
    val prefix = DirectStore.keyOf(dir).stripSuffix("/") + "/"
    val base = fs.getUri.toString.stripSuffix("/") + "/"
    uploader.list(prefix).map { item =>
      new GcsFileStatus(if (item.isDirectory) 0L else item.size, item.isDirectory,
        if (item.isDirectory) 0L else blockSize, item.modificationTime, new Path(base + item.name.stripSuffix("/")),
        item.generation): FileStatus
    }.toArray
  }

  /** A listed file of at most [[FileSystemStore.MaxEagerReadBytes]]: one GET of its listed generation. */
  override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] = status match {
    case g: GcsFileStatus if g.isFile && g.generation > 0 && g.getLen > 0 &&
        g.getLen <= FileSystemStore.MaxEagerReadBytes =>
      Some(() => uploader.read(DirectStore.keyOf(g.getPath), g.generation, g.getLen.toInt))
    case other => super.readListed(other)
  }

  /** A file: one DELETE of its listed generation (two, its generation read first, when not listed), without the
   * connector's status probe and parent-directory marker. */
  override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit =
    if (!file) super.delete(path, listed, file)
    else {
      val key = DirectStore.keyOf(path)
      val generation = listed.collect { case g: GcsFileStatus if g.isFile => g.generation }.getOrElse(-1L)
      try uploader.delete(key, generation)
      catch {
        case _: FileNotFoundException => ()
        case e: IOException if generation > 0 && GcsUploader.isPreconditionFailed(e) =>
          // replaced since the listing: delete what is there now
          try uploader.delete(key)
          catch { case _: FileNotFoundException => () }
      }
    }
}

/**
 * The requests of [[GcsDirectStore]], through the connector instances `small` (direct upload: one request a file)
 * and `large` (resumable uploads in chunks of the part size). Each is counted as one request of the running
 * [[ShimMetrics.Call]] (a resumable upload as its initiation and its chunks); the connector's own retries
 * (`fs.gs.http.max.retry`) happen out of sight and are not counted.
 */
private[spark] final class GcsUploader(small: GcsConnector, large: GcsConnector, bucket: String, chunkSize: Long,
    attempts: Int = GcsUploader.DefaultAttempts, baseDelayMs: Long = GcsUploader.BaseDelayMs)
  extends SendAtCloseUploader with VersionedRequests {
  import GcsUploader._

  private def count(key: String, what: String, n: Long = 1): Unit = {
    val call = ShimMetrics.callFor(bucket, key)
    if (call != null) (0L until n).foreach(_ => call.requestSent(s"$what $key", retry = false))
  }

  /**
   * Send with `ifGenerationMatch=0`; when overwriting and the name exists (412), conditionally on its generation.
   * An upload the connector could not send again itself (a single-request upload streams its body once) is sent
   * again here after an answer the protocol's table retries (throttling, 5xx, a reset or timeout: [[Failures]]), up
   * to `attempts` times; a 412 after an attempt that may have landed is settled by the caller, by the write id.
   */
  private def send(key: String, ifAbsent: Boolean, requests: Long)(create: Long => Long): Unit = {
    lastCreated.set(-1L)
    def attempt(generation: Long): Unit = {
      val what = s"insert $key"
      Retry.withBackoff(attempts, baseDelayMs, retryable = e => !Failures.isInterruption(e) &&
        Failures.classify(e).retried, onRetry = (e, _) => {
        val call = ShimMetrics.callFor(bucket, key)
        if (call != null) call.requestFailed(what)
        if (Failures.classify(e).name == Protocol.Retry) ShimMetrics.throttled.inc()
      }) {
        count(key, "insert", requests)
        lastCreated.set(create(generation))
      }
    }
    try attempt(0L)
    catch {
      case e: IOException if !ifAbsent && isPreconditionFailed(e) =>
        var tries = 1
        var done = false
        while (!done) {
          count(key, "get")
          val generation = small.item(bucket, key).map(_._1).getOrElse(0L)
          try {
            attempt(generation)
            done = true
          } catch {
            case again: IOException if isPreconditionFailed(again) && tries < OverwriteAttempts =>
              tries += 1 // replaced again meanwhile: read the new generation
          }
        }
    }
  }

  override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    send(key, ifNoneMatch, 1) { generation =>
      small.create(bucket, key, generation, writeId)(c => GcsConnector.writeFully(c, ByteBuffer.wrap(data, 0, len)))
    }

  /** A resumable upload of `data[0, len)` (the store check's second canary). */
  def putResumable(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    send(key, ifNoneMatch, resumableRequests(len.toLong)) { generation =>
      large.create(bucket, key, generation, writeId)(c => GcsConnector.writeFully(c, ByteBuffer.wrap(data, 0, len)))
    }

  /** The local `file` of `len` bytes as a resumable upload (chunks read from the file). */
  def putLarge(key: String, file: java.io.File, len: Long, ifNoneMatch: Boolean, writeId: String): Unit =
    send(key, ifNoneMatch, resumableRequests(len)) { generation =>
      large.create(bucket, key, generation, writeId)(c => copyFile(file, len, c))
    }

  override def putFile(key: String, file: java.io.File, writeId: String): Unit =
    putLarge(key, file, file.length, ifNoneMatch = false, writeId)

  private def resumableRequests(len: Long): Long = 1 + math.max(1L, (len + chunkSize - 1) / chunkSize)

  override def writeId(key: String): Option[String] = {
    count(key, "get")
    small.item(bucket, key).map(_._2)
  }

  /** What lies directly below `prefix` (see [[GcsConnector.list]]), counted as one request. */
  def list(prefix: String): Seq[GcsConnector.Item] = {
    count(prefix, "list")
    small.list(bucket, prefix)
  }

  /** Generation `generation` of `key`, exactly `len` bytes (see [[GcsConnector.read]]), one request. */
  def read(key: String, generation: Long, len: Int): Option[Array[Byte]] = {
    count(key, "get")
    small.read(bucket, key, generation, len)
  }

  override def delete(key: String): Unit = delete(key, -1L)

  /** Delete `key`, of `generation` when known (> 0: one request), else whatever is there (two requests). */
  def delete(key: String, generation: Long): Unit = {
    count(key, "delete", if (generation > 0) 1 else 2)
    small.delete(bucket, key, generation)
  }

  /** The generation the last create of this thread made (-1: unknown, or none), from the create's answer. */
  private[spark] def lastGeneration: Long = lastCreated.get()

  override def lastVersion: Long = lastGeneration

  /** Delete generation `version` of `key` (one request); on a 412 (replaced since: the unsafe case of the store
   * check), whatever is there now. */
  override def deleteVersion(key: String, version: Long): Unit =
    try delete(key, version)
    catch { case e: IOException if isPreconditionFailed(e) => delete(key) }

  /** The store check's large canary: a resumable upload of the bytes. */
  override def putLargeBytes(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    putResumable(key, data, len, ifNoneMatch, writeId)

  private val lastCreated = new ThreadLocal[Long] { override def initialValue(): Long = -1L }
}

/** A listed file's status with its GCS generation, so that it is read (or deleted) as listed with one request. */
private[spark] final class GcsFileStatus(length: Long, isDir: Boolean, blockSize: Long, modificationTime: Long,
    path: Path, val generation: Long) extends FileStatus(length, isDir, 1, blockSize, modificationTime, path)

private[spark] object GcsUploader {
  /** Overwrite attempts when the name keeps being replaced between reading its generation and writing. */
  val OverwriteAttempts = 3
  /** Attempts of one upload (the first and its retries), and the back-off before the first retry (doubling). */
  val DefaultAttempts = 6
  val BaseDelayMs = 200L

  /** GCS answered 412 (a precondition, `ifGenerationMatch`, not met), anywhere in the failure's causes. */
  def isPreconditionFailed(e: Throwable): Boolean = Failures.answerOf(e).status == 412

  /** Exactly `len` bytes of `file` into `channel`; an IOException (and nothing finalized) when it holds fewer. */
  def copyFile(file: java.io.File, len: Long, channel: WritableByteChannel): Unit = {
    val in = new FileInputStream(file).getChannel
    try {
      val buffer = ByteBuffer.allocate(CopyBufferBytes)
      var sent = 0L
      while (sent < len) {
        buffer.clear()
        if (len - sent < buffer.capacity) buffer.limit((len - sent).toInt)
        val n = in.read(buffer)
        if (n < 0) throw new IOException(s"$file: ended after $sent of $len bytes")
        buffer.flip()
        GcsConnector.writeFully(channel, buffer)
        sent += n
      }
    } finally in.close()
  }

  private val CopyBufferBytes = 1024 * 1024
}

private[spark] object GcsDirectStore {
  private val log = LoggerFactory.getLogger(classOf[GcsDirectStore])

  val DirectUploadKey = "fs.gs.outputstream.direct.upload.enable"
  val ChunkSizeKey = "fs.gs.outputstream.upload.chunk.size"
  val RootUrlKey = "fs.gs.storage.root.url"
  val DefaultRootUrl = "https://storage.googleapis.com/"

  /** GCS's chunk granularity: a resumable upload's non-final chunks are multiples of it (protocol.json). */
  val ChunkMultiple: Long = 256L * 1024

  /**
   * The part size on gs://: files up to it are one request from memory, larger ones resumable uploads in chunks of
   * it. `fs.gs.outputstream.upload.chunk.size` when set (rounded down to a multiple of 256 KiB), else the protocol's
   * part size ([[Protocol.PartSizeBytes]], 16 MiB).
   */
  def partSize(conf: Configuration): Int = {
    val wanted = Option(conf.getTrimmed(ChunkSizeKey)).filter(_.nonEmpty)
      .map(_ => conf.getLongBytes(ChunkSizeKey, Protocol.PartSizeBytes)).getOrElse(Protocol.PartSizeBytes)
    math.min(math.max(wanted / ChunkMultiple * ChunkMultiple, ChunkMultiple), (Int.MaxValue - 8) / ChunkMultiple *
      ChunkMultiple).toInt
  }

  /** How this store sends put-if-absent (for logs). */
  val PutIfAbsent = "Google's connector, ifGenerationMatch=0 with no probe: one multipart upload request up to the " +
    "part size, a resumable upload above it"

  /** The connector instances made for each file system the shim was given: (small, large). */
  private val instances =
    java.util.Collections.synchronizedMap(new java.util.WeakHashMap[FileSystem, (FileSystem, FileSystem)]())
  @volatile private var hooked = false

  /**
   * The store for `fs` (Google's connector), or Left(why) when this connector version lacks a call the shim needs.
   */
  def open(fs: FileSystem): Either[String, Registry.Opened] = {
    if (Protocol.GcsWriteIdEncoding.toLowerCase(Locale.ROOT) != "base64") {
      return Left(s"protocol.json stores the GCS write id as '${Protocol.GcsWriteIdEncoding}', which this shim " +
        "cannot write (Google's connector base64-encodes metadata)")
    }
    val threshold = partSize(fs.getConf)
    try {
      val (smallFs, largeFs) = instances.computeIfAbsent(fs, _ => {
        def own(settings: (String, String)*): FileSystem = {
          val conf = new Configuration(fs.getConf)
          settings.foreach { case (k, v) => conf.set(k, v) }
          FileSystem.newInstance(fs.getUri, conf)
        }
        val pair = (own(DirectUploadKey -> "true"), own(DirectUploadKey -> "false", ChunkSizeKey -> threshold.toString))
        closeAtShutdown()
        log.info("{}: checkpoint files are written with {} and {}={}", fs.getUri, s"$DirectUploadKey=true up to " +
          s"$threshold bytes, resumable uploads above", ChunkSizeKey, threshold.toString)
        pair
      })
      val uploader = new GcsUploader(GcsConnector(smallFs), GcsConnector(largeFs), fs.getUri.getHost, threshold.toLong)
      val store = new GcsDirectStore(fs, uploader, threshold, fs.getConf.getLongBytes("fs.gs.block.size", 64L << 20))
      Right(Registry.Opened(store, StoreCheck.Plan(StoreCheck.GcsInsert, StoreCheck.GcsResumable, uploader, threshold)))
    } catch {
      case e: ReflectiveOperationException =>
        Left(s"this version of Google's connector (${fs.getClass.getName}) lacks a call the shim needs ($e)")
      case e: LinkageError =>
        Left(s"this version of Google's connector (${fs.getClass.getName}) lacks a class the shim needs ($e)")
    }
  }

  private def closeAtShutdown(): Unit = synchronized {
    if (!hooked) {
      hooked = true
      ShutdownHookManager.get().addShutdownHook(() => {
        val open = instances.synchronized(new java.util.ArrayList[(FileSystem, FileSystem)](instances.values()))
        open.forEach { pair =>
          Seq(pair._1, pair._2).foreach { fs =>
            try fs.close()
            catch { case NonFatal(e) => log.debug("closing a checkpoint-write file system failed", e) }
          }
        }
      }, FileSystem.SHUTDOWN_HOOK_PRIORITY)
    }
  }
}
