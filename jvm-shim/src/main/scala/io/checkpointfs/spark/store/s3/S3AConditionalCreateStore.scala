package io.checkpointfs.spark
package store
package s3

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets
import java.time.Instant

import scala.language.existentials
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, FSDataOutputStream, Path}

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

  override def listUploads(key: String): Seq[(String, Option[Instant])] = S3A.listUploads(fs, key)

  override def abortUpload(key: String, uploadId: String): Unit = S3A.abortUpload(fs, key, uploadId)

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
}
