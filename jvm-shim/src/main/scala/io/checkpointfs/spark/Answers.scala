package io.checkpointfs.spark

/**
 * One class of the answer table (protocol.json `answers.classes`): whether such a failure is retried, whether the
 * request may have been applied, and the Python error type it becomes once final (refined by the rule).
 */
private[spark] final case class AnswerClass(name: String, retried: Boolean, mayHaveApplied: Boolean, error: String)

/**
 * One rule of the answer table: matches an answer by S3 error code, HTTP status, transport failure kind, or the name
 * of a JVM exception class in it (any one list matching is enough); gives the class `className`, its error
 * replaced by `error` when set.
 */
private[spark] final case class AnswerRule(codes: Set[String], statuses: Set[Int], transports: Set[String],
    jvmClasses: Set[String], className: String, error: Option[String]) {

  /** Whether this rule matches `answer`. */
  def matches(answer: Answer): Boolean =
    codes.contains(answer.code) || statuses.contains(answer.status) ||
      answer.transport.exists(transports.contains) || answer.classNames.exists(jvmClasses.contains)
}

/**
 * A store's answer to a failed request, in the table's terms: the HTTP `status` (0: none came), the S3 error `code`
 * ("": none), the `transport` failure kind when no answer came, and the names (simple and qualified) of the
 * exception classes of the failure (every exception of the cause chain, with its superclasses).
 */
private[spark] final case class Answer(status: Int = 0, code: String = "", transport: Option[String] = None,
    classNames: Set[String] = Set.empty)

/**
 * The answer table of protocol.json, ready to classify (the shipped one is [[Protocol.Table]]; tests pass changed
 * ones). Python's `checkpointfs.protocol.Rules` reads the same table and classifies alike.
 */
private[spark] final case class AnswerTable(classes: Seq[AnswerClass], rules: Seq[AnswerRule],
    transports: Seq[(String, Seq[String])], default4xx: String, default5xx: String, defaultUnanswered: String) {

  private val byName: Map[String, AnswerClass] = classes.map(c => c.name -> c).toMap

  /** The class called `name`; IllegalArgumentException when the table has none. */
  def answerClass(name: String): AnswerClass =
    byName.getOrElse(name, throw new IllegalArgumentException(s"the answer table has no class '$name'"))

  /** Each rule with the class it gives, its error refined. */
  private val resolved: Seq[(AnswerRule, AnswerClass)] = rules.map { rule =>
    val base = answerClass(rule.className)
    rule -> rule.error.fold(base)(e => base.copy(error = e))
  }

  private val defaults = (answerClass(default4xx), answerClass(default5xx), answerClass(defaultUnanswered))

  /** The class of `answer`: the first rule that matches, else the default for its status range. */
  def classify(answer: Answer): AnswerClass =
    resolved.collectFirst { case (rule, cls) if rule.matches(answer) => cls }.getOrElse {
      if (answer.status >= 400 && answer.status < 500) defaults._1
      else if (answer.status >= 500) defaults._2
      else defaults._3
    }

  /** The transport failure kind the exception classes named `classNames` stand for (kinds tried in order). */
  def transportOf(classNames: Set[String]): Option[String] =
    transports.collectFirst { case (kind, names) if names.exists(classNames.contains) => kind }
}

/** Whose write id the object carries when read back after a failed commit. */
private[spark] sealed trait Owner
private[spark] object Owner {
  /** This write's id: an attempt of it landed. */
  case object Ours extends Owner
  /** Another write's id, or none (an object without one is another writer's). */
  case object Other extends Owner
  /** No object at the key. */
  case object Absent extends Owner
  /** The read itself failed. */
  case object Unreadable extends Owner
}

/**
 * What a head tells of an object, for settling a lost answer (Python's `ObjectMeta`): its write id (user metadata;
 * "" for none kept), the checksum the store kept as `<algorithm>:<base64>` ("" for none, or not asked for), its size
 * (-1: not known).
 */
private[spark] final case class Kept(writeId: String, checksum: String, size: Long)

/**
 * What a write sent, to be recognised by where the store keeps no write id (Python's `checkpointfs.store.settle.Sent`):
 * the checksum the store keeps ([[store.ConditionalUploader.checksum]]; "" for none sent) and the size.
 */
private[spark] final case class Sent(checksum: String, size: Long)

/** What a failed commit means. */
private[spark] sealed trait Outcome
private[spark] object Outcome {
  /** It landed after all. */
  case object Success extends Outcome
  /** The key is another writer's (FileAlreadyExistsException). */
  case object Conflict extends Outcome
  /** It may or may not become visible (WriteOutcomeUnknownException). */
  case object Unknown extends Outcome
  /** The last answer's own error: nothing of this write was applied. */
  case object Error extends Outcome
}

/**
 * What a failed commit means, the JVM twin of Python's `checkpointfs.protocol.settle`, `needs_owner` and
 * `hidden_attempts_maybe_applied` (tests/protocol/golden_settle.json checks both).
 */
private[spark] object Settle {

  /** Whether [[settle]] needs the object's write id read back: whenever an attempt may have been applied. */
  def needsOwner(last: AnswerClass, overwrite: Boolean, maybeApplied: Boolean): Boolean = maybeApplied

  /**
   * For a writer whose client retries out of its sight (S3A and the AWS SDK under the shim): whether an attempt may
   * have been applied, judged from the last answer alone. Anything but a definitive refusal or a 404 may follow a
   * retried attempt that landed; a conflict or a vanished upload may be that attempt's own trace.
   */
  def hiddenAttemptsMaybeApplied(last: AnswerClass): Boolean =
    last.name != Protocol.Refuse && last.name != Protocol.NotFound

  /**
   * Whose write the object read back holds, the twin of Python's `checkpointfs.protocol.owner_of_object`. `found`:
   * what the read found (`present`, `absent`, `unreadable`). Its write id decides where the store kept one (user
   * metadata); where it keeps none (a directory bucket without user metadata), the checksum the store kept, sent
   * with the write, and the size decide: ours when both are what this writer sent. With neither kept, or no checksum
   * sent to compare, the object is another writer's, as one without this write's id always was. A checksum tells
   * bytes, not writers.
   */
  def ownerOfObject(found: String, objectWriteId: String, objectChecksum: String, objectSize: Long, writeId: String,
                    sentChecksum: String, sentSize: Long): Owner = found match {
    case "absent" => Owner.Absent
    case "present" =>
      if (!toldApart(objectWriteId, objectChecksum, sentChecksum)) Owner.Other
      else if (objectWriteId.nonEmpty) { if (objectWriteId == writeId) Owner.Ours else Owner.Other }
      else if (objectChecksum == sentChecksum && objectSize == sentSize) Owner.Ours
      else Owner.Other
    case _ => Owner.Unreadable
  }

  /**
   * Whether an object read back can be told this writer's or another's at all, the twin of Python's
   * `checkpointfs.protocol.told_apart`: the store kept a write id, or it kept a checksum and this writer sent one.
   * Where it cannot, [[ownerOfObject]] calls the object another writer's.
   */
  def toldApart(objectWriteId: String, objectChecksum: String, sentChecksum: String): Boolean =
    objectWriteId.nonEmpty || (objectChecksum.nonEmpty && sentChecksum.nonEmpty)

  /**
   * Whose write the object read back as `kept` holds (None: no object), the twin of Python's
   * `checkpointfs.store.settle.owner_of`: [[ownerOfObject]] of its write id, or of its checksum and size against what
   * this writer `sent` (None: nothing known, as for a multipart upload).
   */
  def ownerOf(kept: Option[Kept], writeId: String, sent: Option[Sent]): Owner = kept match {
    case None => Owner.Absent
    case Some(k) =>
      val s = sent.getOrElse(Sent("", 0L))
      ownerOfObject("present", k.writeId, k.checksum, k.size, writeId, s.checksum, s.size)
  }

  /**
   * The outcome of a commit whose last attempt failed with an answer of class `last`. `maybeApplied`: some attempt
   * may have been applied; `owner`: the write id read back when [[needsOwner]] said so (None: not read). A
   * put-if-absent conflict stands even when the key reads as absent afterwards: another writer's file, deleted
   * since, must never be resurrected.
   */
  def settle(last: AnswerClass, overwrite: Boolean, maybeApplied: Boolean, owner: Option[Owner]): Outcome = {
    val conflict = last.name == Protocol.Conflict && !overwrite
    if (!maybeApplied) {
      if (conflict) Outcome.Conflict else Outcome.Error
    } else owner match {
      case None => throw new IllegalArgumentException(s"settle of a '${last.name}' answer after an attempt that " +
        "may have been applied needs the owner read back")
      case Some(Owner.Ours) => Outcome.Success
      case Some(Owner.Unreadable) => Outcome.Unknown
      case Some(Owner.Other) if !overwrite => Outcome.Conflict
      case Some(_) => if (conflict) Outcome.Conflict else Outcome.Unknown
    }
  }
}
