package io.checkpointfs.spark
package store

import java.time.Instant

import org.apache.hadoop.fs.{Abortable, FileStatus, FSDataInputStream, Path}

/**
 * `inner` with the store check in front of its put-if-absent writes ([[StoreCheck]]; Python's
 * `checkpointfs.store.check.CheckedStore`): before a create-if-absent, the check of `plan.first` (once per JVM and
 * store, the canary in the file's directory); and before the write that takes such a file past `plan.limit` bytes,
 * where the store starts its large upload, the check of `plan.large`. Both run on the thread that writes, as part of
 * its create call (their requests are the call's). Overwrites and everything else pass straight through.
 */
private[spark] final class CheckedStore(val inner: DirectStore, plan: StoreCheck.Plan) extends DirectStore {

  override def describe: String = inner.describe
  override def identity: StoreIdentity = inner.identity

  override def create(path: Path, overwrite: Boolean, writeId: String): Upload =
    if (overwrite) inner.create(path, overwrite, writeId)
    else {
      val dirKey = DirectStore.parentOf(DirectStore.keyOf(path))
      StoreCheck.ensure(plan.first, identity, plan.requests, dirKey, path.toString)
      new CheckedStore.Gate(inner.create(path, overwrite, writeId), plan.limit,
        () => StoreCheck.ensure(plan.large, identity, plan.requests, dirKey, path.toString))
    }

  override def put(path: Path, file: java.io.File, writeId: String): Boolean = inner.put(path, file, writeId)
  override def uploads(path: Path): Seq[(String, Option[Instant])] = inner.uploads(path)
  override def abort(path: Path, uploadId: String): Unit = inner.abort(path, uploadId)
  override def head(path: Path): Option[String] = inner.head(path)
  override def kept(path: Path): Option[Kept] = inner.kept(path)
  override def exists(path: Path, file: Boolean): Boolean = inner.exists(path, file)
  override def list(dir: Path): Array[FileStatus] = inner.list(dir)
  override def open(path: Path, length: Option[Long]): FSDataInputStream = inner.open(path, length)
  override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] = inner.readListed(status)
  override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit = inner.delete(path, listed, file)

  override def toString: String = s"CheckedStore($inner)"
}

private[spark] object CheckedStore {
  /** `upload`, running `check` once, before the write that takes it past `limit` bytes. */
  private[spark] final class Gate(upload: Upload, limit: Long, check: () => Unit) extends Upload {
    private var count = 0L
    private var checked = false

    private def before(len: Long): Unit = {
      if (!checked && count + len > limit) {
        check()
        checked = true
      }
      count += len
    }

    override def write(b: Int): Unit = {
      before(1)
      upload.write(b)
    }

    override def write(b: Array[Byte], off: Int, len: Int): Unit = {
      before(len.toLong)
      upload.write(b, off, len)
    }

    override def flush(): Unit = upload.flush()
    override def close(): Unit = upload.close()
    override def abort(): Abortable.AbortableResult = upload.abort()
    override def startedMultipart: Boolean = upload.startedMultipart
    override def sentAtClose: Option[Sent] = upload.sentAtClose
    override def hasCapability(capability: String): Boolean = upload.hasCapability(capability)
    override def toString: String = upload.toString
  }
}
