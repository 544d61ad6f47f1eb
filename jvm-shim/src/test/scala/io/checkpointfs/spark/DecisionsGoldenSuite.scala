package io.checkpointfs.spark

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.time.Instant

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.hadoop.fs.{FileStatus, Path}
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._

/**
 * The golden tables of the manager's decisions, tests/protocol/golden_probes.json, golden_knowledge.json and
 * golden_orphans.json (folder in the `checkpointfs.goldenDir` system property, set by the pom), against the shim's
 * [[Probes.existsPlan]], [[Knowledge]] and [[DirectWriteOutputStream.isOrphan]]: the same cases
 * tests/protocol/test_golden_decisions.py runs against Python's. Keys of bucket `b` become `s3a://b/<key>`; the
 * manager's root is `s3a://b/ck`. Each meta-test changes one clause of a rule and checks that a case then fails.
 */
class DecisionsGoldenSuite extends AnyFunSuite {
  import DecisionsGoldenSuite._

  // -- the probe rule ------------------------------------------------------------------------------------------------
  test("every probe case: the plan of exists()") {
    assert(cases(ProbesTable).size >= 20)
    assert(probeFailures(Probes.existsPlan) == Nil)
  }

  test("every clause of the probe rule is pinned by a case") {
    assert(probeFailures(rule()) == Nil) // the rule as written below is the shim's
    val clauses = Seq[(String, PlanRule)](
      "published files answered from memory" -> rule(published = (_, _) => false),
      "made directories answered from memory" -> rule(made = (_, _) => false),
      "the next batch answered absent" -> rule(nextBatch = (_, _) => false),
      "directories seen probed as directories" -> rule(directory = (_, _) => false),
      "only file names take one head request" -> rule(fileName = _ => true),
      "file names take one head request" -> rule(fileName = _ => false),
      "only paths below the root take the file rule" -> rule(below = (_, _) => true))
    val unpinned = clauses.collect { case (clause, changed) if probeFailures(changed).isEmpty => clause }
    assert(unpinned == Nil)
  }

  // -- what a manager knows ------------------------------------------------------------------------------------------
  test("every knowledge case: the answers after each sequence of operations") {
    assert(cases(KnowledgeTable).size >= 15)
    val wrong = cases(KnowledgeTable).flatMap(knowledgeFailures)
    assert(wrong == Nil)
  }

  // -- the orphan-upload window --------------------------------------------------------------------------------------
  test("every orphan case: which open uploads a stream aborts") {
    assert(cases(OrphansTable).size >= 8)
    assert(orphanFailures((i, since, until, slack) => DirectWriteOutputStream.isOrphan(i, since, until, slack)) == Nil)
  }

  test("the orphan table states the protocol's slack") {
    assert(table(OrphansTable).get("about").asText.contains(s"clock_slack_s (${Protocol.OrphanClockSlackSeconds})"))
  }

  test("every clause of the orphan window is pinned by a case") {
    val clauses = Seq[(String, OrphanRule)](
      "the lower bound" -> ((i, _, until, slack) => i.exists(!_.isAfter(until.plusSeconds(slack)))),
      "the upper bound" -> ((i, since, _, slack) => i.exists(!_.isBefore(since.minusSeconds(slack)))),
      "the slack" -> ((i, since, until, _) => i.exists(at => !at.isBefore(since) && !at.isAfter(until))),
      "an undated upload is left alone" -> ((i, since, until, slack) =>
        i.forall(at => !at.isBefore(since.minusSeconds(slack)) && !at.isAfter(until.plusSeconds(slack)))))
    val unpinned = clauses.collect { case (clause, changed) if orphanFailures(changed).isEmpty => clause }
    assert(unpinned == Nil)
  }
}

object DecisionsGoldenSuite {
  val ProbesTable = "golden_probes.json"
  val KnowledgeTable = "golden_knowledge.json"
  val OrphansTable = "golden_orphans.json"

  private val folder: File = new File(Option(System.getProperty("checkpointfs.goldenDir"))
    .getOrElse(sys.error("set -Dcheckpointfs.goldenDir to tests/protocol")))
  private val tables = scala.collection.concurrent.TrieMap.empty[String, JsonNode]

  def table(name: String): JsonNode = tables.getOrElseUpdate(name, new ObjectMapper().readTree(new File(folder, name)))

  /** The elements of a JSON array (no Java-collection converters: the same source compiles on Scala 2.12 and 2.13). */
  def items(node: JsonNode): IndexedSeq[JsonNode] = {
    val out = IndexedSeq.newBuilder[JsonNode]
    if (node != null) node.elements().forEachRemaining(n => out += n)
    out.result()
  }

  def cases(name: String): Seq[JsonNode] = items(table(name).get("cases"))

  private val Bucket = "b"
  val Root = new Path(s"s3a://$Bucket/ck")

  /** `bucket:key`, or a key of bucket `b`, as the shim's qualified path. */
  def path(located: String): Path = located.lastIndexOf(':') match {
    case -1 => new Path(s"s3a://$Bucket/$located")
    case i => new Path(s"s3a://${located.take(i)}/${located.drop(i + 1)}")
  }

  private def strings(node: JsonNode): Seq[String] =
    items(node).map(_.asText)

  private def directory(p: Path) = new FileStatus(0L, true, 1, 0L, 0L, p)
  private def file(p: Path) = new FileStatus(0L, false, 1, 0L, 0L, p)

  // -- the probe rule ------------------------------------------------------------------------------------------------
  type PlanRule = (Knowledge, Path, Path, String, Boolean) => String

  private val PlanNames = Map(Probes.KnownProbe -> "present", Probes.NextBatchProbe -> "absent",
    Probes.FileProbe -> "head", Probes.FullProbe -> "head-then-list")

  def probeFailures(plan: PlanRule): Seq[String] = cases(ProbesTable).flatMap { c =>
    val known = new Knowledge()
    strings(c.get("published")).foreach(k => known.published(Root, path(k), 0L, None, putIfAbsent = true))
    known.listed(Root, strings(c.get("directories")).map(d => directory(path(d))), identity)
    strings(c.get("made")).foreach(d => known.made(path(d)))
    val mode = Option(c.get("mode")).map(_.asText).getOrElse(Probes.LogOrderMode)
    val storeCheck = Option(c.get("store_check")).forall(_.asBoolean)
    val got = PlanNames(plan(known, Root, path(c.get("path").asText), mode, storeCheck))
    if (got == c.get("plan").asText) None else Some(s"${c.get("why").asText}: $got")
  }

  /**
   * The probe rule written out clause by clause, so that a meta-test can change one: with the defaults it is
   * [[Probes.existsPlan]] (the first meta-test checks that on every case).
   */
  def rule(
      published: (Knowledge, Path) => Boolean = (k, p) => k.isPublished(p),
      made: (Knowledge, Path) => Boolean = (k, p) => k.isMade(p),
      nextBatch: (Knowledge, Path) => Boolean = (k, p) => k.isNextBatch(p),
      directory: (Knowledge, Path) => Boolean = (k, p) => k.isDirectory(p),
      fileName: String => Boolean = Probes.isFileName,
      below: (Path, Path) => Boolean = Probes.isBelow): PlanRule = { (known, root, p, mode, storeCheck) =>
    val full = mode == Probes.FullMode
    val isBelow = below(root, p)
    if (!full && (published(known, p) || made(known, p))) Probes.KnownProbe
    else if (mode == Probes.LogOrderMode && storeCheck && isBelow && nextBatch(known, p)) Probes.NextBatchProbe
    else if (!full && isBelow && fileName(p.getName) && !directory(known, p)) Probes.FileProbe
    else Probes.FullProbe
  }

  // -- what a manager knows ------------------------------------------------------------------------------------------
  /** `null`, a string (its UTF-8 bytes) or `{"size": n}` (n bytes). */
  private def content(node: JsonNode): Option[Array[Byte]] =
    if (node == null || node.isNull) None
    else if (node.isObject) Some(Array.fill(node.get("size").asInt)('x'.toByte))
    else Some(node.asText.getBytes(UTF_8))

  def knowledgeFailures(c: JsonNode): Seq[String] = {
    val capacity = Option(c.get("capacity")).map(_.asInt).getOrElse(Protocol.KnowledgeCapacity)
    val budget = Option(c.get("budget")).map(_.asLong).getOrElse(Protocol.ContentBudgetBytes)
    val known = new Knowledge(capacity, budget)
    val why = c.get("why").asText
    items(c.get("ops")).flatMap { op =>
      val args = items(op)
      def at(i: Int): Path = path(args(i).asText)
      args.head.asText match {
        case "published" =>
          val bytes = content(args(2))
          known.published(Root, at(1), bytes.map(_.length.toLong).getOrElse(0L), bytes, args(3).asBoolean)
          None
        case "listed" =>
          known.listed(Root, strings(args(1)).map(d => directory(path(d))) ++ strings(args(2)).map(f => file(path(f))),
            identity)
          None
        case "forget" => known.forget(at(1)); None
        case "forget_file" => known.forgetExactly(at(1)); None
        case "made" => known.made(at(1)); None
        case query =>
          val (got, expected): (Any, Any) = query match {
            case "is_published" => (known.isPublished(at(1)), args(2).asBoolean)
            case "is_directory" => (known.isDirectory(at(1)), args(2).asBoolean)
            case "is_next_batch" => (known.isNextBatch(at(1)), args(2).asBoolean)
            case "is_made" => (known.isMade(at(1)), args(2).asBoolean)
            case "made_children" => (known.madeChildren(at(1)), strings(args(2)).map(path))
            case "content" => (known.content(at(1)).map(_.toSeq), content(args(2)).map(_.toSeq))
            case other => throw new IllegalArgumentException(s"$why: unknown operation $other")
          }
          if (got == expected) None else Some(s"$why: $op gave $got")
      }
    }
  }

  // -- the orphan-upload window --------------------------------------------------------------------------------------
  type OrphanRule = (Option[Instant], Instant, Instant, Long) => Boolean

  def orphanFailures(rule: OrphanRule): Seq[String] = {
    val since = Instant.ofEpochSecond(table(OrphansTable).get("since").asLong)
    val until = Instant.ofEpochSecond(table(OrphansTable).get("until").asLong)
    cases(OrphansTable).collect {
      case c if rule(Option(c.get("initiated")).filterNot(_.isNull).map(n => Instant.ofEpochSecond(n.asLong)),
          since, until, Protocol.OrphanClockSlackSeconds) != c.get("orphan").asBoolean => c.get("why").asText
    }
  }
}
