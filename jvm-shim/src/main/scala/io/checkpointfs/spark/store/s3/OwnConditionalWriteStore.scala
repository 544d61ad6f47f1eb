package io.checkpointfs.spark
package store
package s3

import java.time.Instant
import java.util.Locale

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, FSDataOutputStream, Path}

/**
 * Put-if-absent where S3A has no conditional create (Hadoop 3.3.4 and 3.4.1): the shim sends the PutObject, or the
 * multipart upload, itself with `If-None-Match: *` on PutObject and CompleteMultipartUpload. A file up to
 * `partSize` bytes is buffered in memory and costs one PutObject; a larger one becomes a multipart upload with up to
 * `maxActiveParts` parts in flight at once ([[ConditionalUploadStream]]). [[OwnConditionalWriteStore.forCheckpoints]]
 * takes both from the checkpoint-write settings, as S3A's block upload does on Spark 4.1+.
 */
private[spark] final class OwnConditionalWriteStore(protected val uploader: ConditionalUploader, partSize: Int,
    maxActiveParts: Int) extends UploaderStore {

  override def create(path: Path, overwrite: Boolean, writeId: String): FSDataOutputStream =
    new FSDataOutputStream(new ConditionalUploadStream(path, DirectStore.keyOf(path), overwrite, writeId, partSize,
      maxActiveParts, uploader), null)

  override def startedMultipart(out: FSDataOutputStream): Boolean = out.getWrappedStream match {
    case s: ConditionalUploadStream => s.startedMultipart
    case _ => true
  }

  override def putFileLimit: Long = partSize.toLong
}

/** A [[DirectStore]] whose reads of the write id, upload housekeeping and file puts go through the shim's own
 * requests (`uploader`); the stores differ in how they write streams. */
private[spark] trait UploaderStore extends DirectStore {
  protected def uploader: ConditionalUploader

  override def requests: ConditionalUploader = uploader

  override def readWriteId(path: Path): Option[String] = uploader.writeId(DirectStore.keyOf(path))

  override def listUploads(key: String): Seq[(String, Option[Instant])] = uploader.uploads(key)

  override def abortUpload(key: String, uploadId: String): Unit = uploader.abort(key, uploadId)

  override def putFile(path: Path, file: java.io.File, writeId: String): Unit =
    uploader.putFile(DirectStore.keyOf(path), file, writeId)
}

private[spark] object OwnConditionalWriteStore {
  val PartSizeKey = "fs.s3a.multipart.size"
  /** S3's smallest part (S3A raises a smaller fs.s3a.multipart.size to it too). */
  val MinPartSize: Long = 5L * 1024 * 1024
  /** The part size when `fs.s3a.multipart.size` is not set at all: the protocol's ([[Protocol.PartSizeBytes]]). */
  val DefaultPartSize: Long = Protocol.PartSizeBytes

  val ActiveBlocksKey = "fs.s3a.fast.upload.active.blocks"

  /** The part size S3A would use: `fs.s3a.multipart.size`, at least 5 MiB, at most 2 GiB - 1 (an array). */
  def partSize(conf: Configuration): Int =
    math.min(math.max(conf.getLongBytes(PartSizeKey, DefaultPartSize), MinPartSize), Int.MaxValue - 8).toInt

  /**
   * The store for checkpoint writes through `uploader` on the S3A file system `fs`: the part size and the parts in
   * flight that S3A would use with the checkpoint-write settings of [[CheckpointWriteFileSystem]] (by default
   * the protocol's part size and parts in flight, where the S3A keys are still Hadoop's defaults;
   * `checkpointfs.s3a.*` override them).
   */
  def forCheckpoints(uploader: ConditionalUploader, fs: FileSystem): OwnConditionalWriteStore = {
    val conf = new Configuration(fs.getConf)
    CheckpointWriteFileSystem.overrides(fs, fs.getConf).foreach { case (k, v) => conf.set(k, v) }
    new OwnConditionalWriteStore(uploader, partSize(conf), math.max(1, conf.getInt(ActiveBlocksKey, Protocol.PartsInFlight)))
  }

  /**
   * Refuse at start when put-if-absent was turned off: the shim never writes a checkpoint file unconditionally.
   */
  def requireConditionalWrites(fs: FileSystem, path: Path, how: String): Unit = {
    val enabled = fs.getConf.getTrimmed(DirectStore.ConditionalEnabledKey, "true").toLowerCase(Locale.ROOT)
    if (enabled != "true") {
      throw new CheckpointStoreConfigException(
        s"$path: ${DirectStore.ConditionalEnabledKey}=$enabled, so checkpoint files could be overwritten by a " +
          s"concurrent query; the shim writes them only with put-if-absent ($how). Set " +
          s"${DirectStore.ConditionalEnabledKey}=true, against a store that supports If-None-Match writes, or add " +
          s"'${path.toUri.getScheme}' to checkpointfs.rename.schemes to leave it to Spark's own manager.")
    }
  }
}
