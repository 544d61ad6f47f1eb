package io.checkpointfs.spark
package direct

import org.apache.hadoop.fs.{FileStatus, Path}

/**
 * What one [[DirectWriteCheckpointFileManager]] knows of the files below its root, so that it sends fewer requests
 * (docs/contract.md, "exists: the probe rule"). Bounded; forgetting only costs a request. It never makes a file
 * appear: it remembers only files this manager published itself, and directories and lengths it saw.
 *
 *  - published: files this manager published with put-if-absent (`overwriteIfPossible = false`) and has not
 *    deleted or overwritten since. S3 never changes such an object in place, so `exists()` answers true without a
 *    request, and the bytes of a small metadata-log batch file ([[Probes.isLogBatchName]], at most
 *    [[Protocol.MaxContentBytes]], [[Protocol.ContentBudgetBytes]] in all) are served by `open()` from memory:
 *    exactly what the store holds under the same assumption (one writer per checkpoint, which Spark requires).
 *    Knowledge decides which files keep their bytes ([[bytesToKeep]], [[published]]), as Python's does.
 *  - lengths: of files it published with put-if-absent (the same assumption as above), so `open()` of one too large
 *    to keep gives S3A the length.
 *  - statuses: of files a listing showed (S3A's statuses carry the object's ETag), so `open()` of such a file sends
 *    one GET, conditional on that ETag (a changed or deleted object fails it, and `open()` then falls back to S3A's
 *    own open).
 *  - directories: parents of files it wrote or listed, and directories a listing showed; `exists()` probes them
 *    as directories.
 *  - made: directories this manager made (`mkdirs`, which sends no request) and their parents, as a file system
 *    makes them. `exists()` answers them present without a request, and `list()` of a parent shows them beside
 *    what the store holds: on an object store an empty directory is nothing, so without this a directory Spark
 *    has just made would read as absent until a file is written in it.
 *
 * `forget(path)` (on delete) drops what lies at or below `path`; a create forgets the file alone.
 *
 * Each map keeps its entries in the order they were last written, never reordered by a read, and drops the oldest
 * beyond its bound: the choice Python's `checkpointfs.direct.probes.Knowledge` makes too (a read-refreshed LRU would
 * keep a file Spark reads back, the file source's batch, longer than the batches after it, for no saved request:
 * Spark reads a batch once). tests/protocol/golden_knowledge.json pins the answers for both; lengths and listed
 * statuses are the shim's own (S3A's open takes them; boto3's GET needs neither).
 */
private[spark] final class Knowledge(capacity: Int = Protocol.KnowledgeCapacity,
    budget: Long = Protocol.ContentBudgetBytes) {
  import Knowledge._

  /**
   * At most `limit` entries, in the order they were last put (not last read: a query never changes what is kept,
   * as in Python's `Knowledge`; tests/protocol/golden_knowledge.json); the oldest is dropped first. [[put]] moves a
   * key put again to the newest place.
   */
  private class Bounded[V](limit: Int) extends java.util.LinkedHashMap[Path, V](16, 0.75f, false) {
    override def put(key: Path, value: V): V = {
      val before = remove(key)
      super.put(key, value)
      before
    }

    override def removeEldestEntry(eldest: java.util.Map.Entry[Path, V]): Boolean = {
      val evict = size() > limit
      if (evict) evicted(eldest.getValue)
      evict
    }
    protected def evicted(value: V): Unit = ()
  }

  /** Published files; the value is the file's bytes, or NoContent. */
  private val published = new Bounded[Array[Byte]](capacity) {
    override protected def evicted(value: Array[Byte]): Unit = contentBytes -= value.length
  }
  private val lengths = new Bounded[java.lang.Long](capacity)
  private val listedStatuses = new Bounded[FileStatus](capacity)
  private val directories = new Bounded[java.lang.Boolean](capacity)
  private val madeDirectories = new Bounded[java.lang.Boolean](capacity)
  private var contentBytes = 0L

  /**
   * How many of the first bytes of a file about to be written at `path` to copy while it is written, so that
   * [[published]] can keep them: [[Protocol.MaxContentBytes]] for a metadata-log batch file written with
   * put-if-absent, 0 for anything else.
   */
  def bytesToKeep(path: Path, putIfAbsent: Boolean): Int =
    if (putIfAbsent && Probes.isLogBatchName(path.getName)) Protocol.MaxContentBytes else 0

  /**
   * `path` (below `root`) was published by this manager: `length` bytes, `content` when the writer copied them all.
   * The bytes are kept only for a metadata-log batch file published with put-if-absent, of at most
   * [[Protocol.MaxContentBytes]].
   */
  def published(root: Path, path: Path, length: Long, content: Option[Array[Byte]], putIfAbsent: Boolean): Unit =
    synchronized {
      forgetExactly(path)
      noteParents(root, path)
      if (putIfAbsent) {
        lengths.put(path, length)
        val bytes = content.filter(b => b.length <= bytesToKeep(path, putIfAbsent) && b.length == length)
          .getOrElse(NoContent)
        published.put(path, bytes)
        contentBytes += bytes.length
        trimContent()
      }
    }

  /** What a listing of a directory below or at `root` showed. */
  def listed(root: Path, statuses: Seq[FileStatus], qualify: Path => Path): Unit = synchronized {
    statuses.foreach { s =>
      val p = qualify(s.getPath)
      if (s.isDirectory) directories.put(p, java.lang.Boolean.TRUE)
      else listedStatuses.put(p, s)
      noteParents(root, p)
    }
  }

  /**
   * `path` was made by this manager (`mkdirs`): it and each of its parents below the bucket are made directories,
   * the path itself the newest.
   */
  def made(path: Path): Unit = synchronized {
    val lineage = Iterator.iterate(path)(_.getParent).takeWhile(p => p != null && p.getParent != null).toList
    lineage.reverse.foreach(p => madeDirectories.put(p, java.lang.Boolean.TRUE))
  }

  /** Whether `path` is a directory this manager made, or a parent of one, and has not deleted since. */
  def isMade(path: Path): Boolean = synchronized(madeDirectories.containsKey(path))

  /** The directories this manager made directly in `directory` (a listing of it shows them), sorted. */
  def madeChildren(directory: Path): Seq[Path] = synchronized {
    val children = Seq.newBuilder[Path]
    madeDirectories.keySet.forEach(p => if (p.getParent == directory) children += p)
    children.result().sortBy(_.toString)
  }

  def isPublished(path: Path): Boolean = synchronized(published.containsKey(path))

  /**
   * Whether `path` is the batch after one this manager published beside it with put-if-absent and has not deleted
   * ([[Probes.previousBatches]]).
   */
  def isNextBatch(path: Path): Boolean = synchronized {
    Probes.previousBatches(path.getName).exists(b => published.containsKey(new Path(path.getParent, b)))
  }

  /** The bytes of a published file when kept. */
  def content(path: Path): Option[Array[Byte]] = synchronized {
    Option(published.get(path)).filter(_ ne NoContent)
  }

  /** The length of a file this manager published with put-if-absent. */
  def length(path: Path): Option[Long] = synchronized(Option(lengths.get(path)).map(_.longValue))

  /** The status a listing gave for `path`. */
  def status(path: Path): Option[FileStatus] = synchronized(Option(listedStatuses.get(path)))

  def isDirectory(path: Path): Boolean =
    synchronized(directories.containsKey(path) || madeDirectories.containsKey(path))

  /** Drop everything known at or below `path` (a delete, a create). */
  def forget(path: Path): Unit = synchronized {
    val prefix = path.toString.stripSuffix("/") + "/"
    def under(k: Path): Boolean = k == path || k.toString.startsWith(prefix)
    val it = published.entrySet.iterator
    while (it.hasNext) {
      val e = it.next()
      if (under(e.getKey)) { contentBytes -= e.getValue.length; it.remove() }
    }
    lengths.keySet.removeIf(k => under(k))
    listedStatuses.keySet.removeIf(k => under(k))
    directories.keySet.removeIf(k => under(k))
    madeDirectories.keySet.removeIf(k => under(k))
  }

  /** Forget what a listing said of `path` (a read with it failed). */
  def forgetStatus(path: Path): Unit = synchronized(listedStatuses.remove(path))

  /** Forget one file before it is (re)written: no walk of the maps. */
  def forgetExactly(path: Path): Unit = synchronized {
    Option(published.remove(path)).foreach(b => contentBytes -= b.length)
    lengths.remove(path)
    listedStatuses.remove(path)
  }

  private def noteParents(root: Path, path: Path): Unit = {
    var parent = path.getParent
    while (parent != null && parent != root && Probes.isBelow(root, parent)) {
      directories.put(parent, java.lang.Boolean.TRUE)
      parent = parent.getParent
    }
  }

  /** Keep the kept bytes within the budget: drop the oldest files' bytes (they stay known as published). */
  private def trimContent(): Unit = {
    if (contentBytes <= budget) return
    val it = published.entrySet.iterator
    while (contentBytes > budget && it.hasNext) {
      val e = it.next()
      if (e.getValue ne NoContent) {
        contentBytes -= e.getValue.length
        e.setValue(NoContent)
      }
    }
  }

  /** Bytes kept in memory now. */
  private[spark] def keptBytes: Long = synchronized(contentBytes)
}

private[spark] object Knowledge {
  private val NoContent = new Array[Byte](0)
}
