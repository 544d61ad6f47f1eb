package io.checkpointfs.spark
package direct

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, FileSystem, FSDataInputStream, Path, PathFilter}
import org.slf4j.LoggerFactory

import io.checkpointfs.spark.compat.{CancellableFSDataOutputStream, ManagerBase}
import io.checkpointfs.spark.store.DirectStore

/**
 * Spark's `CheckpointFileManager` contract kept on an object store without rename, the JVM twin of checkpointfs's
 * Python `DirectWriteManager`: every checkpoint file is written straight to its final key by `store`, published whole
 * by the stream's `close()` (put-if-absent for `createAtomic(path, overwriteIfPossible = false)`: a lost race
 * surfaces from `close()` as Hadoop's `FileAlreadyExistsException`), with a unique write id in its metadata that
 * settles an ambiguous answer ([[DirectWriteOutputStream]]). `cancel()` publishes nothing. Nothing is probed before a
 * write, and [[Knowledge]] (what this manager published, listed and saw) spares requests on reads and probes
 * ([[Probes]]). [[io.checkpointfs.spark.DirectWriteCheckpointFileManager]] makes it for a checkpoint root whose store
 * the shim writes directly (`store`, from [[io.checkpointfs.spark.store.Registry]]) and forwards every call to it.
 *
 * `fs` is the root's file system: it qualifies paths and names the bucket requests are counted under.
 */
private[spark] final class DirectWriteManager(path: Path, fs: FileSystem, store: DirectStore, options: Options)
  extends ManagerBase {

  import DirectWriteManager._

  /** The directory this manager was made for: `exists()` probes it, and what lies above it, in full. */
  private val root: Path = fs.makeQualified(path)
  private val known = new Knowledge()

  /** The bucket of the file system (its URI's host part), which requests name. */
  private val bucket: String = fs.getUri.getHost

  CheckpointRoots.register(root, this)

  /** A unique id for one write, stamped on the object it makes. */
  private def newWriteId(): String = java.util.UUID.randomUUID().toString.replace("-", "")

  override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream = {
    val writeId = newWriteId()
    val qualified = fs.makeQualified(path)
    val putIfAbsent = !overwriteIfPossible
    val call = (if (overwriteIfPossible) ShimMetrics.createOverwrite else ShimMetrics.createIfAbsent).start()
    try call.run {
      call.track(bucket, DirectStore.keyOf(qualified))
      known.forgetExactly(qualified)
      val upload = store.create(path, overwriteIfPossible, writeId)
      if (log.isDebugEnabled) log.debug(s"$path: writing directly (overwrite=$overwriteIfPossible, write id $writeId)")
      DirectWriteOutputStream(store, path, overwriteIfPossible, writeId, options, upload, call,
        known.bytesToKeep(qualified, putIfAbsent)) { (length, bytes) =>
        known.published(root, qualified, length, bytes, putIfAbsent)
      }
    } catch {
      case e: Throwable =>
        call.finish(failed = true)
        throw e
    }
  }

  /**
   * One GetObject at most for a file this manager wrote or listed, with no HEAD before it ([[Knowledge]]):
   *
   *  - a small file this manager published (put-if-absent, not deleted since) is read from memory, with no request:
   *    S3 never changes such an object in place;
   *  - a file a listing showed is read whole here with one request as listed, where the store can
   *    ([[DirectStore.readListed]]: S3A's GET conditional on the listed ETag, GCS's GET of the listed generation).
   *    Should that read fail in any way (the object changed or went away since the listing, an error), the status is
   *    forgotten and the file is opened afresh (below), so the caller sees what it would have seen without the
   *    listing: the current content, or the store's FileNotFoundException from `open()`;
   *  - a larger file this manager published is opened with its length ([[DirectStore.open]]);
   *  - anything else is the store's `open()`: S3A's is a HEAD, then the GET.
   */
  override def open(path: Path): FSDataInputStream = {
    val qualified = fs.makeQualified(path)
    val call = ShimMetrics.open.start()
    try call.run {
      call.track(bucket, DirectStore.keyOf(qualified))
      val inMemory = known.content(qualified).orElse {
        known.status(qualified).filter(_.getPath == qualified).flatMap { s =>
          store.readListed(s).flatMap(read => readListed(s)(read()))
        }
      }
      val in = inMemory match {
        case Some(bytes) => new FSDataInputStream(new BytesInputStream(bytes))
        case None => store.open(qualified, known.length(qualified))
      }
      MeasuredInputStream.wrap(in, call)
    } catch {
      case e: Throwable =>
        call.finish(failed = true)
        throw e
    }
  }

  /** The whole file a listing showed, as `read` reads it (one request, as listed); None when that fails. */
  private def readListed(status: FileStatus)(read: => Option[Array[Byte]]): Option[Array[Byte]] = {
    val path = status.getPath
    try {
      val bytes = read
      if (bytes.isEmpty) known.forgetStatus(path)
      bytes
    } catch {
      case e: java.io.InterruptedIOException => throw e
      case NonFatal(e) =>
        if (Thread.currentThread().isInterrupted) throw e
        log.debug(s"$path: the read with its listed status failed ($e); opening it afresh")
        known.forgetStatus(path)
        None
    }
  }

  /**
   * The children of `path` the store lists (one LIST a page), with the directories this manager made in it
   * ([[mkdirs]]) that the store does not show, as a file system would list them.
   */
  override def list(path: Path, filter: PathFilter): Array[FileStatus] = ShimMetrics.list.call { call =>
    val qualified = fs.makeQualified(path)
    call.track(bucket, DirectStore.keyOf(qualified).stripSuffix("/") + "/")
    val stored = store.list(qualified)
    val shown = stored.iterator.map(s => fs.makeQualified(s.getPath)).toSet
    val made = known.madeChildren(qualified).filterNot(shown).map(p => new FileStatus(0L, true, 1, 0L, 0L, p))
    val statuses = (stored ++ made).filter(s => filter.accept(s.getPath))
    known.listed(root, statuses.toSeq, p => fs.makeQualified(p))
    statuses.sortBy(_.getPath.toString)
  }

  /**
   * On an object store there are no directories to make, so no request is sent: the directory (and each of its
   * parents) is remembered as made ([[Knowledge]]), so that `exists()` answers it present and `list()` of its parent
   * shows it, as on a file system, until this manager deletes it or a parent of it.
   */
  override def mkdirs(path: Path): Unit = known.made(fs.makeQualified(path))

  /**
   * A file or a directory is at `path`, with the fewest requests ([[Probes]] has the rule and Spark's call sites):
   * no request for a file this manager published or a directory it made (or a parent of one) and has not deleted,
   * nor (mode `log-order`) for the next batch
   * of a log it writes; the store's file probe (S3A: one HEAD) for a path below the root named as Spark names only
   * files and not a directory this manager has seen; otherwise the store's full probe (S3A: a HEAD and, when that
   * finds no file, one LIST: the root, what lies above it, directories). Each answer is logged at DEBUG by the
   * `io.checkpointfs.spark.Probes` logger ([[Probes.record]]).
   */
  override def exists(path: Path): Boolean = ShimMetrics.exists.call { _ =>
    val qualified = fs.makeQualified(path)
    val probe = Probes.existsPlan(known, root, qualified, options.probeMode, options.storeCheck)
    val answer = probe match {
      case Probes.KnownProbe => true
      case Probes.NextBatchProbe => false
      case Probes.FileProbe => store.exists(qualified, file = true)
      case _ => store.exists(qualified, file = false)
    }
    if (Probes.recording) Probes.record(root, qualified, probe, answer)
    answer
  }

  /**
   * Delete the file (or directory) at `path`: a name Spark gives only to files is deleted with the store's own
   * request where it has one (one DELETE on gs://, without the connector's status probe and parent-directory
   * marker); anything else as the file system deletes it.
   */
  override def delete(path: Path): Unit = ShimMetrics.delete.call { _ =>
    val qualified = fs.makeQualified(path)
    val listed = known.status(qualified).filter(_.getPath == qualified)
    val file = Probes.isFileName(qualified.getName) && !known.isDirectory(qualified)
    known.forget(qualified)
    store.delete(qualified, listed, file)
  }

  override def isLocal: Boolean = false

  override def createCheckpointDirectory(): Path = root

  override protected def closeManager(): Unit = CheckpointRoots.unregister(root, this)

  /**
   * Upload the local regular `file` to the qualified `path` below this manager's root, replacing what is there,
   * as one request read from the file, with no probe ([[CheckpointS3AFileSystem]]'s `copyFromLocalFile`). False,
   * with nothing sent, when the file is larger than one request of its store. A failed request raises the store's
   * error for the path (nothing of it is visible).
   */
  private[spark] def putLocalFile(file: java.io.File, path: Path): Boolean = {
    known.forgetExactly(path)
    val writeId = newWriteId()
    val sent = store.put(path, file, writeId)
    if (sent && log.isDebugEnabled) log.debug(s"$path: uploaded ${file.length} bytes from $file (write id $writeId)")
    sent
  }

  override def toString: String = s"DirectWriteManager($path, $store)"
}

private[spark] object DirectWriteManager {
  private val log = LoggerFactory.getLogger(classOf[DirectWriteManager])
}
