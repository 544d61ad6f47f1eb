package io.checkpointfs.spark
package direct

import java.io.{FileNotFoundException, IOException, UncheckedIOException}
import java.time.Instant

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}
import org.slf4j.LoggerFactory

import io.checkpointfs.spark.compat.CancellableFSDataOutputStream

import io.checkpointfs.spark.store.{DirectStore, Failures, Retry, Upload}

/**
 * The stream of [[DirectWriteManager]]: the data goes to the final key and becomes visible on
 * `close()`, whole, or never.
 *
 * `close()`: S3A sends one PutObject (or completes a multipart upload), conditional unless overwriting. Every
 * failure propagates, sorted by the protocol's answer table ([[Failures.classify]]) and settled by its rule
 * ([[Settle]]): a definitive refusal or a 404 is rethrown as is; any other answer may follow an attempt S3A retried
 * and that landed (a 412 after a request whose answer was lost, throttling after such a request, a 500, a dropped
 * connection), so the object's write id is read back: ours means the write landed (success); another writer's means
 * the race was lost (`FileAlreadyExistsException` when not overwriting; so does a 412 when the key reads absent);
 * otherwise the outcome is a [[WriteOutcomeUnknownException]].
 *
 * `cancel()`: `Abortable.abort()`, which never makes data visible. Where the stream cannot abort (or
 * `checkpointfs.cancel.strategy=close-then-delete`), the stream is closed and the object deleted again, with bounded
 * retries; if that fails an [[AbortFailedException]] says partial data is visible.
 *
 * After `close()` or `cancel()`, both are no-ops (a `close()` that threw has finished too).
 *
 * Every byte goes through one [[MeasuredOutputStream]] (the create call's, which keeps a copy of the first `keep`
 * bytes) to `upload`; `published(length, bytes)` is called once `close()` has made the file visible, so the manager
 * learns its length and, for a small file, its bytes ([[Knowledge]]).
 *
 * Multipart uploads: when S3A or the SDK retried a CreateMultipartUpload whose answer was lost, the first upload is
 * left open and S3A never learns its id. It is invisible (never completed), but keeps its storage. After a stream
 * that started a multipart upload is closed or cancelled, the shim lists the uploads of its key and aborts those the
 * store dates from the stream's creation to the listing ([[isOrphan]]: each bound widened by the protocol's clock
 * slack; an upload the store gives no date for is left alone). S3A does not say whether it retried, so the shim lists
 * after every multipart stream, where Python lists only after a lost create answer it saw.
 */
private[spark] final class DirectWriteOutputStream private (
    store: DirectStore,
    path: Path,
    overwrite: Boolean,
    val writeId: String,
    options: Options,
    upload: Upload,
    data: MeasuredOutputStream,
    published: (Long, Option[Array[Byte]]) => Unit)
  extends CancellableFSDataOutputStream(data) {

  import DirectWriteOutputStream._

  @volatile private var terminated = false
  private val createdAt: Instant = Instant.now()
  private val call = data.call

  override def close(): Unit = synchronized {
    if (terminated) return
    terminated = true
    var failed = true
    try call.run {
      try {
        try upload.close()
        catch {
          case e: IOException => settleFailedClose(e)
          case e: UncheckedIOException => settleFailedClose(e.getCause)
        }
      } finally abortLeftoverUploads()
      published(data.written, data.kept)
      call.operation.bytesWritten.inc(data.written)
      failed = false
    } finally call.finish(failed)
  }

  /** This write's file, as WARN lines name it ([[Events]]). */
  private def context: String = Events.context(path, writeId)

  /**
   * Decide what a failed close means, by the protocol's settle rule ([[Settle]]); return normally only when this
   * write is known to be visible. S3A and the SDK retry out of the shim's sight, so any answer but a definitive
   * refusal or a 404 may follow an attempt that landed ([[Settle.hiddenAttemptsMaybeApplied]]): the write id is read
   * back then.
   */
  private def settleFailedClose(e: IOException): Unit = {
    if (Failures.isInterruption(e)) throw e
    val last = Failures.classify(e)
    val maybeApplied = Settle.hiddenAttemptsMaybeApplied(last)
    var readError: Option[Throwable] = None
    val owner =
      if (!Settle.needsOwner(last, overwrite, maybeApplied)) None
      else Some {
        try Settle.ownerOf(store.kept(path), writeId, upload.sentAtClose)
        catch {
          case NonFatal(error) =>
            readError = Some(error)
            Owner.Unreadable
        }
      }
    val outcome = Settle.settle(last, overwrite, maybeApplied, owner)
    if (owner.isDefined && (outcome == Outcome.Success || outcome == Outcome.Conflict)) {
      ShimMetrics.ambiguousSettled.inc()
      log.warn(s"ambiguous answer settled by the write id: $e (a '${last.name}' answer, after an attempt that may " +
        s"have landed); the object ${owner.get match {
          case Owner.Ours => "carries this write's id (or, where the store keeps none, its checksum and size)"
          case Owner.Other => "carries another writer's id"
          case Owner.Absent => "is absent"
          case Owner.Unreadable => "is unreadable"
        }}, so the create ${if (outcome == Outcome.Success) "succeeded" else "lost to another writer"} $context")
    }
    outcome match {
      case Outcome.Success => ()
      case Outcome.Conflict =>
        if (!overwrite) {
          ShimMetrics.conflicts.inc()
          log.warn(s"conflict: another writer wrote this file first (put-if-absent refused); this write published " +
            s"nothing and the query fails with FileAlreadyExistsException: are two queries sharing this checkpoint? " +
            s"$context")
        }
        throw alreadyExists(path, e)
      case Outcome.Error => throw e // nothing of this write was applied
      case Outcome.Unknown =>
        val why = readError.map(r => s"the object could not be read back ($r)")
          .getOrElse(s"the object does not show this write's id (${owner.getOrElse(Owner.Absent)})")
        val unknown = new WriteOutcomeUnknownException(path, s"close failed ($e; a '${last.name}' answer, which " +
          s"may follow a retried attempt that landed) and $why: the write may or may not become visible", e)
        readError.foreach(unknown.addSuppressed)
        ShimMetrics.unknownOutcomes.inc()
        log.warn(s"the outcome of this write is unknown (close failed: $e; $why): the query fails; on restart Spark " +
          s"redoes the batch, and `checkpointfs verify` shows whether the file is whole $context")
        throw unknown
    }
  }

  override def cancel(): Unit = synchronized {
    if (terminated) return
    terminated = true
    ShimMetrics.cancels.inc()
    try call.run(cancelNow())
    finally call.finish()
  }

  private def cancelNow(): Unit = {
    if (options.abortOnCancel && upload.hasCapability(Upload.AbortableCapability)) {
      val aborted =
        try {
          val result = upload.abort()
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
        if (upload.startedMultipart) ShimMetrics.abortedUploads.inc()
        try upload.close() // a no-op after abort; releases the stream
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
    if (!upload.startedMultipart) return
    try {
      val open = store.uploads(path)
      val until = Instant.now()
      for ((id, initiated) <- open if isOrphan(initiated, createdAt, until)) {
        try {
          Retry.withBackoff(options.deleteAttempts, 50L, retryable = e => !e.isInstanceOf[FileNotFoundException]) {
            store.abort(path, id)
          }
          ShimMetrics.orphanUploadsCleaned.inc()
          log.warn(s"aborted multipart upload $id, left open by a request S3A or the SDK sent again (its answer " +
            s"was lost): it was invisible and held storage; nothing to do $context")
        } catch { case _: FileNotFoundException => () } // gone already
      }
    } catch {
      case NonFatal(e) =>
        log.warn(s"$path: could not look for multipart uploads left open by retried requests; any such upload is " +
          "invisible but keeps storage until aborted (e.g. a lifecycle rule AbortIncompleteMultipartUpload)", e)
    }
  }

  /**
   * For streams that cannot abort: publish, then delete again while the object is still this write's. The object is
   * recognised as the settle rule recognises it ([[cancelDeletes]] over [[Settle.ownerOf]]): by its write id, or
   * where the store keeps none (a directory bucket without user metadata), by the checksum and size the close sent.
   */
  private def closeThenDelete(): Unit = {
    val closed =
      try {
        upload.close()
        true
      } catch {
        case NonFatal(closeError) =>
          // Did anything of ours become visible despite the failure?
          val published =
            try cancelDeletes(closed = false, store.kept(path), writeId, upload.sentAtClose)
            catch {
              case NonFatal(readError) =>
                throw new AbortFailedException(path, s"cancel closed the stream, the close failed ($closeError) and " +
                  s"the object could not be read back ($readError): partial data may be visible", closeError)
            }
          if (!published) return
          false
      }
    try {
      Retry.withBackoff(options.deleteAttempts, 100L, onRetry = (e, attempt) =>
        log.warn(s"$path: delete of the cancelled write failed (attempt $attempt of ${options.deleteAttempts}); " +
          "retrying", e)) {
        if (cancelDeletes(closed, store.kept(path), writeId, upload.sentAtClose)) { // not replaced or gone
          store.delete(path, None, file = false)
          log.info("{}: cancelled by close-then-delete", path)
        }
      }
    } catch {
      case NonFatal(e) =>
        throw new AbortFailedException(path, s"cancel closed the stream but could not delete the partial object " +
          s"after ${options.deleteAttempts} attempts ($e); partial data is visible", e)
    }
  }

  override def toString: String = s"DirectWriteOutputStream($path, overwrite=$overwrite, writeId=$writeId)"
}

private[spark] object DirectWriteOutputStream {
  private val log = LoggerFactory.getLogger(classOf[DirectWriteOutputStream])

  /**
   * The stream of one create call `call`: the bytes go through a [[MeasuredOutputStream]] that keeps the first
   * `keep` of them, to `upload`, the store's.
   */
  def apply(store: DirectStore, path: Path, overwrite: Boolean, writeId: String, options: Options, upload: Upload,
      call: ShimMetrics.Call, keep: Int)(published: (Long, Option[Array[Byte]]) => Unit): DirectWriteOutputStream =
    new DirectWriteOutputStream(store, path, overwrite, writeId, options, upload,
      new MeasuredOutputStream(upload, call, upload, keep), published)

  /**
   * Whether an open upload of the stream's key, dated `initiated` by the store (None: the store gave no date), is one
   * a retried create of this stream left: the store dates it from `since` (the stream's first create attempt) to
   * `until` (its end), each bound widened by `slackSeconds` for the difference between this host's clock and the
   * store's (protocol.json `orphan_uploads`; tests/protocol/golden_orphans.json, which Python's
   * `checkpointfs.direct.stream.is_orphan` follows too). An upload of unknown age is never taken for an orphan: it may
   * be another writer's.
   */
  def isOrphan(initiated: Option[Instant], since: Instant, until: Instant,
      slackSeconds: Long = Protocol.OrphanClockSlackSeconds): Boolean =
    initiated.exists { at =>
      !at.isBefore(since.minusSeconds(slackSeconds)) && !at.isAfter(until.plusSeconds(slackSeconds))
    }

  /**
   * Whether a close-then-delete cancel deletes the object read back after its close as `kept` (None: no object),
   * given this write's id and what the close sent (`sent`; None: not known, as for a multipart upload): when it is
   * this write's by the settle rule's owner table ([[Settle.ownerOf]]: its write id, or where the store keeps none,
   * its checksum and size). After a close that succeeded (`closed`), also when nothing tells the object apart
   * ([[Settle.toldApart]]: no write id kept and no checksum to compare): the close's success is the only evidence,
   * and leaving it would leave partial data visible. tests/protocol/golden_settle.json `cancel` holds the cases.
   */
  def cancelDeletes(closed: Boolean, kept: Option[Kept], writeId: String, sent: Option[Sent]): Boolean =
    Settle.ownerOf(kept, writeId, sent) match {
      case Owner.Ours => true
      case Owner.Other =>
        closed && kept.exists(k => !Settle.toldApart(k.writeId, k.checksum, sent.fold("")(_.checksum)))
      case _ => false
    }

  def alreadyExists(path: Path, cause: Throwable): FileAlreadyExistsException = {
    val e = new FileAlreadyExistsException(s"$path already exists (written by another writer); not overwritten")
    e.initCause(cause)
    e
  }
}
