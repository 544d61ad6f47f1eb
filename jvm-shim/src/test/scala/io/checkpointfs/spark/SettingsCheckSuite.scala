package io.checkpointfs.spark

import java.io.File

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

/**
 * The settings check against tests/protocol/golden_settings.json (beside the settle cases the pom names), the same
 * cases tests/protocol/test_settings.py runs against Python's `checkpointfs.protocol.settings`: the same messages.
 */
class SettingsCheckSuite extends AnyFunSuite {
  private val cases = {
    val settle = new File(Option(System.getProperty("checkpointfs.golden"))
      .getOrElse(sys.error("set -Dcheckpointfs.golden to tests/protocol/golden_settle.json")))
    val root = new ObjectMapper().readTree(new File(settle.getParentFile, "golden_settings.json"))
    val out = Seq.newBuilder[(String, String, Option[String])]
    root.get("cases").forEach { c =>
      out += ((c.get("key").asText, c.get("value").asText,
        Option(c.get("problem")).filterNot(_.isNull).map(_.asText)))
    }
    out.result()
  }

  test("every golden case gives Python's message") {
    assert(cases.size >= 20)
    val wrong = cases.flatMap { case (key, value, expected) =>
      val got = SettingsCheck.problem(key, value)
      if (got == expected) None else Some(s"$key=$value: expected $expected, got $got")
    }
    assert(wrong == Nil)
  }

  test("a Hadoop configuration's checkpointfs keys, with or without spark.hadoop., are all checked") {
    val conf = new Configuration(false)
    conf.set("fs.s3a.endpoint", "http://127.0.0.1:9000")
    conf.set("checkpointfs.cancel.strategy", "abort")
    conf.set("checkpointfs.cancel.stratgy", "abort")
    conf.set("spark.hadoop.checkpointfs.store.check", "off")
    assert(SettingsCheck.problems(conf) == Seq(
      "unknown setting 'checkpointfs.cancel.stratgy': did you mean 'checkpointfs.cancel.strategy'?",
      "spark.hadoop.checkpointfs.store.check='off': expected true or false"))
    val e = intercept[CheckpointStoreConfigException](SettingsCheck.require(conf, "s3a://b/cp/offsets"))
    assert(e.getMessage.startsWith("s3a://b/cp/offsets: invalid checkpointfs settings: unknown setting"))
    conf.unset("checkpointfs.cancel.stratgy")
    conf.unset("spark.hadoop.checkpointfs.store.check")
    assert(SettingsCheck.problems(conf) == Nil)
  }

  test("a mistyped spark.hadoop. key that Spark copied unprefixed is reported once, as written") {
    val conf = new Configuration(false)
    conf.set("spark.hadoop.checkpointfs.cancel.stratgy", "abort")
    conf.set("checkpointfs.cancel.stratgy", "abort") // Spark's copy into the Hadoop configuration
    assert(SettingsCheck.problems(conf) == Seq("unknown setting 'spark.hadoop.checkpointfs.cancel.stratgy': did you " +
      "mean 'spark.hadoop.checkpointfs.cancel.strategy'?"))
  }

  test("the manager's settings take their defaults from the table") {
    val settings = Options(new Configuration(false))
    assert(settings.abortOnCancel && settings.deleteAttempts == 3 && settings.storeCheck)
    assert(settings.renameSchemes.contains("hdfs") && !settings.renameSchemes.contains("s3a"))
  }
}
