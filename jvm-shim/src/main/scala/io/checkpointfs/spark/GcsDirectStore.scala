package io.checkpointfs.spark

import java.io.{FileInputStream, FileNotFoundException, IOException}
import java.nio.ByteBuffer
import java.nio.channels.WritableByteChannel
import java.time.Instant
import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, FSDataOutputStream, Path}
import org.apache.hadoop.util.ShutdownHookManager
import org.slf4j.LoggerFactory

/**
 * Put-if-absent on `gs://` through Google's Cloud Storage connector ([[GcsConnector]]), with no existence or
 * directory probe: the object is created with `ifGenerationMatch=0` (a lost race is GCS's 412, which
 * [[DirectWriteOutputStream]] turns into Hadoop's `FileAlreadyExistsException`), the write id in its metadata
 * (settled by [[readWriteId]] after an ambiguous answer).
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
private[spark] final class GcsDirectStore(val uploader: GcsUploader, threshold: Int, fsUri: java.net.URI,
    blockSize: Long) extends DirectStore {

  override def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream = {
    val key = DirectStore.keyOf(path)
    new FSDataOutputStream(new SpillingUploadStream(path, threshold,
      (bytes, len) => uploader.put(key, bytes, len, !overwrite, writeId),
      (file, len) => uploader.putLarge(key, file, len, !overwrite, writeId)), null)
  }

  override def readWriteId(path: Path): Option[String] = uploader.writeId(DirectStore.keyOf(path))

  override def startedMultipart(out: FSDataOutputStream): Boolean = false

  override def listUploads(key: String): Seq[(String, Option[Instant])] = Nil

  override def abortUpload(key: String, uploadId: String): Unit = ()

  override def putFileLimit: Long = threshold.toLong

  override def putFile(path: Path, file: java.io.File, writeId: String): Unit =
    uploader.putFile(DirectStore.keyOf(path), file, writeId)

  override def requests: ConditionalUploader = uploader

  override def storeChecks: (StoreCheck.Kind, StoreCheck.Kind) = (StoreCheck.GcsInsert, StoreCheck.GcsResumable)

  override def probeFile(path: Path): Option[Boolean] = Some(uploader.writeId(DirectStore.keyOf(path)).isDefined)

  override def listDirectory(dir: Path): Option[Array[FileStatus]] = {
    val prefix = DirectStore.keyOf(dir).stripSuffix("/") + "/"
    val base = fsUri.toString.stripSuffix("/") + "/"
    Some(uploader.list(prefix).map { case (name, isDir, size, mtime) =>
      new FileStatus(if (isDir) 0L else size, isDir, 1, if (isDir) 0L else blockSize, mtime,
        new Path(base + name.stripSuffix("/")))
    }.toArray)
  }

  override def deleteFile(path: Path): Boolean = {
    try uploader.delete(DirectStore.keyOf(path))
    catch { case _: FileNotFoundException => () }
    true
  }
}

/**
 * The requests of [[GcsDirectStore]], through the connector instances `small` (direct upload: one request a file)
 * and `large` (resumable uploads in chunks of the part size). Each is counted as one request of the running
 * [[ShimMetrics.Call]] (a resumable upload as its initiation and its chunks); the connector's own retries
 * (`fs.gs.http.max.retry`) happen out of sight and are not counted.
 */
private[spark] final class GcsUploader(small: GcsConnector, large: GcsConnector, bucket: String, chunkSize: Long)
  extends ConditionalUploader {
  import GcsUploader._

  private def count(key: String, what: String, n: Long = 1): Unit = {
    val call = ShimMetrics.callFor(bucket, key)
    if (call != null) (0L until n).foreach(_ => call.requestSent(s"$what $key", retry = false))
  }

  /** Send with `ifGenerationMatch=0`; when overwriting and the name exists (412), conditionally on its generation. */
  private def send(key: String, ifAbsent: Boolean, requests: Long)(create: Long => Unit): Unit = {
    def attempt(generation: Long): Unit = {
      count(key, "insert", requests)
      create(generation)
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
  def list(prefix: String): Seq[(String, Boolean, Long, Long)] = {
    count(prefix, "list")
    small.list(bucket, prefix)
  }

  override def delete(key: String): Unit = {
    count(key, "delete")
    small.delete(bucket, key)
  }

  override def startMultipart(key: String, writeId: String): String = unsupported
  override def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String =
    unsupported
  override def complete(key: String, uploadId: String, etags: Seq[String], ifNoneMatch: Boolean): Unit = unsupported
  override def abort(key: String, uploadId: String): Unit = unsupported
  override def uploads(key: String): Seq[(String, Option[Instant])] = Nil

  private def unsupported: Nothing =
    throw new UnsupportedOperationException("GCS has no S3 multipart uploads: large files are resumable uploads")
}

private[spark] object GcsUploader {
  /** Overwrite attempts when the name keeps being replaced between reading its generation and writing. */
  val OverwriteAttempts = 3

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
  def open(fs: FileSystem): Either[String, GcsDirectStore] = {
    if (Protocol.GcsWriteIdEncoding.toLowerCase(Locale.ROOT) != "base64") {
      return Left(s"protocol.json stores the GCS write id as '${Protocol.GcsWriteIdEncoding}', which this shim " +
        "cannot write (Google's connector base64-encodes metadata)")
    }
    val threshold = Protocol.PartSizeBytes.toInt
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
      Right(new GcsDirectStore(uploader, threshold, fs.getUri, fs.getConf.getLongBytes("fs.gs.block.size", 64L << 20)))
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
