package io.checkpointfs.spark

/** The Spark trait this jar group implements: `org.apache.spark.sql.execution.streaming.CheckpointFileManager`. */
package object compat {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  val CheckpointFileManager: org.apache.spark.sql.execution.streaming.CheckpointFileManager.type = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  type CancellableFSDataOutputStream = org.apache.spark.sql.execution.streaming.CheckpointFileManager.CancellableFSDataOutputStream
}
