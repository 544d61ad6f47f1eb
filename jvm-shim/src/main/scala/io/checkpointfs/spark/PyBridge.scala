package io.checkpointfs.spark

import java.io.ByteArrayOutputStream

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{Path, PathFilter}

import io.checkpointfs.spark.compat.CheckpointFileManager
import io.checkpointfs.spark.direct.DirectWriteOutputStream
import io.checkpointfs.spark.store.StoreCheck

/**
 * Coarse-grained helpers for driving a CheckpointFileManager from Python through py4j (one call per operation
 * instead of several). Used by `checkpointfs.spark.JvmCheckpointFileManager`; not needed to use the shim in Spark.
 */
object PyBridge {

  /** A manager of class `className` for `path`, built as Spark builds one: `(Path, Configuration)`. */
  def newManager(className: String, path: String, conf: Configuration): CheckpointFileManager =
    Class.forName(className, true, Thread.currentThread().getContextClassLoader)
      .getConstructor(classOf[Path], classOf[Configuration])
      .newInstance(new Path(path), conf)
      .asInstanceOf[CheckpointFileManager]

  /** The whole content of the file at `path`, read through the manager. */
  def readAll(manager: CheckpointFileManager, path: String): Array[Byte] = {
    val in = manager.open(new Path(path))
    try {
      val buffer = new ByteArrayOutputStream()
      val chunk = new Array[Byte](64 * 1024)
      var n = in.read(chunk)
      while (n >= 0) {
        buffer.write(chunk, 0, n)
        n = in.read(chunk)
      }
      buffer.toByteArray
    } finally in.close()
  }

  /**
   * The children of `path` as lines `name \t size \t isDir(0|1) \t modificationTimeMs`, in the manager's order.
   * Names never contain tabs or newlines here (checkpoint file names).
   */
  def list(manager: CheckpointFileManager, path: String): String = {
    val acceptAll = new PathFilter { override def accept(p: Path): Boolean = true }
    manager.list(new Path(path), acceptAll).map { s =>
      s"${s.getPath.getName}\t${s.getLen}\t${if (s.isDirectory) 1 else 0}\t${s.getModificationTime}"
    }.mkString("\n")
  }

  /** Forget this JVM's store-check verdicts ([[StoreCheck]]): for tests that start as a new JVM would. */
  def forgetStoreVerdicts(): Unit = StoreCheck.forget()

  /** The write id of a stream of [[DirectWriteCheckpointFileManager]], or "" for other streams. */
  def writeId(stream: AnyRef): String = stream match {
    case s: DirectWriteOutputStream => s.writeId
    case _ => ""
  }

  /** Every class name the exception is an instance of (class, superclasses), one per line. */
  def exceptionTypes(t: Throwable): String = {
    val names = List.newBuilder[String]
    var c: Class[_] = t.getClass
    while (c != null) {
      names += c.getName
      c = c.getSuperclass
    }
    names.result().mkString("\n")
  }
}
