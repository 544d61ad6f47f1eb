package io.checkpointfs.spark
package store
package azure

import java.io.{FileInputStream, FileNotFoundException, IOException}
import java.util.Base64

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, FSDataOutputStream, Path}
import org.slf4j.LoggerFactory

/**
 * Put-if-absent on `abfs[s]://` for a flat-namespace account reached over its Blob endpoint (hadoop-azure 3.4.2+'s
 * `AbfsBlobClient`), with the account's Shared Key: the shim sends the Blob requests itself ([[AzureBlobClient]]),
 * because ABFS's `create(overwrite=false)` makes the name visible, empty, before the data arrives.
 *
 * Nothing is sent before `close()` ([[SpillingUploadStream]]): a file up to `threshold` bytes is one `Put Blob`
 * with `If-None-Match: *` (a lost race is 409 `BlobAlreadyExists`, which [[DirectWriteOutputStream]] turns into
 * Hadoop's `FileAlreadyExistsException`), the write id in `x-ms-meta-` + [[Protocol.AzureWriteIdKey]]; a larger
 * one is staged as `Put Block`s and committed by one `Put Block List` with `If-None-Match: *` (uncommitted blocks
 * are invisible). `cancel()` sends nothing. An ambiguous answer is settled by the write id read back with `Get
 * Blob Properties`. A file probe and a file delete are one request of the shim's; listings and reads go through
 * the user's ABFS instance.
 */
private[spark] final class AzureDirectStore(fs: FileSystem, azureUploader: AzureUploader, threshold: Int)
  extends SendAtCloseStore(fs, azureUploader, threshold) {

  override def describe: String = AzureDirectStore.PutIfAbsent

  override val identity: StoreIdentity = {
    val container = uploader.client.containerUrl
    StoreIdentity(container.substring(0, container.lastIndexOf('/')), container.substring(container.lastIndexOf('/') + 1),
      "container")
  }

  /**
   * A file: one `Get Blob Properties` (a committed blob that is not a Hadoop directory marker). Anything else:
   * `Get Blob Properties`, then, when no blob is there, one `List Blobs` of at most one name below it: 2 requests
   * at most. ABFS's own `exists` on a flat namespace also writes a directory marker blob for a directory that has
   * none.
   */
  override def exists(path: Path, file: Boolean): Boolean = {
    val key = DirectStore.keyOf(path)
    if (file) uploader.isFile(key)
    else {
      val dir = key.stripSuffix("/")
      (dir.nonEmpty && uploader.writeId(dir).isDefined) || uploader.anyBelow(if (dir.isEmpty) "" else dir + "/")
    }
  }

  /** A file: one `Delete Blob` (no error when absent). */
  override def delete(path: Path, listed: Option[org.apache.hadoop.fs.FileStatus], file: Boolean): Unit =
    if (!file) super.delete(path, listed, file)
    else {
      try uploader.delete(DirectStore.keyOf(path))
      catch { case _: FileNotFoundException => () }
    }
}

/**
 * The requests of [[AzureDirectStore]] through `client`, each counted as one request of the running
 * [[ShimMetrics.Call]] and retried here (the client never retries) after an answer the protocol's table retries
 * (`ServerBusy`, 5xx, a reset or timeout: [[Failures]]), as `retries` says.
 */
private[spark] final class AzureUploader(val client: AzureBlobClient, metricsBucket: String, partSize: Int,
    retries: AzureUploader.Retries = AzureUploader.Retries())
  extends SendAtCloseUploader {

  private def attempt[T](key: String, what: String)(body: => T): T = {
    val label = s"$what $key"
    Retry.withBackoff(retries.attempts, retries.baseDelayMs, retryable = e => !Failures.isInterruption(e) &&
      !e.isInstanceOf[FileNotFoundException] && Failures.classify(e).retried, onRetry = (e, _) => {
      val call = ShimMetrics.callFor(metricsBucket, key)
      if (call != null) call.requestFailed(label)
      if (Failures.classify(e).name == Protocol.Retry) ShimMetrics.throttled.inc()
    }, maxDelayMs = retries.maxDelayMs) {
      val call = ShimMetrics.callFor(metricsBucket, key)
      if (call != null) call.requestSent(label, retry = false)
      body
    }
  }

  override def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    attempt(key, "PutBlob")(client.putBlob(key, data, len, ifNoneMatch, writeId))

  /**
   * `data[0, len)` staged as blocks of the part size and committed with one `Put Block List` (the store check's
   * second canary; a large file's path, from memory).
   */
  def putBlocks(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    commitBlocks(key, ifNoneMatch, writeId, len.toLong) { (offset, size, buffer) =>
      System.arraycopy(data, offset.toInt, buffer, 0, size)
    }

  /** The store check's large canary: `Put Block`s and one `Put Block List`. */
  override def putLargeBytes(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit =
    putBlocks(key, data, len, ifNoneMatch, writeId)

  /** The local `file` of `len` bytes, read a part at a time: `Put Block`s, then one `Put Block List`. */
  def putLarge(key: String, file: java.io.File, len: Long, ifNoneMatch: Boolean, writeId: String): Unit = {
    val in = new FileInputStream(file)
    try {
      commitBlocks(key, ifNoneMatch, writeId, len) { (_, size, buffer) =>
        var at = 0
        while (at < size) {
          val n = in.read(buffer, at, size - at)
          if (n < 0) throw new IOException(s"$file: ended before its $len bytes")
          at += n
        }
      }
    } finally in.close()
  }

  private def commitBlocks(key: String, ifNoneMatch: Boolean, writeId: String, len: Long)(
      fill: (Long, Int, Array[Byte]) => Unit): Unit = {
    val parts = math.max(1L, (len + partSize - 1) / partSize).toInt
    val buffer = new Array[Byte](math.min(partSize.toLong, math.max(len, 1L)).toInt)
    val ids = (1 to parts).map(AzureBlobClient.blockId(writeId, _))
    var committed = false
    try {
      for (i <- 0 until parts) {
        val offset = i.toLong * partSize
        val size = math.min(partSize.toLong, len - offset).toInt
        fill(offset, size, buffer)
        attempt(key, "PutBlock")(client.putBlock(key, ids(i), buffer, size))
      }
      attempt(key, "PutBlockList")(client.putBlockList(key, ids, ifNoneMatch, writeId))
      committed = true
    } finally {
      if (!committed && !Thread.currentThread().isInterrupted) dropUncommitted(key)
    }
  }

  /**
   * Best effort: drop a name that holds only uncommitted blocks where the service keeps one (Azurite refuses the
   * next small create of such a name; Azure ignores them and the next commit discards them). Never touches a
   * committed blob (conditional on no change since 1970).
   */
  private def dropUncommitted(key: String): Unit =
    try {
      val call = ShimMetrics.callFor(metricsBucket, key)
      if (call != null) call.requestSent(s"DeleteBlob $key", retry = false)
      client.deleteBlob(key, onlyUncommitted = true)
    } catch { case NonFatal(_) => () } // 412 (committed), 404 (absent): nothing to drop

  override def putFile(key: String, file: java.io.File, writeId: String): Unit = {
    val len = file.length
    if (len <= partSize) {
      val data = java.nio.file.Files.readAllBytes(file.toPath)
      put(key, data, data.length, ifNoneMatch = false, writeId)
    } else putLarge(key, file, len, ifNoneMatch = false, writeId)
  }

  /** `Get Blob Properties`; the headers, None when there is no committed blob. */
  private def properties(key: String): Option[Map[String, String]] =
    attempt(key, "GetBlobProperties")(client.properties(key))

  override def writeId(key: String): Option[String] =
    properties(key).map(_.getOrElse(s"x-ms-meta-${Protocol.AzureWriteIdKey}".toLowerCase, ""))

  /** Whether any committed blob's name starts with `prefix` (one `List Blobs`, at most one name). */
  def anyBelow(prefix: String): Boolean = attempt(prefix, "ListBlobs")(client.anyBelow(prefix))

  /** Whether a committed blob that is not a Hadoop directory marker is at `key`. */
  def isFile(key: String): Boolean = properties(key).exists(h => !AzureUploader.isFolderMarker(h))

  override def delete(key: String): Unit = attempt(key, "DeleteBlob")(client.deleteBlob(key))
}

private[spark] object AzureUploader {
  val DefaultAttempts = 6
  val BaseDelayMs = 200L
  /** ABFS's own default longest back-off (`fs.azure.io.retry.max.backoff.interval`). */
  val MaxDelayMs = 30000L

  /** How the shim's Blob requests are retried: `attempts` in all, back-off from `baseDelayMs` doubling to at most
   * `maxDelayMs`. */
  final case class Retries(attempts: Int = DefaultAttempts, baseDelayMs: Long = BaseDelayMs,
                           maxDelayMs: Long = MaxDelayMs)

  object Retries {
    val MaxRetriesKey = "fs.azure.io.retry.max.retries"
    val MinBackoffKey = "fs.azure.io.retry.min.backoff.interval"
    val MaxBackoffKey = "fs.azure.io.retry.max.backoff.interval"

    /**
     * The retries the user gave ABFS, where they set them: `fs.azure.io.retry.max.retries` (retries after the first
     * attempt), `fs.azure.io.retry.min.backoff.interval` and `fs.azure.io.retry.max.backoff.interval` (ms); the
     * shim's defaults (6 attempts from 200 ms) for what is not set, so that the shim's requests are as patient as the
     * user made ABFS's and no more, and no slower by default than a checkpoint write should be.
     */
    def from(conf: org.apache.hadoop.conf.Configuration): Retries = {
      def set(key: String): Boolean = Option(conf.getTrimmed(key)).exists(_.nonEmpty)
      val attempts = if (set(MaxRetriesKey)) math.max(0, conf.getInt(MaxRetriesKey, DefaultAttempts - 1)) + 1
                     else DefaultAttempts
      val base = if (set(MinBackoffKey)) math.max(0L, conf.getLong(MinBackoffKey, BaseDelayMs)) else BaseDelayMs
      val max = if (set(MaxBackoffKey)) math.max(base, conf.getLong(MaxBackoffKey, MaxDelayMs)) else math.max(base, MaxDelayMs)
      Retries(attempts, base, max)
    }
  }

  def isFolderMarker(headers: Map[String, String]): Boolean =
    headers.get(s"x-ms-meta-${AzureBlobClient.FolderMarkerKey}").exists(_.equalsIgnoreCase("true"))
}

/**
 * Which `abfs[s]://` file systems the shim writes directly, read from hadoop-azure's public API by reflection (no
 * compile-time dependency): the store's default client must be `AbfsBlobClient` (a flat-namespace account over the
 * Blob endpoint: Hadoop 3.4.2 with `fs.azure.fns.account.service.type=BLOB`, 3.5.0 always for such an account; an
 * account with a hierarchical namespace gets the DFS client) and its auth `SharedKey`. Anything else is Left(why).
 */
private[spark] object AzureDirectStore {
  private val log = LoggerFactory.getLogger(classOf[AzureDirectStore])

  /** Whether `fs` is hadoop-azure's ABFS (or a subclass), without loading its classes. */
  def isAbfs(fs: FileSystem): Boolean = Abfs.isAbfs(fs)

  /** How this store sends put-if-absent (for logs). */
  val PutIfAbsent = "the shim's own Blob requests (Shared Key): one Put Blob with If-None-Match: * up to the part " +
    "size, Put Block and one Put Block List with If-None-Match: * above it"

  /** ABFS's write buffer (its Put Block size), taken as the part size where set. */
  val WriteRequestSizeKey = "fs.azure.write.request.size"

  /**
   * The part size on abfs://: files up to it are one Put Blob from memory, larger ones Put Blocks of it.
   * `fs.azure.write.request.size` when set (ABFS's own block size; at least 1 KiB), else the protocol's part size
   * ([[Protocol.PartSizeBytes]], 16 MiB).
   */
  def partSize(conf: org.apache.hadoop.conf.Configuration): Int = {
    val wanted = Option(conf.getTrimmed(WriteRequestSizeKey)).filter(_.nonEmpty)
      .map(_ => conf.getLongBytes(WriteRequestSizeKey, Protocol.PartSizeBytes)).getOrElse(Protocol.PartSizeBytes)
    math.min(math.max(wanted, 1024L), 100L * 1024 * 1024).toInt
  }

  /** The store for `fs` (hadoop-azure's ABFS), or Left(why) when the shim does not write it directly. */
  def open(fs: FileSystem): Either[Registry.Delegation, Registry.Opened] =
    try {
      val abfs = Abfs(fs)
      val clientClass = abfs.clientClass
      if (clientClass != "AbfsBlobClient") {
        Left(Registry.Delegation(s"ABFS reaches this account through its $clientClass: a hierarchical-namespace " +
          "account (whose rename is atomic), or a flat-namespace one on hadoop-azure 3.4.2 without " +
          "fs.azure.fns.account.service.type=BLOB (set it for direct writes); the shim writes directly only " +
          "flat-namespace accounts over the Blob endpoint", meant = false))
      } else {
        val auth = abfs.authType
        if (auth != "SharedKey") {
          Left(Registry.Delegation(s"the account is authorized with $auth; the shim signs its own Blob requests " +
            "with a Shared Key only (fs.azure.account.auth.type=SharedKey)", meant = false))
        } else {
          val account = abfs.accountName.takeWhile(_ != '.')
          val key = Base64.getDecoder.decode(abfs.storageAccountKey.trim)
          val base = abfs.containerUrl.toString.stripSuffix("/")
          val threshold = partSize(fs.getConf)
          val uploader = new AzureUploader(new AzureBlobClient(base, account, key), fs.getUri.getHost, threshold,
            AzureUploader.Retries.from(fs.getConf))
          log.debug("{}: checkpoint files are written with the Blob endpoint {}", fs.getUri, base: Any)
          Right(Registry.Opened(new AzureDirectStore(fs, uploader, threshold),
            StoreCheck.Plan(StoreCheck.AzurePutBlob, StoreCheck.AzureBlockList, uploader, threshold)))
        }
      }
    } catch {
      case e: ReflectiveOperationException =>
        Left(Registry.Delegation(s"this version of hadoop-azure (${fs.getClass.getName}) lacks a call the shim " +
          s"needs ($e)", meant = true))
      case e: LinkageError =>
        Left(Registry.Delegation(s"this version of hadoop-azure (${fs.getClass.getName}) lacks a class the shim " +
          s"needs ($e)", meant = true))
      case e: IllegalArgumentException =>
        Left(Registry.Delegation(s"the account key could not be read as base64 ($e)", meant = true))
    }
}
