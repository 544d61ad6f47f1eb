package io.checkpointfs.spark

import java.io.File

import com.fasterxml.jackson.databind.ObjectMapper
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.store.{Permissions, StoreCheck}

/**
 * The permissions table against tests/protocol/golden_permissions.json (beside the settle cases the pom names), the
 * same cases tests/protocol/test_permissions.py runs against Python's `checkpointfs.protocol.permissions`.
 */
class PermissionsSuite extends AnyFunSuite {
  private val root = {
    val settle = new File(Option(System.getProperty("checkpointfs.golden"))
      .getOrElse(sys.error("set -Dcheckpointfs.golden to tests/protocol/golden_settle.json")))
    new ObjectMapper().readTree(new File(settle.getParentFile, "golden_permissions.json"))
  }

  test("every golden case is worded as Python words it") {
    val wrong = Seq.newBuilder[String]
    var seen = 0
    root.get("needs").forEach { c =>
      seen += 1
      val got = Permissions.needs(c.get("family").asText, c.get("request").asText, c.get("bucket").asText)
      if (got != c.get("needs").asText) wrong += s"${c.get("family").asText}/${c.get("request").asText}: $got"
    }
    assert(seen >= 20)
    assert(wrong.result() == Nil)
  }

  test("the store check's verdict on a head of its missing canary key is Python's") {
    var seen = 0
    root.get("missing_head").forEach { c =>
      seen += 1
      val answer = Answer(status = c.get("status").asInt, code = c.get("code").asText)
      assert(StoreCheck.missingHeadVerdict(Protocol.Table.classify(answer)) == c.get("verdict").asText,
        s"${c.get("status").asInt} ${c.get("code").asText}")
    }
    assert(seen >= 5)
  }

  test("a path's scheme gives its store family as in Python") {
    root.get("families").forEach { c =>
      val expected = Option(c.get("family")).filterNot(_.isNull).map(_.asText)
      assert(Permissions.familyOf(c.get("uri").asText) == expected, c.get("uri").asText)
    }
  }
}
