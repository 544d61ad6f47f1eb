package io.checkpointfs.spark

import java.io.File

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.fs.s3a.S3AFileSystem
import org.slf4j.LoggerFactory
import io.checkpointfs.spark.direct.CheckpointRoots

/**
 * S3A with one difference, for the files Spark uploads into a checkpoint without its checkpoint manager: RocksDB
 * state stores copy each new SST file with `FileSystem.copyFromLocalFile`, which S3A sends as a HEAD and one or two
 * LISTs on the destination (is it a directory?) before the PutObject.
 *
 * Here `copyFromLocalFile(delSrc, overwrite = true, src, dst)` of one local regular file, to a destination below a
 * directory that a checkpointfs [[DirectWriteCheckpointFileManager]] in this JVM writes directly
 * ([[CheckpointRoots]]: the state store partition's directory), is one PutObject read from the file, replacing what
 * is at `dst`, with no probe: the layout below a checkpoint directory is Spark's, and it never puts a directory
 * where it uploads a file. A file larger than one PutObject of the shim (the checkpoint part size), any other
 * destination, `overwrite = false`, a directory or a non-local source: S3A's own `copyFromLocalFile`, unchanged.
 * Everything else is S3A's.
 *
 * Select it with `spark.hadoop.fs.s3a.impl=io.checkpointfs.spark.CheckpointS3AFileSystem`
 * (`checkpointfs.spark.configure()` sets it with the shim).
 */
class CheckpointS3AFileSystem extends S3AFileSystem {

  override def copyFromLocalFile(delSrc: Boolean, overwrite: Boolean, src: Path, dst: Path): Unit = {
    val uploaded = overwrite && (CheckpointS3AFileSystem.localFile(src) match {
      case Some(file) =>
        val target = makeQualified(dst)
        CheckpointRoots.managerFor(target).exists(_.putLocalFile(file, target))
      case None => false
    })
    if (!uploaded) super.copyFromLocalFile(delSrc, overwrite, src, dst)
    else if (delSrc) FileSystem.getLocal(getConf).delete(src, false)
  }
}

private[spark] object CheckpointS3AFileSystem {
  private val log = LoggerFactory.getLogger(classOf[CheckpointS3AFileSystem])

  /** The local regular file `src` names (a `file:` URI or an absolute path without a scheme), if it is one. */
  def localFile(src: Path): Option[File] = {
    val uri = src.toUri
    val scheme = Option(uri.getScheme).getOrElse("file")
    if (scheme != "file" || !src.isUriPathAbsolute) None
    else {
      val file = new File(uri.getPath)
      if (file.isFile) Some(file)
      else {
        log.debug("{}: not a local regular file; S3A copies it", src)
        None
      }
    }
  }
}
