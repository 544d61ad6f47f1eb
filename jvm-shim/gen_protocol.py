"""Writes io.checkpointfs.spark.Protocol, the shim's copy of the write protocol's facts, from
checkpointfs/protocol/protocol.json (the one place they are stated; the Python package reads the same file).

    python jvm-shim/gen_protocol.py [protocol.json] OUT_DIR

jvm-shim/build.sh runs it before Maven, with OUT_DIR a generated-sources folder under jvm-shim/target/ that the
pom adds to the sources. Standard library only: it runs in the wheel's build environment. The Scala it writes
compiles on Scala 2.12 and 2.13; the types it fills in (AnswerClass, AnswerRule, AnswerTable) are in Answers.scala.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO / "checkpointfs" / "protocol" / "protocol.json"
PACKAGE = "io.checkpointfs.spark"


def scala_string(text: str) -> str:
    """``text`` as a Scala string literal (printable ASCII only, so that 2.12 and 2.13 read it alike)."""
    if any(not (" " <= ch <= "~") for ch in text):
        raise ValueError(f"protocol.json: only printable ASCII is compiled into the shim, got {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def scala_strings(items: Iterable[str], collection: str = "Set") -> str:
    """A Scala ``Set(...)`` (or ``Seq``) of string literals."""
    return f"{collection}({', '.join(scala_string(item) for item in items)})"


def constant_name(class_name: str) -> str:
    """The Scala constant for an answer class name: ``not-found`` -> ``NotFound``."""
    return "".join(part.capitalize() for part in class_name.replace("_", "-").split("-"))


def entries(section: dict[str, Any]) -> dict[str, Any]:
    """A section's entries without its ``about`` text."""
    return {name: value for name, value in section.items() if name != "about"}


def integer(value: Any, what: str) -> int:
    """``value``, required to be a non-negative JSON integer (not a bool)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"protocol.json: {what} must be a non-negative integer, got {value!r}")
    return value


def render(data: dict[str, Any]) -> str:
    """The Scala source of ``object Protocol`` for the parsed protocol.json ``data``."""
    if data.get("format") != 1:
        raise ValueError(f"protocol.json: format {data.get('format')!r}; this generator reads format 1")
    names = data["file_names"]
    knowledge = data["knowledge"]
    answers = data["answers"]
    classes = entries(answers["classes"])
    transports = entries(answers["transports"])
    named = {rule["class"] for rule in answers["rules"]}
    named |= {answers[default] for default in ("default_4xx", "default_5xx", "default_unanswered")}
    unknown = sorted(named - classes.keys())
    if unknown:
        raise ValueError(f"protocol.json: rules or defaults name unknown classes {unknown}")
    for rule in answers["rules"]:
        if not set(rule.get("transports", ())) <= transports.keys():
            raise ValueError(f"protocol.json: rule {rule} names a transport kind the transports table lacks")

    class_constants = "\n".join(
        f"  val {constant_name(name)}: String = {scala_string(name)}" for name in classes)
    class_values = ",\n".join(
        f"    AnswerClass({constant_name(name)}, retried = {str(bool(c['retried'])).lower()}, "
        f"mayHaveApplied = {str(bool(c['may_have_applied'])).lower()}, error = {scala_string(c['error'])})"
        for name, c in classes.items())
    rule_values = ",\n".join(
        f"    AnswerRule(codes = {scala_strings(rule.get('codes', ()))},\n"
        f"      statuses = Set({', '.join(str(integer(s, 'a status')) for s in rule.get('statuses', ()))}),\n"
        f"      transports = {scala_strings(rule.get('transports', ()))},\n"
        f"      jvmClasses = {scala_strings(rule.get('jvm_classes', ()))},\n"
        f"      className = {constant_name(rule['class'])}, "
        f"error = {'Some(' + scala_string(rule['error']) + ')' if 'error' in rule else 'None'})"
        for rule in answers["rules"])
    permissions = data["permissions"]
    permission_values = ",\n".join(
        f"    {scala_string(family)} -> Map(" + ", ".join(
            f"{scala_string(request)} -> {scala_strings(granted, 'Seq')}"
            for request, granted in entries(permissions[family]).items()) + ")"
        for family in ("s3", "gcs", "azure"))
    setting_values = ",\n".join(
        f"    Setting({scala_string(key)}, {scala_string(spec['kind'])}, choices = "
        f"{scala_strings(spec.get('choices', ()), 'Seq')}, minimum = {integer(spec.get('min', 0), 'a minimum')}L, "
        f"default = {'Some(' + scala_string(spec['default']) + ')' if 'default' in spec else 'None'}, "
        f"inherit = {str(bool(spec.get('inherit', False))).lower()})"
        for key, spec in data["settings"]["keys"].items())
    kinds = {spec["kind"] for spec in data["settings"]["keys"].values()}
    if not kinds <= {"choice", "int", "bool", "size", "schemes"}:
        raise ValueError(f"protocol.json: unknown setting kinds {sorted(kinds)}")
    transport_values = ",\n".join(
        f"    {scala_string(kind)} -> {scala_strings(kinds['jvm'], 'Seq')}" for kind, kinds in transports.items())
    metrics = data["metrics"]
    metric_operations = scala_strings(entries(metrics["operations"]), "Seq")
    per_operation = entries(metrics["per_operation"])
    if any(spec["kind"] not in ("counter", "timer") for spec in per_operation.values()):
        raise ValueError("protocol.json: a per-operation metric's kind must be counter or timer")
    metric_per_operation = ", ".join(f"({scala_string(name)}, {scala_string(spec['kind'])})"
                                     for name, spec in per_operation.items())
    metric_counters = scala_strings(entries(metrics["counters"]), "Seq")
    return f"""// Generated by jvm-shim/gen_protocol.py from checkpointfs/protocol/protocol.json: edit that, not this.
package {PACKAGE}

/**
 * The write protocol's facts (checkpointfs/protocol/protocol.json, explained in docs/contract.md), compiled into the
 * shim at build; the Python package reads the same file.
 */
private[spark] object Protocol {{
  /** User-metadata key holding the id of the create that wrote an object (S3: `x-amz-meta-<key>`). */
  val WriteIdKey: String = {scala_string(data["write_id"]["metadata_key"])}
  /** The same on Azure Blob Storage (`x-ms-meta-<key>`), whose metadata names are C# identifiers (no hyphen). */
  val AzureWriteIdKey: String = {scala_string(data["write_id"]["azure_metadata_key"])}

  /** Regex (whole name) of metadata-log batch files: `12`, `12.compact`. */
  val LogBatchName: String = {scala_string(names["log_batch"])}
  /** Regex (whole name) of state store files: `12.delta`, `12_<id>.zip`, ... */
  val StateFileName: String = {scala_string(names["state_file"])}
  /** Other names Spark gives only to files. */
  val ExactFileNames: Set[String] = {scala_strings(names["exact"])}
  /** Suffix (any case) of checksum files, which Spark gives only to files. */
  val ChecksumSuffix: String = {scala_string(names["checksum_suffix"])}

  /** Files and directories a manager remembers, per kind. */
  val KnowledgeCapacity: Int = {integer(knowledge["capacity"], "knowledge.capacity")}
  /** Published log-batch files up to this size keep their bytes in memory. */
  val MaxContentBytes: Int = {integer(knowledge["max_content_bytes"], "knowledge.max_content_bytes")}
  /** Bytes a manager keeps in memory, at most. */
  val ContentBudgetBytes: Long = {integer(knowledge["content_budget_bytes"], "knowledge.content_budget_bytes")}L

  /** Default part size: files up to it are one PutObject; larger ones stream as parts of this size. */
  val PartSizeBytes: Long = {integer(data["multipart"]["part_size_bytes"], "multipart.part_size_bytes")}L
  /** Default parts of one file uploaded at once. */
  val PartsInFlight: Int = {integer(data["multipart"]["parts_in_flight"], "multipart.parts_in_flight")}

  /** How the write id is stored in a GCS object's metadata (`base64`: of its UTF-8 bytes; Google's connector encodes
   * every metadata value it writes so, and decodes every one it reads). */
  val GcsWriteIdEncoding: String = {scala_string(data["gcs"]["write_id_encoding"])}

  /** How an S3 directory bucket's name ends (S3 Express One Zone: `<base>--<zone id>--x-s3`), as AWS's SDKs tell one. */
  val DirectoryBucketSuffix: String = {scala_string(data["s3_directory_bucket"]["name_suffix"])}

  /** Slack around a stream's lifetime when matching open uploads of its key that a lost answer left behind. */
  val OrphanClockSlackSeconds: Long = {integer(data["orphan_uploads"]["clock_slack_s"], "clock_slack_s")}L

  /** Name prefix of the store check's canary objects (in the directory of the file about to be written). */
  val StoreCheckCanaryPrefix: String = {scala_string(data["store_check"]["canary_prefix"])}
  /** The setting that turns the store check off (`false`). */
  val StoreCheckKey: String = {scala_string(data["store_check"]["setting"])}

  /** The contract's operations that metrics are kept for (each has every [[MetricsPerOperation]] metric). */
  val MetricOperations: Seq[String] = {metric_operations}
  /** Each operation's metrics: (name, kind), kind `counter` or `timer`; named `<operation>.<name>`. */
  val MetricsPerOperation: Seq[(String, String)] = Seq({metric_per_operation})
  /** The process-wide counters. */
  val MetricCounters: Seq[String] = {metric_counters}

  /** The store permissions each request kind needs, by store family ([[store.Permissions]] words them). */
  val Permissions: Map[String, Map[String, Seq[String]]] = Map(
{permission_values})

  /** The prefix of every shim setting. */
  val SettingsPrefix: String = {scala_string(data["settings"]["prefix"])}
  /** The value that keeps the file system's own S3A setting, where a setting allows it. */
  val InheritValue: String = {scala_string(data["settings"]["inherit_value"])}
  /** Every shim setting, in the table's order ([[SettingsCheck]] checks them at start). */
  val Settings: Seq[Setting] = Seq(
{setting_values})

  // The answer classes' names.
{class_constants}

  /** The answer classes, as the table defines them. */
  val Classes: Seq[AnswerClass] = Seq(
{class_values})

  /** The answer rules, in order: the first that matches gives the class. */
  val Rules: Seq[AnswerRule] = Seq(
{rule_values})

  /** Transport failure kinds and the JVM exception classes that stand for them, in the order they are tried. */
  val Transports: Seq[(String, Seq[String])] = Seq(
{transport_values})

  /** The table as shipped, with its defaults for 4xx, 5xx and failures without an answer. */
  val Table: AnswerTable = AnswerTable(Classes, Rules, Transports,
    default4xx = {constant_name(answers["default_4xx"])}, default5xx = {constant_name(answers["default_5xx"])}, \
defaultUnanswered = {constant_name(answers["default_unanswered"])})
}}
"""


def main(argv: list[str]) -> int:
    """Write ``<out_dir>/io/checkpointfs/spark/Protocol.scala``; rewrite it only when its text changes."""
    if len(argv) not in (1, 2):
        print("usage: python jvm-shim/gen_protocol.py [protocol.json] OUT_DIR", file=sys.stderr)
        return 2
    source = Path(argv[0]) if len(argv) == 2 else DEFAULT_SOURCE
    out = Path(argv[-1]) / PACKAGE.replace(".", "/") / "Protocol.scala"
    text = render(json.loads(source.read_text(encoding="utf-8")))
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
