package io.checkpointfs.spark

/** The Spark trait this jar group implements: `org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager`. */
package object compat {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  val CheckpointFileManager: org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.type = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  type CancellableFSDataOutputStream = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream
}
