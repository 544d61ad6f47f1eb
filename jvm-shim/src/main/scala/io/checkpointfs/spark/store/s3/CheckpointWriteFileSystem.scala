package io.checkpointfs.spark
package store
package s3

import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileSystem
import org.apache.hadoop.util.ShutdownHookManager
import org.slf4j.LoggerFactory

/**
 * The S3A file system the shim writes checkpoint files with, where S3A itself buffers and uploads them (Hadoop
 * 3.4.2+, `S3AConditionalCreate`). On Hadoop 3.3.4 and 3.4.1 the shim uploads them itself, with the part size
 * and parts in flight [[overrides]] gives (`S3Store.ownRequests`).
 *
 * S3A's block-upload settings are file-system wide, and their defaults suit large data files more than checkpoint
 * files: `fs.s3a.fast.upload.buffer=disk` makes a local temporary file for every block, so every ~250-byte offsets
 * file costs a file create, write, read and delete before its one PutObject; `fs.s3a.multipart.size=64M` makes
 * every in-memory block that size and uploads a 128 MiB file as two parts. Measured in one JVM on the embedded S3
 * (jvm-bench, docs/benchmarks.md), a small commit through S3A with `disk` took about twice the time of one SDK
 * PutObject without the latency model and 1.2 times with it; with `bytebuffer` 1.07 and 1.08 times.
 *
 * So checkpoint writes use their own S3A instance with these settings (`checkpointfs.s3a.*`, read from the Hadoop
 * configuration; an empty value or `inherit` keeps the file system's own; unset, the default below applies only
 * where the S3A setting is still Hadoop's default, so an S3A setting someone chose is kept):
 *  - `fs.s3a.fast.upload.buffer` = `checkpointfs.s3a.fast.upload.buffer`, default `bytebuffer` (off-heap buffers,
 *    pooled by the instance);
 *  - `fs.s3a.multipart.size` = `checkpointfs.s3a.multipart.size`, default the protocol's part size
 *    ([[Protocol.PartSizeBytes]], 16 MiB);
 *  - `fs.s3a.fast.upload.active.blocks` = `checkpointfs.s3a.fast.upload.active.blocks`, default the protocol's parts
 *    in flight ([[Protocol.PartsInFlight]], 4): parts of a large file upload in parallel, so a stream holds at most
 *    (4 + 1) x 16 MiB of buffers.
 * Other S3A settings (credentials, endpoint, retries) are the file system's. Data files Spark writes elsewhere keep
 * the session's S3A settings. When the wanted settings already hold, the file system itself is used. One instance
 * is made per file system instance the shim is given (so one per bucket and user from Hadoop's cache; one per
 * manager where the cache is disabled), from that file system's settings, and closed at shutdown.
 */
private[spark] object CheckpointWriteFileSystem {
  private val log = LoggerFactory.getLogger(getClass)

  /** A size as S3A's settings write it: `16M` for whole MiB (so a session that already says `16M` matches), else bytes. */
  private def sizeText(bytes: Long): String =
    if (bytes % (1024L * 1024) == 0) s"${bytes / (1024L * 1024)}M" else bytes.toString

  /** (checkpointfs key, S3A key it sets, default). */
  val Settings: Seq[(String, String, String)] = Seq(
    ("checkpointfs.s3a.fast.upload.buffer", "fs.s3a.fast.upload.buffer", "bytebuffer"),
    ("checkpointfs.s3a.multipart.size", "fs.s3a.multipart.size", sizeText(Protocol.PartSizeBytes)),
    ("checkpointfs.s3a.fast.upload.active.blocks", "fs.s3a.fast.upload.active.blocks",
      Protocol.PartsInFlight.toString))

  /**
   * The write instance of each file system the shim was given, keyed by that instance (weakly): a file system from
   * Hadoop's cache (one per scheme, bucket and user) gets one; an uncached one (`fs.s3a.impl.disable.cache`, its own
   * settings) gets its own, made from its settings.
   */
  private val instances = java.util.Collections.synchronizedMap(new java.util.WeakHashMap[FileSystem, FileSystem]())
  @volatile private var hooked = false

  /** Whether `key` was set by someone (Spark, the user, a site file) rather than left at Hadoop's default. */
  private def chosen(conf: Configuration, key: String): Boolean =
    Option(conf.getPropertySources(key)).exists(_.exists(_ != "core-default.xml"))

  /**
   * The S3A settings checkpoint writes need that `fs` does not have: `checkpointfs.s3a.*` when set, else the
   * default of [[Settings]] where the S3A setting is still Hadoop's default (an S3A setting someone chose is kept).
   */
  def overrides(fs: FileSystem, conf: Configuration): Seq[(String, String)] = Settings.flatMap {
    case (ours, s3a, default) =>
      val wanted = Option(conf.getTrimmed(ours)).getOrElse(if (chosen(conf, s3a)) "" else default)
      if (wanted.isEmpty || wanted.toLowerCase(Locale.ROOT) == "inherit" || fs.getConf.getTrimmed(s3a) == wanted) None
      else Some(s3a -> wanted)
  }

  /** The file system to write checkpoint files with: `fs`, or an instance of its class with [[Settings]]. */
  def apply(fs: FileSystem): FileSystem = {
    val wanted = overrides(fs, fs.getConf)
    if (wanted.isEmpty) return fs
    instances.computeIfAbsent(fs, _ => {
      val conf = new Configuration(fs.getConf)
      wanted.foreach { case (k, v) => conf.set(k, v) }
      val own = FileSystem.newInstance(fs.getUri, conf)
      closeAtShutdown()
      log.info("{}: checkpoint files are written with {}", fs.getUri, wanted.map { case (k, v) => s"$k=$v" }
        .mkString(", "): Any)
      own
    })
  }

  private def closeAtShutdown(): Unit = synchronized {
    if (!hooked) {
      hooked = true
      // The priority of Hadoop's own FileSystem cache hook: closed with the file systems Spark uses.
      ShutdownHookManager.get().addShutdownHook(() => {
        val open = instances.synchronized(new java.util.ArrayList[FileSystem](instances.values()))
        open.forEach { fs =>
          try fs.close()
          catch { case NonFatal(e) => log.debug("closing a checkpoint-write file system failed", e) }
        }
      }, FileSystem.SHUTDOWN_HOOK_PRIORITY)
    }
  }
}
