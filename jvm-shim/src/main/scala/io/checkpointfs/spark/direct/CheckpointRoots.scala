package io.checkpointfs.spark
package direct

import java.lang.ref.WeakReference
import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.fs.Path

/**
 * The directories that checkpointfs managers write directly in this JVM (each manager's root, as Spark made it:
 * a metadata log's directory, a state store partition's directory), so that [[CheckpointS3AFileSystem]] knows where
 * a local file may be uploaded the way the manager writes files. Managers are held weakly: one that Spark dropped
 * (or closed) no longer counts. At most [[CheckpointRoots.MaxRoots]] roots are held; past that a new root is not
 * registered, and uploads below it go the way S3A sends them (correct, with S3A's probes).
 */
private[spark] object CheckpointRoots {
  /** An executor holds one manager per state store partition it serves; far fewer than this. */
  val MaxRoots = 65536

  private val roots = new ConcurrentHashMap[String, WeakReference[DirectWriteManager]]()

  private def key(dir: Path): String = dir.toUri.toString.stripSuffix("/")

  /** `manager` writes directly below the qualified directory `root`. */
  def register(root: Path, manager: DirectWriteManager): Unit = {
    if (roots.size >= MaxRoots) roots.values().removeIf(_.get == null)
    if (roots.size < MaxRoots) roots.put(key(root), new WeakReference(manager))
  }

  /** `manager` no longer serves `root` (closed); another manager registered for it since stays. */
  def unregister(root: Path, manager: DirectWriteManager): Unit =
    roots.computeIfPresent(key(root), (_, ref) => if (ref.get eq manager) null else ref)

  /** The manager of the nearest registered directory above the qualified `path`, if any. */
  def managerFor(path: Path): Option[DirectWriteManager] = {
    var dir = path.getParent
    while (dir != null) {
      val ref = roots.get(key(dir))
      val manager = if (ref == null) null else ref.get
      if (manager != null) return Some(manager)
      dir = dir.getParent
    }
    None
  }

  /** Directory names Spark gives only inside a checkpoint (or, `_spark_metadata`, a file sink's output). */
  private val CheckpointParts = Set("offsets", "commits", "sources", "state", "_spark_metadata")

  /**
   * The checkpoint directory (or file sink output directory) that the qualified `dir` belongs to: the parent of the
   * nearest directory above or at `dir` named as Spark names a checkpoint's parts (`ckpt/state/0/3` -> `ckpt`,
   * `out/_spark_metadata` -> `out`); `dir` itself when none is (the checkpoint root).
   */
  def checkpointRootOf(dir: Path): Path = {
    var at = dir
    while (at != null && at.getParent != null) {
      if (CheckpointParts.contains(at.getName)) return at.getParent
      at = at.getParent
    }
    dir
  }

  /** Checkpoint roots whose start line this JVM has logged (bounded; past the bound, lines are logged again). */
  private val announced = ConcurrentHashMap.newKeySet[String]()
  private val MaxAnnounced = 4096

  /** Run `log` (the start lines of a checkpoint root) once per root in this JVM. */
  def announce(root: Path)(log: => Unit): Unit = {
    if (announced.size >= MaxAnnounced) announced.clear()
    if (announced.add(key(root))) log
  }

  /** How many roots are registered (for tests). */
  private[spark] def size: Int = roots.size
}
