package io.checkpointfs.spark
package store
package s3

import scala.language.existentials
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, FSDataOutputStream, Path}

/**
 * Put-if-absent through S3A's conditional create (HADOOP-19256; Hadoop 3.4.2 and later) on the checkpoint-write
 * instance `fs` ([[CheckpointWriteFileSystem]]): the large files of [[SmallPutStream]], as S3A's block upload sends
 * them (parallel parts, one conditional completion), with no existence or parent probe.
 */
private[spark] final class S3AConditionalCreate(fs: FileSystem) {
  import S3AConditionalCreate._

  /** S3A's stream for `path`, conditional unless `overwrite`, the write id in its user metadata. */
  def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream = {
    val builder = fs.createFile(path)
      .create()
      .overwrite(overwrite)
      .recursive()
      .must(CreatePerformanceOption, true)
      .opt(CreateHeaderPrefix + Protocol.WriteIdKey, writeId)
    if (!overwrite) builder.must(ConditionalCreateOption, true)
    builder.build()
  }

  /** Whether S3A's stream `out` started a multipart upload (its IOStatistics; true when they cannot be read). */
  def startedMultipart(out: FSDataOutputStream): Boolean =
    try {
      val counters = out.getIOStatistics.counters()
      def count(name: String): Long = Option(counters.get(name)).map(_.longValue).getOrElse(0L)
      count(MultipartInitiated) + count(MultipartInitiated + ".failures") > 0
    } catch { case NonFatal(_) => true }
}

private[spark] object S3AConditionalCreate {
  /** S3A create-file option prefix for object headers; user metadata becomes `x-amz-meta-<name>`. */
  val CreateHeaderPrefix = "fs.s3a.create.header."
  /** Hadoop's create-file option for put-if-absent (HADOOP-19256). */
  val ConditionalCreateOption = "fs.option.create.conditional.overwrite"
  /** S3A create-file option that skips the existence and parent probes. */
  val CreatePerformanceOption = "fs.s3a.create.performance"
  /** S3A's stream statistic counting CreateMultipartUpload calls (StoreStatisticNames). */
  private val MultipartInitiated = "object_multipart_initiated"

  /**
   * Whether `fs` is S3A with create headers (false for other file systems); refuses, saying what to fix, when S3A
   * has conditional create turned off.
   */
  def available(fs: FileSystem, path: Path): Boolean = {
    val createHeaders =
      try fs.hasPathCapability(path, "fs.s3a.create.header")
      catch { case NonFatal(_) => false }
    if (!createHeaders) false
    else if (!fs.hasPathCapability(path, ConditionalCreateOption)) {
      throw new CheckpointStoreConfigException(
        s"$path: the S3A file system has conditional create disabled, so checkpoint files could be overwritten " +
          s"by a concurrent query. Set ${DirectStore.ConditionalEnabledKey}=true (hadoop-aws 3.4.2 or later, " +
          s"against a store that supports If-None-Match writes), or add '${path.toUri.getScheme}' to " +
          "checkpointfs.rename.schemes to leave it to Spark's own manager.")
    } else true
  }
}
