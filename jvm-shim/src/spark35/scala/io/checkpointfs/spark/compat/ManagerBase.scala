package io.checkpointfs.spark.compat

/** The shim manager's base on this line: adds `close()`, which this line's trait does not have. */
private[spark] trait ManagerBase extends CheckpointFileManager {
  /** Release what the manager holds (the delegate manager, if any). */
  protected def closeManager(): Unit

  /** Close another manager (a no-op before Spark 4.1, whose managers hold nothing to close). */
  protected def closeOther(m: CheckpointFileManager): Unit = ()

  def close(): Unit = closeManager()
}
