package io.checkpointfs.spark

import org.apache.hadoop.fs.Path
import io.checkpointfs.spark.direct.CheckpointRoots

/**
 * How the shim's WARN lines name a file, for an operator (the same fields as Python's `checkpointfs.events`):
 * `[checkpoint=<root> file=<path> batch=<id> write_id=<id>]`, with `batch` when the file is a metadata log's batch
 * file (`offsets/12`, `sources/0/12.compact`) and `version` instead when it is a state store file
 * (`state/0/3/12.delta`: a state version, not a batch id).
 */
private[spark] object Events {
  private val LogBatch = Protocol.LogBatchName.r
  private val StateFile = Protocol.StateFileName.r
  private val LogDirectories = Set("offsets", "commits", "_spark_metadata")

  private def leadingNumber(name: String): Option[Long] = {
    val digits = name.takeWhile(_.isDigit)
    if (digits.isEmpty || digits.length > 18) None else Some(digits.toLong)
  }

  /** The context of the (qualified) file `path` written with `writeId` ("" for none). */
  def context(path: Path, writeId: String = ""): String = {
    val parent = Option(path.getParent)
    val name = path.getName
    val parentName = parent.map(_.getName).getOrElse("")
    val grandparentName = parent.flatMap(p => Option(p.getParent)).map(_.getName).getOrElse("")
    val isLog = LogBatch.pattern.matcher(name).matches() &&
      (LogDirectories.contains(parentName) || grandparentName == "sources")
    val isState = !isLog && StateFile.pattern.matcher(name).matches() && path.toUri.getPath.contains("/state/")
    val root = parent.map(CheckpointRoots.checkpointRootOf).getOrElse(path)
    val fields = Seq(Some(s"checkpoint=$root"), Some(s"file=$path"),
      if (isLog) leadingNumber(name).map(b => s"batch=$b") else None,
      if (isState) leadingNumber(name).map(v => s"version=$v") else None,
      if (writeId.nonEmpty) Some(s"write_id=$writeId") else None)
    fields.flatten.mkString("[", " ", "]")
  }
}
