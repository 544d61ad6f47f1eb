package io.checkpointfs.spark
package store

import java.io.FileNotFoundException
import java.util.Locale

import org.apache.hadoop.fs.{EtagSource, FileStatus, FileSystem, FSDataInputStream, Path}

/**
 * What a store does through the Hadoop file system of its scheme (S3A, Google's connector, ABFS), where it has no
 * request of its own that does better: probes, listings, reads and deletes as the file system sends them. Each
 * store's folder extends it and replaces what it does with fewer requests.
 *
 *  - [[exists]]: the file system's file probe (S3A: one HEAD) for a file, its `exists` (S3A: a HEAD, then one LIST)
 *    for anything else;
 *  - [[readListed]]: a file a listing showed, of at most [[FileSystemStore.MaxEagerReadBytes]], read whole with one
 *    GET that carries the listed status (`openFile().withFileStatus`: S3A skips its HEAD, and the GET is
 *    conditional on the listed ETag, `If-Match`), used only while S3A enforces the ETag (`fs.s3a.change.detection.mode`
 *    `server` or `client`, `fs.s3a.change.detection.source` `etag`: the defaults) and the status carries one;
 *  - [[open]]: with the length when known (`fs.option.openfile.length`: no HEAD with S3A's classic input stream on
 *    Hadoop 3.3.5 and later; Hadoop 3.5's default `analytics` stream and Hadoop 3.3.4 still send one), else `open()`.
 */
private[spark] abstract class FileSystemStore(val fs: FileSystem) extends DirectStore {
  import FileSystemStore._

  override def exists(path: Path, file: Boolean): Boolean = if (file) isFile(path) else fs.exists(path)

  /** The file system's file probe (deprecated on FileSystem in general; S3A's own is a HEAD and nothing else). */
  @scala.annotation.nowarn("cat=deprecation")
  private def isFile(p: Path): Boolean = fs.isFile(p)

  override def list(dir: Path): Array[FileStatus] =
    try fs.listStatus(dir)
    catch { case _: FileNotFoundException => Array.empty[FileStatus] }

  override def open(path: Path, length: Option[Long]): FSDataInputStream = length match {
    case Some(len) => awaitOpen(path, fs.openFile(path).opt(OpenFileLengthOption, len.toString).build())
    case None => fs.open(path)
  }

  override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] =
    if (listedStatusUsable(status)) Some(() => readWithStatus(status)) else None

  override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit =
    try fs.delete(path, true)
    catch { case _: FileNotFoundException => () }

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
}

private[spark] object FileSystemStore {
  /** Hadoop's openFile() option giving the file's length, so S3A opens it without a HEAD (Hadoop 3.3.5+). */
  val OpenFileLengthOption = "fs.option.openfile.length"
  /** S3A's change detection settings: a listed status is read with only while S3A enforces the listed ETag. */
  val ChangeDetectionModeKey = "fs.s3a.change.detection.mode"
  val ChangeDetectionSourceKey = "fs.s3a.change.detection.source"
  /** Listed files up to this size are read whole by `open()`, with one GET (their status known from the listing). */
  val MaxEagerReadBytes: Long = 1024 * 1024

  /** Exactly `length` bytes, then the end of the stream; None when the stream holds another length. */
  def readFully(in: java.io.InputStream, length: Int): Option[Array[Byte]] = {
    val bytes = new Array[Byte](length)
    var at = 0
    while (at < length) {
      val n = in.read(bytes, at, length - at)
      if (n < 0) return None
      at += n
    }
    if (in.read() >= 0) None else Some(bytes)
  }

  def awaitOpen(path: Path, future: java.util.concurrent.CompletableFuture[FSDataInputStream]): FSDataInputStream =
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
}
