package io.checkpointfs.spark

import java.io.File

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/**
 * The golden cases of tests/protocol/golden_settle.json (path in the `checkpointfs.golden` system property, set by
 * the pom) against the shim's compiled table, settle rule and hidden-attempts rule: the same cases
 * tests/protocol/test_golden.py runs against Python's.
 */
class ProtocolGoldenSuite extends AnyFunSuite {
  import ProtocolGoldenSuite._

  test("every classify case: class, retried, may_have_applied and error") {
    assert(golden("classify").nonEmpty)
    assert(classifyFailures(Protocol.Table) == Nil)
  }

  test("every settle case: whether the owner is read, and the outcome") {
    assert(golden("settle").nonEmpty)
    golden("settle").foreach { c =>
      val last = Protocol.Table.answerClass(c.get("class").asText)
      val (overwrite, maybeApplied, owner) = settleInputs(c)
      assert(Settle.needsOwner(last, overwrite, maybeApplied) == owner.isDefined, c.get("why").asText)
      assert(outcomeName(Settle.settle(last, overwrite, maybeApplied, owner)) == c.get("outcome").asText,
        c.get("why").asText)
    }
  }

  test("every owner case: whose write the object holds, by write id or by checksum and size") {
    assert(golden("owner").nonEmpty)
    golden("owner").foreach { c =>
      val (kept, sent) = (c.get("object"), c.get("sent"))
      val owner = Settle.ownerOfObject(c.get("found").asText, kept.get("write_id").asText, kept.get("checksum").asText,
        kept.get("size").asLong, sent.get("write_id").asText, sent.get("checksum").asText, sent.get("size").asLong)
      assert(ownerName(owner) == c.get("owner").asText, c.get("why").asText)
    }
  }

  test("every cancel case: the close-then-delete cancel recognises its object by the owner table") {
    assert(golden("cancel").size >= 10)
    golden("cancel").foreach { c =>
      val (kept, sent, why) = (c.get("object"), c.get("sent"), c.get("why").asText)
      val (objectId, objectSum, sentSum) = (kept.get("write_id").asText, kept.get("checksum").asText,
        sent.get("checksum").asText)
      val owner = Settle.ownerOfObject(c.get("found").asText, objectId, objectSum, kept.get("size").asLong,
        sent.get("write_id").asText, sentSum, sent.get("size").asLong)
      assert(ownerName(owner) == c.get("owner").asText, why)
      assert(Settle.toldApart(objectId, objectSum, sentSum) == c.get("told_apart").asBoolean, why)
      val read = if (c.get("found").asText == "present") Some(Kept(objectId, objectSum, kept.get("size").asLong))
        else None
      val deletes = DirectWriteOutputStream.cancelDeletes(c.get("closed").asBoolean, read,
        sent.get("write_id").asText, Some(Sent(sentSum, sent.get("size").asLong)))
      assert(deletes == c.get("deletes").asBoolean, why)
    }
  }

  test("every hidden-attempts case") {
    assert(golden("hidden_attempts").size == Protocol.Classes.size)
    golden("hidden_attempts").foreach { c =>
      val last = Protocol.Table.answerClass(c.get("class").asText)
      assert(Settle.hiddenAttemptsMaybeApplied(last) == c.get("maybe_applied").asBoolean, c.toString)
    }
  }

  test("settle refuses to guess without the owner") {
    val e = intercept[IllegalArgumentException] {
      Settle.settle(Protocol.Table.answerClass(Protocol.Settle), overwrite = false, maybeApplied = true, owner = None)
    }
    assert(e.getMessage.contains("needs the owner"))
  }

  test("every rule and class of the compiled table is pinned by a golden case") {
    val table = Protocol.Table
    val unpinned = Seq.newBuilder[String]
    for ((rule, index) <- table.rules.zipWithIndex; other <- table.classes.map(_.name) if other != rule.className) {
      val changed = table.copy(rules = table.rules.updated(index, rule.copy(className = other, error = None)))
      if (failures(changed).isEmpty) unpinned += s"rule $index (${rule.className} -> $other)"
    }
    for ((cls, index) <- table.classes.zipWithIndex;
         (field, flipped) <- Seq("retried" -> cls.copy(retried = !cls.retried),
           "may_have_applied" -> cls.copy(mayHaveApplied = !cls.mayHaveApplied))) {
      if (failures(table.copy(classes = table.classes.updated(index, flipped))).isEmpty) {
        unpinned += s"class ${cls.name}.$field"
      }
    }
    assert(unpinned.result() == Nil)
    assert(table.rules.size >= 10 && table.classes.size == 7) // the loops above ran over the whole table
  }
}

object ProtocolGoldenSuite {
  private val file: File = new File(Option(System.getProperty("checkpointfs.golden"))
    .getOrElse(sys.error("set -Dcheckpointfs.golden to tests/protocol/golden_settle.json")))
  private val root: JsonNode = new ObjectMapper().readTree(file)

  /** The cases of one section of the golden file. */
  def golden(section: String): Seq[JsonNode] = {
    val out = Seq.newBuilder[JsonNode]
    root.get(section).elements().forEachRemaining(n => out += n)
    out.result()
  }

  /** A classify case's answer, as Python's test builds it (status, code, transport; no class names). */
  def answerOf(c: JsonNode): Answer = {
    val a = c.get("answer")
    Answer(status = Option(a.get("status")).map(_.asInt).getOrElse(0),
      code = Option(a.get("code")).map(_.asText).getOrElse(""),
      transport = Option(a.get("transport")).filterNot(_.isNull).map(_.asText))
  }

  def settleInputs(c: JsonNode): (Boolean, Boolean, Option[Owner]) = {
    val owner = Option(c.get("owner")).filterNot(_.isNull).map(_.asText).map {
      case "ours" => Owner.Ours
      case "other" => Owner.Other
      case "absent" => Owner.Absent
      case "unreadable" => Owner.Unreadable
      case other => sys.error(s"unknown owner '$other'")
    }
    (c.get("overwrite").asBoolean, c.get("maybe_applied").asBoolean, owner)
  }

  /** The golden file's name of an owner. */
  def ownerName(o: Owner): String = o match {
    case Owner.Ours => "ours"
    case Owner.Other => "other"
    case Owner.Absent => "absent"
    case Owner.Unreadable => "unreadable"
  }

  /** The golden file's name of an outcome. */
  def outcomeName(o: Outcome): String = o match {
    case Outcome.Success => "success"
    case Outcome.Conflict => "conflict"
    case Outcome.Unknown => "unknown"
    case Outcome.Error => "error"
  }

  /** The classify cases `table` gets wrong, described. */
  def classifyFailures(table: AnswerTable): List[String] = golden("classify").toList.flatMap { c =>
    val got = table.classify(answerOf(c))
    val expected = AnswerClass(c.get("class").asText, c.get("retried").asBoolean, c.get("may_have_applied").asBoolean,
      c.get("error").asText)
    if (got == expected) Nil else List(s"${c.get("answer")}: $got != $expected")
  }

  /** The classify and settle cases `table` gets wrong. */
  def failures(table: AnswerTable): List[String] = classifyFailures(table) ++ golden("settle").toList.flatMap { c =>
    val (overwrite, maybeApplied, owner) = settleInputs(c)
    val outcome = outcomeName(Settle.settle(table.answerClass(c.get("class").asText), overwrite, maybeApplied, owner))
    if (outcome == c.get("outcome").asText) Nil else List(s"settle $c: $outcome")
  }
}
