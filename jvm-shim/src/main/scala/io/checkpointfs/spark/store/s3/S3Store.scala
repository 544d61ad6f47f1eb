package io.checkpointfs.spark
package store
package s3

import java.time.Instant
import java.util.Locale

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * S3 through S3A (`s3a://`, and `s3://`, `s3n://` served by S3A): how a file is uploaded is the line's
 * (`newUpload`: [[ConditionalUploadStream]] on Hadoop 3.3.4 and 3.4.1, [[SmallPutStream]] on 3.4.2+); the write id,
 * the housekeeping of multipart uploads and local files go through the shim's own requests (`uploader`, S3A's S3
 * client); probes, listings, reads and deletes through S3A itself (`fs`, [[FileSystemStore]]).
 */
private[spark] final class S3Store(fs: FileSystem, uploader: MultipartUploader, val describe: String,
    putLimit: Long, newUpload: (Path, Boolean, String) => Upload) extends FileSystemStore(fs) {

  /** S3A's endpoint (`fs.s3a.endpoint`, "" for AWS's default) and the bucket. */
  override val identity: StoreIdentity = StoreIdentity(fs.getConf.getTrimmed("fs.s3a.endpoint", ""), fs.getUri.getHost)

  override def create(path: Path, overwrite: Boolean, writeId: String): Upload = newUpload(path, overwrite, writeId)

  override def put(path: Path, file: java.io.File, writeId: String): Boolean =
    file.length <= putLimit && {
      uploader.putFile(DirectStore.keyOf(path), file, writeId)
      true
    }

  override def uploads(path: Path): Seq[(String, Option[Instant])] = uploader.uploads(DirectStore.keyOf(path))

  override def abort(path: Path, uploadId: String): Unit = uploader.abort(DirectStore.keyOf(path), uploadId)

  override def head(path: Path): Option[String] = uploader.writeId(DirectStore.keyOf(path))

  override def kept(path: Path): Option[Kept] = uploader.kept(DirectStore.keyOf(path))

  override def toString: String = s"S3Store(${fs.getUri})"
}

private[spark] object S3Store {
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
   * The store of the S3A file system `fs` where S3A has no conditional create (Hadoop 3.3.4 and 3.4.1): every
   * request the shim's own through `uploader` ([[ConditionalUploadStream]]), with the part size and the parts in
   * flight that S3A would use with the checkpoint-write settings of [[CheckpointWriteFileSystem]] (by default the
   * protocol's part size and parts in flight, where the S3A keys are still Hadoop's defaults; `checkpointfs.s3a.*`
   * override them). The store check sends PutObject and a multipart completion.
   */
  def ownRequests(fs: FileSystem, uploader: MultipartUploader, describe: String): Registry.Opened = {
    val conf = new Configuration(fs.getConf)
    CheckpointWriteFileSystem.overrides(fs, fs.getConf).foreach { case (k, v) => conf.set(k, v) }
    val size = partSize(conf)
    val maxActiveParts = math.max(1, conf.getInt(ActiveBlocksKey, Protocol.PartsInFlight))
    val store = new S3Store(fs, uploader, describe, size.toLong, (path, overwrite, writeId) =>
      new ConditionalUploadStream(path, DirectStore.keyOf(path), overwrite, writeId, size, maxActiveParts, uploader))
    Registry.Opened(store, StoreCheck.Plan(StoreCheck.PutObject, StoreCheck.Multipart, uploader, size.toLong))
  }

  /**
   * The store of the S3A file system `fs` on Hadoop 3.4.2+ ([[SmallPutStream]]): a file up to the checkpoint part
   * size of the checkpoint-write instance `write` is one PutObject the shim sends through `uploader`, a larger one
   * goes through S3A's conditional create on `write`.
   */
  def smallPuts(fs: FileSystem, write: FileSystem, uploader: MultipartUploader, describe: String): Registry.Opened = {
    val threshold = partSize(write.getConf)
    val large = new S3AConditionalCreate(write)
    val store = new S3Store(fs, uploader, describe, threshold.toLong, (path, overwrite, writeId) =>
      new SmallPutStream(path, DirectStore.keyOf(path), overwrite, writeId, threshold, uploader, large))
    Registry.Opened(store, StoreCheck.Plan(StoreCheck.PutObject, StoreCheck.Multipart, uploader, threshold.toLong))
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
