package io.checkpointfs.spark
package store
package s3

import java.net.URI
import java.util.Locale
import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileSystem
import org.apache.hadoop.fs.s3a.S3AFileSystem
import org.apache.hadoop.util.ShutdownHookManager
import org.slf4j.LoggerFactory

import io.checkpointfs.spark.direct.Options

/**
 * `s3://` checkpoints on a cluster whose `s3://` is not S3A (EMR's EMRFS): the shim writes them through an
 * S3AFileSystem of its own, made for the `s3` scheme and the path's bucket, configured by the `fs.s3a.*` settings
 * (per-bucket `fs.s3a.bucket.<bucket>.*` included) and holding the same paths (`s3://bucket/key`: the bucket and keys
 * the user's `s3://` file system serves). Reads, listings, probes and deletes of those checkpoint files go through it
 * too, so the manager sees exactly the objects it wrote. `checkpointfs.s3.own.s3a=false` turns this off: such roots
 * are delegated to Spark's own manager, as before.
 *
 * One instance per bucket and JVM, made on first use with the configuration of the first manager that needs it, and
 * closed at JVM shutdown (Hadoop's FileSystem cache cannot hold it: its key is the scheme and bucket, which the
 * user's `s3://` file system already holds).
 */
private[spark] object OwnS3A {
  private val log = LoggerFactory.getLogger(getClass)

  /** The setting that turns the own S3A off (protocol.json). */
  val Key: String = Options.OwnS3AKey

  /** S3A's class, the file system made for `s3://` here unless `fs.s3a.impl` names a subclass of it. */
  private val S3AImplKey = "fs.s3a.impl"

  private val made = new ConcurrentHashMap[String, FileSystem]()
  @volatile private var hooked = false

  /** Whether a root on `fs` is written through the own S3A: scheme `s3`, a file system that is not S3A, and on. */
  def applies(fs: FileSystem, options: Options): Boolean =
    options.ownS3A && Registry.schemeOf(fs) == "s3" && !S3A.isS3A(fs)

  /** Why a root on `fs` (scheme `s3`, not S3A) is delegated while the own S3A is off. */
  def offReason(fs: FileSystem): String = s"s3:// is served by ${fs.getClass.getName}, not S3A, and $Key=false " +
    s"(remove it, or set it to true, for direct writes through checkpointfs's own S3AFileSystem on s3://)"

  /** What the start line adds for a root written through the own S3A. */
  def startLine(servedBy: FileSystem): String = s"s3:// is served by ${servedBy.getClass.getName} (not S3A): " +
    s"checkpoint files are written, read and listed through checkpointfs's own S3AFileSystem for s3:// (fs.s3a.* " +
    s"settings; the same bucket and keys); $Key=false delegates to Spark's manager instead"

  /** The own S3A for the bucket of `servedBy` (a `s3://` file system that is not S3A), made with `conf` if new. */
  def forBucket(servedBy: FileSystem, conf: Configuration): FileSystem = {
    val uri = servedBy.getUri
    val bucket = new URI("s3", uri.getAuthority, "/", null, null)
    made.computeIfAbsent(bucket.toString.toLowerCase(Locale.ROOT), _ => open(bucket, conf))
  }

  private def open(bucket: URI, conf: Configuration): FileSystem = {
    val impl: Class[_] = conf.getClass(S3AImplKey, classOf[S3AFileSystem])
    val cls: Class[_] = if (classOf[S3AFileSystem].isAssignableFrom(impl)) impl else classOf[S3AFileSystem]
    val fs = cls.getDeclaredConstructor().newInstance().asInstanceOf[FileSystem]
    fs.initialize(bucket, new Configuration(conf))
    log.debug("{}: checkpointfs's own {} for s3://", bucket, cls.getName: Any)
    closeAtShutdown()
    fs
  }

  private def closeAtShutdown(): Unit = synchronized {
    if (!hooked) {
      hooked = true
      ShutdownHookManager.get().addShutdownHook(() => made.values().forEach { fs =>
        try fs.close()
        catch { case e: java.io.IOException => log.debug("closing checkpointfs's own S3A failed", e) }
      }, FileSystem.SHUTDOWN_HOOK_PRIORITY)
    }
  }
}
