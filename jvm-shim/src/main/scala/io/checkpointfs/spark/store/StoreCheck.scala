package io.checkpointfs.spark
package store

import java.io.IOException
import java.nio.charset.StandardCharsets
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory


/**
 * The store check (protocol.json `store_check`, docs/contract.md): before a JVM's first put-if-absent write to a
 * bucket, and again before its first put-if-absent multipart completion there, the shim makes sure the store refuses
 * a second put-if-absent of the same key, with canary objects named [[Protocol.StoreCheckCanaryPrefix]] + a random
 * id in the directory of the file about to be written, deleted after:
 *
 *  - PutObject: the canary's key is headed while it does not exist, which must answer 404 (without s3:ListBucket
 *    S3 answers 403, which a writer cannot tell from a refused read: a probe or the read-back of a lost answer would
 *    fail mid-query, so the check fails at start naming it: [[missingHeadVerdict]]); the canary is created
 *    (`If-None-Match: *`, settled by its write id like any create), read back (HeadObject with checksum mode: does
 *    the store keep user metadata, or only checksums, to settle a lost answer by? [[keeps]], said in the start
 *    line), then created again the same way, which must be refused (412 or 409), then deleted: 5 requests;
 *  - CompleteMultipartUpload: the canary is created with one PutObject, a one-part upload of the same key is
 *    completed with `If-None-Match: *`, which must be refused, then aborted, the key's uploads listed (the SDK may
 *    have retried the CreateMultipartUpload out of sight, leaving one open) and the canary deleted: 7 requests.
 *
 * A second write that succeeds (or whose write id shows it replaced the first) is the verdict "unsafe": an
 * [[UnsafeStoreException]] naming the endpoint, the bucket, the answer and `checkpointfs doctor`, remembered for the
 * JVM's life. A request of the check that fails, after the SDK's retries, with anything but that refusal gives no
 * verdict: the write fails with that error (the store is unavailable, or refuses the canary itself), and the next
 * put-if-absent checks again. Throttling, 500s, resets and lost answers are retried by the SDK; a lost answer to the
 * first create is settled by the write id, as every create is ([[Settle]]).
 */
private[spark] object StoreCheck {
  private val log = LoggerFactory.getLogger(getClass)

  /** What the check covers: a single PutObject, or a multipart completion. */
  sealed abstract class Kind(val request: String, val requests: Int, val condition: String = "If-None-Match: *",
      val scheme: String = "s3", val accepted: String = "")
  case object PutObject extends Kind("PutObject", 5)
  case object Multipart extends Kind("CompleteMultipartUpload", 7)
  /** GCS: a single-request (multipart) upload, then the same again, then the delete (of the canary's generation,
   * known from the first answer): 3 requests. */
  case object GcsInsert extends Kind("upload", 3, "ifGenerationMatch=0", "gs")
  /** GCS: a resumable upload over the canary, refused when its one chunk finalizes it: 1 + 2 + 1 requests. */
  case object GcsResumable extends Kind("resumable upload", 4, "ifGenerationMatch=0", "gs",
    "the resumable upload was finalized over the existing object")
  /** Azure Blob Storage: a Put Blob, the same again (refused 409), the canary deleted: 3 requests. */
  case object AzurePutBlob extends Kind("Put Blob", 3, scheme = "abfs")
  /** Azure: a Put Block and a Put Block List over the canary (refused 409), then its delete: 1 + 2 + 1 requests. */
  case object AzureBlockList extends Kind("Put Block List", 4, scheme = "abfs",
    accepted = "Put Block List committed over the existing blob")

  /** Stores (endpoint and bucket, per kind) found safe in this JVM. */
  private val passed = ConcurrentHashMap.newKeySet[String]()
  /** Stores found unsafe in this JVM, with the message of their verdict. */
  private val refused = new ConcurrentHashMap[String, String]()
  private val locks = new ConcurrentHashMap[String, AnyRef]()

  /**
   * What the store check needs of a store ([[CheckedStore]]): the check before its first put-if-absent (`first`),
   * the one before its first put-if-absent past `limit` bytes, where its large upload starts (`large`), and the
   * store's own requests that send the canaries.
   */
  final case class Plan(first: Kind, large: Kind, requests: ConditionalUploader, limit: Long)

  /**
   * Make sure the store refuses a second put-if-absent of `kind` before the first one of this JVM to `store`; the
   * canary goes in the directory `dirKey` (an object key prefix, "" for the bucket's root). Returns at once once the
   * store passed. `where` is the checkpoint file about to be written, for messages.
   */
  def ensure(kind: Kind, store: StoreIdentity, requests: ConditionalUploader, dirKey: String, where: String): Unit = {
    val id = s"${kind.request}|${store.endpoint}|${store.bucket}"
    if (passed.contains(id)) return
    locks.computeIfAbsent(id, _ => new AnyRef).synchronized {
      if (passed.contains(id)) return
      Option(refused.get(id)).foreach(message => throw new UnsafeStoreException(s"$where: $message"))
      ShimMetrics.storeChecks.inc()
      val (verdict, keptSaid) =
        try kind match {
          case PutObject =>
            val (answer, kept) = checkPut(requests, canaryKey(dirKey), readBack = true)
            (answer, "; it " + keeps(kept))
          case GcsInsert | AzurePutBlob => (checkPut(requests, canaryKey(dirKey), readBack = false)._1, "")
          case Multipart => requests match {
            case multipart: MultipartUploader => (checkMultipart(multipart, canaryKey(dirKey)), "")
            case other => throw new IllegalStateException(s"a ${kind.request} check needs S3's multipart requests, " +
              s"not $other")
          }
          case GcsResumable | AzureBlockList => requests match {
            case large: LargeUploadRequests => (checkLarge(large, canaryKey(dirKey), kind.accepted), "")
            case other => throw new IllegalStateException(s"a ${kind.request} check needs the store's large " +
              s"upload, not $other")
          }
        } catch {
          case refused: RefusedAtStart =>
            ShimMetrics.storeCheckUnavailable.inc()
            throw refused.said(where, store, kind)
          case e: Throwable =>
            ShimMetrics.storeCheckUnavailable.inc()
            throw e
        }
      verdict match {
        case None =>
          ShimMetrics.storeCheckSafe.inc()
          passed.add(id)
          log.info("{}: {} refuses a second put-if-absent {} of the same key; trusted ({} requests){}",
            where, store.shown, kind.request, kind.requests.toString, keptSaid)
        case Some(answer) =>
          val message = s"the store (${store.shown}) accepted a second put-if-absent ${kind.request} " +
            s"(${kind.condition}) of the same key ($answer): it ignores conditional writes, so two writers of one " +
            "checkpoint would both succeed and one would silently replace the other's files. Nothing was written. " +
            s"Run `checkpointfs doctor ${kind.scheme}://${store.bucket}/<checkpoint>` with this endpoint for details; use a store " +
            s"that supports conditional writes, or set ${Protocol.StoreCheckKey}=false only if no two writers can " +
            "ever share a checkpoint"
          ShimMetrics.storeCheckUnsafe.inc()
          refused.put(id, message)
          throw new UnsafeStoreException(s"$where: $message")
      }
    }
  }

  /**
   * A request of the check refused by the store (`request`, a kind of protocol.json `permissions`) that fails the
   * check at start: `what` was refused, `why` a writer cannot go on without it. [[said]] words it for the file being
   * written as Python's `check.delete_refused` and `check.missing_refused` do.
   */
  private final class RefusedAtStart(request: String, what: String, why: String, cause: Throwable)
    extends IOException(s"store check: $what", cause) {
    def said(where: String, store: StoreIdentity, kind: Kind): IOException = {
      val grant = Permissions.grant(s"${kind.scheme}://${store.bucket}", request, store.bucket)
      new CredentialsRefusedException(where, s"$what (${store.shown}: the store refused the request, check " +
        s"credentials and permissions$grant): $why", getCause)
    }
  }

  /** The canary's delete refused: a writer needs deletes, since Spark purges old log batches and state files. */
  private def deleteRefused(key: String, cause: Throwable): RefusedAtStart =
    new RefusedAtStart("delete", s"the store check could not delete its canary $key", "Spark deletes old " +
      "checkpoint files (log batches past minBatchesToRetain, old state files), which would fail mid-query, so the " +
      "query stops before writing", cause)

  /** The head of the canary's key, before creating it, refused: S3 without s3:ListBucket. */
  private def missingRefused(key: String, cause: Throwable): RefusedAtStart =
    new RefusedAtStart("head", s"the store check's head of its canary key $key, before creating it, was refused",
      "S3 answers a missing key 403 without s3:ListBucket, which cannot be told from a refused read, so a probe or " +
        "the read-back of a lost answer would fail mid-query; the query stops before writing", cause)

  /**
   * What the store check makes of the failed head of its canary's key before creating it, by the answer's class:
   * "absent" (404, as it must), "refused" (403: fail at start, [[missingRefused]]) or "no-verdict" (anything else,
   * as any request of the check). Python's twin: `check.missing_head_verdict` (golden_permissions.json
   * `missing_head`).
   */
  def missingHeadVerdict(answer: AnswerClass): String =
    if (answer.error == "PathNotFoundError") "absent"
    else if (answer.error == NamedRefusals.AccessDenied) "refused"
    else "no-verdict"

  /** Head `key`, which does not exist yet: absent goes on, a refusal is [[missingRefused]], else no verdict. */
  private def headMissing(requests: ConditionalUploader, key: String): Unit =
    try requests.kept(key)
    catch { // a missing key is None, not an exception; anything else but a refusal is no verdict
      case e: IOException if !Failures.isInterruption(e) && missingHeadVerdict(Failures.classify(e)) == "refused" =>
        throw missingRefused(key, e)
    }

  private def isAccessDenied(e: Throwable): Boolean =
    NonFatal(e) && Failures.classify(e).error == NamedRefusals.AccessDenied

  /** For tests: forget every verdict. */
  private[spark] def forget(): Unit = {
    passed.clear()
    refused.clear()
  }

  private def canaryKey(dirKey: String): String =
    (if (dirKey.isEmpty) "" else dirKey.stripSuffix("/") + "/") + Protocol.StoreCheckCanaryPrefix + newId()

  private def newId(): String = java.util.UUID.randomUUID().toString.replace("-", "")

  private val CanaryBytes: Array[Byte] =
    "checkpointfs store check: a canary object, deleted after the check\n".getBytes(StandardCharsets.UTF_8)

  /**
   * What a store keeps to settle a lost answer by, from what it `kept` of the store check's canary, as the start line
   * says it: the twin of Python's `checkpointfs.store.check.keeps`.
   */
  def keeps(kept: Option[Kept]): String = kept match {
    case Some(k) if k.writeId.nonEmpty => "keeps user metadata: a lost answer is settled by the write id"
    case Some(k) if k.checksum.nonEmpty => "keeps no user metadata, only checksums: a lost answer is settled by " +
      "checksum and size"
    case _ => "keeps neither user metadata nor checksums: a lost answer cannot be settled as this write's, and " +
      "fails the write as of unknown outcome"
  }

  /**
   * The PutObject check: the store's answer to the second create (None when it refused, as it must) and, when
   * `readBack` (S3), what the store kept of the canary, read back before the second create (None otherwise); on S3
   * the canary's key is headed first, while it does not exist ([[headMissing]]).
   */
  private def checkPut(requests: ConditionalUploader, key: String, readBack: Boolean): (Option[String], Option[Kept]) = {
    if (readBack) headMissing(requests, key)
    val created = create(requests, key)
    try {
      val kept = if (readBack) requests.kept(key) else None
      val second = newId()
      try {
        requests.put(key, CanaryBytes, CanaryBytes.length, true, second)
        (Some("the second PutObject succeeded"), kept)
      } catch {
        case e: IOException => (refusedOrReplaced(requests, key, second, e), kept)
      }
    } finally delete(requests, key, created)
  }

  /**
   * The check of a store's own large upload (GCS's resumable upload, Azure's block list): None when the store refused
   * to publish it over the canary; else `accepted`, what it did.
   */
  private def checkLarge(requests: LargeUploadRequests, key: String, accepted: String): Option[String] = {
    val created = create(requests, key)
    try {
      val second = newId()
      try {
        requests.putLargeBytes(key, CanaryBytes, CanaryBytes.length, true, second)
        Some(accepted)
      } catch {
        case e: IOException => refusedOrReplaced(requests, key, second, e)
      }
    } finally delete(requests, key, created)
  }

  /** The multipart check: None when the store refused to complete over the canary, else what it answered. */
  private def checkMultipart(requests: MultipartUploader, key: String): Option[String] = {
    val created = create(requests, key)
    try {
      val second = newId()
      val upload = requests.startMultipart(key, second)
      var open = true
      try {
        val etag = requests.uploadPart(key, upload, 1, CanaryBytes, CanaryBytes.length)
        try {
          requests.complete(key, upload, Seq(etag), true)
          open = false
          Some("CompleteMultipartUpload succeeded over the existing object")
        } catch {
          case e: IOException => refusedOrReplaced(requests, key, second, e)
        }
      } finally abortUploads(requests, key, if (open) Some(upload) else None)
    } finally delete(requests, key, created)
  }

  /**
   * Abort the check's upload (`own`, unless it completed) and any other of the canary's key (the key is the check's
   * alone). Best effort: such uploads are invisible; only their storage is at stake.
   */
  private def abortUploads(requests: MultipartUploader, key: String, own: Option[String]): Unit =
    try {
      own.foreach(requests.abort(key, _))
      requests.uploads(key).foreach { case (id, _) => requests.abort(key, id) }
    } catch {
      case NonFatal(e) if isAccessDenied(e) => // works, at a cost: the orphan-upload clean-up cannot run either
        log.warn(s"store check: the store refused to abort or list the multipart uploads of $key (grant " +
          s"${Permissions.actions("s3", "abort_upload").mkString} and ${Permissions.actions("s3", "list_uploads")
            .mkString}); without it an upload left open by a lost answer is never cleaned up and keeps its parts " +
          s"until a lifecycle rule expires it (docs/operations.md): $e")
      case NonFatal(e) =>
        log.warn(s"store check: could not abort the multipart uploads of $key; they are invisible but keep their " +
          "parts until aborted or expired by a lifecycle rule", e)
    }

  /**
   * The second create of the canary failed with `e`: None when that is the store's refusal (class `conflict`) and
   * the canary still shows the first write; Some(answer) when the canary shows the second write (the store applied
   * it, whatever it answered); rethrows `e` otherwise (no verdict).
   */
  private def refusedOrReplaced(requests: ConditionalUploader, key: String, second: String, e: IOException): Option[String] = {
    if (Failures.isInterruption(e)) throw e
    val last = Failures.classify(e)
    if (last.name == Protocol.Conflict) return None
    val now = try requests.writeId(key) catch { case NonFatal(_) => None }
    if (now.contains(second)) Some(s"the second write landed although the store answered: $e")
    else throw new IOException(s"store check of $key: the second put-if-absent failed with a '${last.name}' " +
      s"answer, neither a refusal nor a success, so the store could not be checked: $e", e)
  }

  /**
   * Create the canary with `If-None-Match: *`, settled like any create when its answer is a failure; its version
   * (GCS's generation) when the store told it (else -1).
   */
  private def create(requests: ConditionalUploader, key: String): Long = {
    val first = newId()
    val sent = Sent(requests.checksum(CanaryBytes, CanaryBytes.length), CanaryBytes.length.toLong)
    try {
      requests.put(key, CanaryBytes, CanaryBytes.length, true, first, sent.checksum)
      requests match {
        case versioned: VersionedRequests => versioned.lastVersion
        case _ => -1L
      }
    } catch {
      case e: IOException =>
        if (Failures.isInterruption(e)) throw e
        val last = Failures.classify(e)
        val maybeApplied = Settle.hiddenAttemptsMaybeApplied(last)
        val owner =
          if (!Settle.needsOwner(last, overwrite = false, maybeApplied)) None
          else Some(try Settle.ownerOf(requests.kept(key), first, Some(sent))
          catch { case NonFatal(_) => Owner.Unreadable })
        Settle.settle(last, overwrite = false, maybeApplied, owner) match {
          case Outcome.Success => -1L
          case _ => throw new IOException(s"store check: could not create its canary object $key: $e", e)
        }
    }
  }

  /** Delete the canary, retried; a failure leaves it behind with a WARN (it is never read as a checkpoint file). */
  private def delete(requests: ConditionalUploader, key: String, generation: Long): Unit =
    try Retry.withBackoff(3, 100L, retryable = e => NonFatal(e) && !isAccessDenied(e)) {
      requests match {
        case versioned: VersionedRequests if generation > 0 => versioned.deleteVersion(key, generation)
        case _ => requests.delete(key)
      }
    }
    catch {
      case e: Throwable if isAccessDenied(e) => throw deleteRefused(key, e)
      case NonFatal(e) =>
        log.warn(s"store check: could not delete its canary object $key (harmless: checkpoint readers skip it)", e)
    }
}
