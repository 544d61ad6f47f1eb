package io.checkpointfs.spark

import java.io.FileNotFoundException
import java.lang.reflect.InvocationTargetException
import java.nio.charset.StandardCharsets
import java.time.Instant

import scala.language.existentials
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, FileSystem, FSDataOutputStream, Path}

/**
 * How one Spark line writes a checkpoint file straight to its final key with put-if-absent. Each jar group's
 * `compat.LineStore` picks the implementation its Hadoop allows: S3A's own conditional create (Hadoop 3.4.2+), or
 * [[OwnConditionalWriteStore]] sending the conditional requests through S3A's S3 client (Hadoop 3.3.4, 3.4.1).
 */
private[spark] trait DirectStore {

  /** A stream whose `close()` publishes the whole file (conditional unless `overwrite`); Hadoop `Abortable`. */
  def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream

  /** The write id stamped on the object at `path`: None when absent, Some("") when it has none. */
  def readWriteId(path: Path): Option[String]

  /** Whether `out` (from [[create]]) started a multipart upload, so a retried request may have left one open. */
  def startedMultipart(out: FSDataOutputStream): Boolean

  /** The open multipart uploads of exactly `key`: (upload id, initiation time when known). */
  def listUploads(key: String): Seq[(String, Option[Instant])]

  /** Abort one multipart upload; FileNotFoundException when it is gone. */
  def abortUpload(key: String, uploadId: String): Unit

  /** Local files up to this many bytes can be sent with [[putFile]] (0: none). */
  def putFileLimit: Long

  /** One PutObject of the local `file` at `path`, read from the file, replacing what is there, `writeId` in its
   * user metadata. */
  def putFile(path: Path, file: java.io.File, writeId: String): Unit

  /** The shim's own requests on this store's bucket, through S3A's S3 client (the store check sends them). */
  def requests: ConditionalUploader

  /** The store checks of a put-if-absent: (before the first write, before the first one past [[putFileLimit]]). */
  def storeChecks: (StoreCheck.Kind, StoreCheck.Kind) = (StoreCheck.PutObject, StoreCheck.Multipart)

  /** Whether a file is at `path`, with the store's own one-request probe; None: use the file system's. */
  def probeFile(path: Path): Option[Boolean] = None

  /**
   * Whether a file or a directory is at `path` (the full probe: a file request, then a listing when no file is
   * there), with the store's own requests; None: use the file system's `exists`.
   */
  def probePath(path: Path): Option[Boolean] = None

  /** The files and directories directly below `dir` with the store's own listing; None: use the file system's. */
  def listDirectory(dir: Path): Option[Array[FileStatus]] = None

  /** Whether [[readListed]] reads the file a listing showed as `status` (with one request). */
  def readsListed(status: FileStatus): Boolean = false

  /** The whole file a listing showed as `status`, as it was then; None when it holds another length; an
   * IOException when it changed or went away since. */
  def readListed(status: FileStatus): Option[Array[Byte]] = None

  /**
   * Delete the file at `path` (no error when absent) with the store's own request, `listed` its status from a
   * listing when known; false: use the file system.
   */
  def deleteFile(path: Path, listed: Option[FileStatus]): Boolean = false
}

private[spark] object DirectStore {
  /** S3A's setting that turns conditional creates on or off; honoured on every line. */
  val ConditionalEnabledKey = "fs.s3a.create.conditional.enabled"

  /** The object key of `path` on its bucket. */
  def keyOf(path: Path): String = path.toUri.getPath.stripPrefix("/")

  def parentOf(key: String): String = key.lastIndexOf('/') match {
    case -1 => ""
    case i => key.substring(0, i)
  }

  private val S3AClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"

  /** Whether `fs` is S3A or a subclass (such as [[CheckpointS3AFileSystem]]), without loading S3A's classes. */
  def isS3A(fs: FileSystem): Boolean =
    Iterator.iterate[Class[_]](fs.getClass)(_.getSuperclass).takeWhile(_ != null).exists(_.getName == S3AClass)
}

/** Put-if-absent through S3A's conditional create (HADOOP-19256; Hadoop 3.4.2 and later). */
private[spark] final class S3AConditionalCreateStore(fs: FileSystem) extends DirectStore {
  import S3AConditionalCreateStore._

  override def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream = {
    val builder = fs.createFile(path)
      .create()
      .overwrite(overwrite)
      .recursive()
      .must(CreatePerformanceOption, true)
      .opt(CreateHeaderPrefix + Protocol.WriteIdKey, writeId)
    if (!overwrite) builder.must(ConditionalCreateOption, true)
    builder.build()
  }

  override def readWriteId(path: Path): Option[String] =
    try Option(fs.getXAttr(path, WriteIdXAttr)).map(new String(_, StandardCharsets.UTF_8)).orElse(Some(""))
    catch { case _: FileNotFoundException => None }

  override def startedMultipart(out: FSDataOutputStream): Boolean =
    try {
      val counters = out.getIOStatistics.counters()
      def count(name: String): Long = Option(counters.get(name)).map(_.longValue).getOrElse(0L)
      count(MultipartInitiated) + count(MultipartInitiated + ".failures") > 0
    } catch { case NonFatal(_) => true }

  override def listUploads(key: String): Seq[(String, Option[Instant])] = {
    val uploads = unwrapped(fs.getClass.getMethod("listMultipartUploads", classOf[String])
      .invoke(fs, DirectStore.parentOf(key))).asInstanceOf[java.util.List[AnyRef]]
    val out = Seq.newBuilder[(String, Option[Instant])]
    uploads.forEach { upload =>
      if (invoke[String](upload, "key") == key) {
        out += ((invoke[String](upload, "uploadId"), Option(invoke[Instant](upload, "initiated"))))
      }
    }
    out.result()
  }

  override def abortUpload(key: String, uploadId: String): Unit =
    unwrapped(fs.getClass.getMethod("abortMultipartUpload", classOf[String], classOf[String])
      .invoke(fs, key, uploadId))

  override def putFileLimit: Long = 0

  override def putFile(path: Path, file: java.io.File, writeId: String): Unit =
    throw new UnsupportedOperationException(s"$path: S3A's conditional create uploads streams, not files")

  /** Used only inside [[SmallPutStore]], whose own requests the store check sends. */
  override def requests: ConditionalUploader =
    throw new UnsupportedOperationException("S3A's conditional create store sends no requests of its own")
}

private[spark] object S3AConditionalCreateStore {
  /** S3A create-file option prefix for object headers; user metadata becomes `x-amz-meta-<name>`. */
  val CreateHeaderPrefix = "fs.s3a.create.header."
  /** S3A's XAttr name for the write id's user-metadata entry ([[Protocol.WriteIdKey]]). */
  val WriteIdXAttr: String = "header." + Protocol.WriteIdKey
  /** Hadoop's create-file option for put-if-absent (HADOOP-19256). */
  val ConditionalCreateOption = "fs.option.create.conditional.overwrite"
  /** S3A create-file option that skips the existence and parent probes. */
  val CreatePerformanceOption = "fs.s3a.create.performance"
  /** S3A's stream statistic counting CreateMultipartUpload calls (StoreStatisticNames). */
  private val MultipartInitiated = "object_multipart_initiated"

  /**
   * The store for `fs` when it is S3A with create headers (None for other file systems); refuses, saying what to
   * fix, when S3A has conditional create turned off.
   */
  def open(fs: FileSystem, path: Path): Option[DirectStore] = {
    val createHeaders =
      try fs.hasPathCapability(path, "fs.s3a.create.header")
      catch { case NonFatal(_) => false }
    if (!createHeaders) None
    else if (!fs.hasPathCapability(path, ConditionalCreateOption)) {
      throw new CheckpointStoreConfigException(
        s"$path: the S3A file system has conditional create disabled, so checkpoint files could be overwritten " +
          s"by a concurrent query. Set ${DirectStore.ConditionalEnabledKey}=true (hadoop-aws 3.4.2 or later, " +
          s"against a store that supports If-None-Match writes), or add '${path.toUri.getScheme}' to " +
          "checkpointfs.rename.schemes to leave it to Spark's own manager.")
    } else Some(new S3AConditionalCreateStore(fs))
  }

  private def invoke[T](target: AnyRef, method: String): T =
    target.getClass.getMethod(method).invoke(target).asInstanceOf[T]

  private def unwrapped(call: => AnyRef): AnyRef =
    try call
    catch { case e: InvocationTargetException if e.getCause != null => throw e.getCause }
}
