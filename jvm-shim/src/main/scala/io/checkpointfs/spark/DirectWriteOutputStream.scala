package io.checkpointfs.spark

import java.io.{FileNotFoundException, IOException, UncheckedIOException}
import java.time.Instant

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileAlreadyExistsException, FileSystem, FSDataOutputStream, Path}
import org.slf4j.LoggerFactory

import io.checkpointfs.spark.compat.CancellableFSDataOutputStream

/**
 * The stream of [[DirectWriteCheckpointFileManager]] on S3A: the data goes to the final key and becomes visible on
 * `close()`, whole, or never.
 *
 * `close()`: S3A sends one PutObject (or completes a multipart upload), conditional unless overwriting. Every
 * failure propagates. A failure whose outcome is ambiguous (a 412 after S3A or the SDK retried a request whose
 * answer was lost, a 500, a dropped connection) is settled by reading the object's write id: ours means the write
 * landed (success); another writer's means the race was lost (`FileAlreadyExistsException` when not overwriting);
 * no object after a request that may have been applied is a [[WriteOutcomeUnknownException]].
 *
 * `cancel()`: `Abortable.abort()`, which never makes data visible. Where the stream cannot abort (or
 * `checkpointfs.cancel.strategy=close-then-delete`), the stream is closed and the object deleted again, with bounded
 * retries; if that fails an [[AbortFailedException]] says partial data is visible.
 *
 * After `close()` or `cancel()`, both are no-ops (a `close()` that threw has finished too).
 *
 * Every byte goes through `kept` (which wraps `out`); `published` is called once `close()` has made the file visible,
 * so the manager learns its length and, for a small file, its bytes ([[Knowledge]]).
 *
 * Multipart uploads: when S3A or the SDK retried a CreateMultipartUpload whose answer was lost, the first upload is
 * left open and S3A never learns its id. It is invisible (never completed), but keeps its storage. After a stream
 * that started a multipart upload is closed or cancelled, the shim lists the uploads under the parent prefix and
 * aborts those of this key started since the stream was created (minus a clock-skew margin).
 */
private[spark] final class DirectWriteOutputStream(
    store: DirectStore,
    fs: FileSystem,
    path: Path,
    overwrite: Boolean,
    val writeId: String,
    settings: DirectWriteCheckpointFileManager.Settings,
    out: FSDataOutputStream,
    kept: KeepingOutputStream,
    published: KeepingOutputStream => Unit)
  extends CancellableFSDataOutputStream(kept) {

  import DirectWriteOutputStream._

  @volatile private var terminated = false
  private val createdAt: Instant = Instant.now()

  override def close(): Unit = synchronized {
    if (terminated) return
    terminated = true
    try {
      try out.close()
      catch {
        case e: IOException => settleFailedClose(e)
        case e: UncheckedIOException => settleFailedClose(e.getCause)
      }
    } finally abortLeftoverUploads()
    published(kept)
  }

  /** Decide what a failed close means; return normally only when this write is known to be visible. */
  private def settleFailedClose(e: IOException): Unit = {
    if (Failures.isDefinitiveRefusal(e) || Failures.isInterruption(e)) throw e
    val precondition = Failures.isPreconditionFailed(e)
    val refused = Failures.isThrottled(e) || Failures.isConflict(e)
    val owner =
      try store.readWriteId(path)
      catch {
        case NonFatal(readError) =>
          val what = if (precondition) "lost the race or collided with its own earlier attempt"
          else "may have been applied"
          val unknown = new WriteOutcomeUnknownException(path,
            s"the write failed ($e), it $what, and the object could not be read back to tell which ($readError)", e)
          unknown.addSuppressed(readError)
          throw unknown
      }
    owner match {
      case Some(id) if id == writeId =>
        log.info("{}: an earlier attempt of this write landed (write id {}); the commit succeeded", path, writeId: Any)
      case Some(_) if !overwrite =>
        throw alreadyExists(path, e)
      case None if precondition && !overwrite =>
        // Another writer held the key when our conditional write was checked, and has gone since.
        throw alreadyExists(path, e)
      case _ if refused => throw e // the store refused the request: nothing of this write was applied
      case _ =>
        throw new WriteOutcomeUnknownException(path,
          s"close failed ($e) and the object does not show this write's id: the write may or may not become " +
            "visible", e)
    }
  }

  override def cancel(): Unit = synchronized {
    if (terminated) return
    terminated = true
    if (settings.abortOnCancel && out.hasCapability(DirectWriteCheckpointFileManager.AbortableCapability)) {
      val aborted =
        try {
          val result = out.abort()
          if (result.anyCleanupException() != null) {
            // An upload that is never completed is never visible: correctness holds, only storage is leaked.
            log.warn(s"$path: abort left an uncompleted upload behind; it is invisible but keeps its parts until " +
              "aborted or expired by a lifecycle rule", result.anyCleanupException())
          }
          true
        } catch {
          case _: UnsupportedOperationException => false
        }
      if (aborted) {
        try out.close() // a no-op after abort; releases the stream
        catch { case NonFatal(e) => log.debug(s"$path: close after abort failed", e) }
        abortLeftoverUploads()
        return
      }
    }
    try closeThenDelete()
    finally abortLeftoverUploads()
  }

  /**
   * Abort the multipart uploads of this key that a retried CreateMultipartUpload left open (see the class doc).
   * Best effort: a failure is logged, never raised (such uploads are invisible; only storage is at stake).
   */
  private def abortLeftoverUploads(): Unit = {
    if (!store.startedMultipart(out)) return
    val key = DirectStore.keyOf(path)
    val since = createdAt.minusSeconds(ClockSkewSeconds)
    try {
      for ((id, initiated) <- store.listUploads(key) if initiated.forall(!_.isBefore(since))) {
        try {
          Retry.withBackoff(settings.deleteAttempts, 50L, retryable = e => !e.isInstanceOf[FileNotFoundException]) {
            store.abortUpload(key, id)
          }
          log.info("{}: aborted multipart upload {} left open by a retried request", path, id: Any)
        } catch { case _: FileNotFoundException => () } // gone already
      }
    } catch {
      case NonFatal(e) =>
        log.warn(s"$path: could not look for multipart uploads left open by retried requests; any such upload is " +
          "invisible but keeps storage until aborted (e.g. a lifecycle rule AbortIncompleteMultipartUpload)", e)
    }
  }

  /** For streams that cannot abort: publish, then delete again while the object is still ours. */
  private def closeThenDelete(): Unit = {
    val published =
      try {
        out.close()
        true
      } catch {
        case NonFatal(closeError) =>
          // Did anything of ours become visible despite the failure?
          try store.readWriteId(path).contains(writeId)
          catch {
            case NonFatal(readError) =>
              throw new AbortFailedException(path, s"cancel closed the stream, the close failed ($closeError) and " +
                s"the object could not be read back ($readError): partial data may be visible", closeError)
          }
      }
    if (!published) return
    try {
      Retry.withBackoff(settings.deleteAttempts, 100L, onRetry = (e, attempt) =>
        log.warn(s"$path: delete of the cancelled write failed (attempt $attempt of ${settings.deleteAttempts}); " +
          "retrying", e)) {
        if (store.readWriteId(path).contains(writeId)) { // not replaced or gone
          fs.delete(path, false)
          log.info("{}: cancelled by close-then-delete", path)
        }
      }
    } catch {
      case NonFatal(e) =>
        throw new AbortFailedException(path, s"cancel closed the stream but could not delete the partial object " +
          s"after ${settings.deleteAttempts} attempts ($e); partial data is visible", e)
    }
  }

  override def toString: String = s"DirectWriteOutputStream($path, overwrite=$overwrite, writeId=$writeId)"
}

private object DirectWriteOutputStream {
  private val log = LoggerFactory.getLogger(classOf[DirectWriteOutputStream])

  /** Margin for the difference between this host's clock and the store's when matching upload start times. */
  private val ClockSkewSeconds = 300L

  def alreadyExists(path: Path, cause: Throwable): FileAlreadyExistsException = {
    val e = new FileAlreadyExistsException(s"$path already exists (written by another writer); not overwritten")
    e.initCause(cause)
    e
  }
}
