package io.checkpointfs.spark
package store

import java.io.IOException
import java.time.Instant

import org.apache.hadoop.fs.{FileStatus, FSDataInputStream, Path}

/**
 * `inner` with the two refusals a new checkpoint meets first said plainly, whatever the store and whichever of its
 * requests meets them (the store check's canary, a probe, a listing): a missing bucket or container becomes a
 * [[BucketNotFoundException]] ("<path>: the bucket 'b' does not exist ..."), refused credentials a
 * [[CredentialsRefusedException]] ("<path>: the store refused the credentials ..."), each with the store's own
 * failure as its cause and its first line quoted. Which failure is which is the protocol's answer table's call
 * ([[Failures.classify]]: error `BucketNotFoundError` or `AccessDeniedError`); a 404 to a write can only mean a
 * missing bucket (GCS names it no otherwise). Every other failure, and every interruption, passes unchanged; so do
 * the upload's own requests at `close()` (after the store check, which sends the first write to a bucket, passed).
 */
private[spark] final class NamedRefusals(val inner: DirectStore) extends DirectStore {

  override def describe: String = inner.describe
  override def identity: StoreIdentity = inner.identity

  override def create(path: Path, overwrite: Boolean, writeId: String): Upload =
    said(path, "put", write = true)(inner.create(path, overwrite, writeId))
  override def put(path: Path, file: java.io.File, writeId: String): Boolean =
    said(path, "put", write = true)(inner.put(path, file, writeId))
  override def uploads(path: Path): Seq[(String, Option[Instant])] = said(path, "list_uploads")(inner.uploads(path))
  override def abort(path: Path, uploadId: String): Unit = said(path, "abort_upload")(inner.abort(path, uploadId))
  override def head(path: Path): Option[String] = said(path, "head")(inner.head(path))
  override def kept(path: Path): Option[Kept] = said(path, "head")(inner.kept(path))
  override def exists(path: Path, file: Boolean): Boolean = said(path, "head")(inner.exists(path, file))
  override def list(dir: Path): Array[FileStatus] = said(dir, "list")(inner.list(dir))
  override def open(path: Path, length: Option[Long]): FSDataInputStream = said(path, "get")(inner.open(path, length))
  override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] =
    said(status.getPath, "get")(inner.readListed(status)).map(read => () => said(status.getPath, "get")(read()))
  override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit =
    said(path, "delete")(inner.delete(path, listed, file))

  /** `call`, a `request` (a kind of protocol.json `permissions`) for `path`, with its refusals said plainly. */
  private def said[T](path: Path, request: String, write: Boolean = false)(call: => T): T =
    try call
    catch { case e: IOException => throw NamedRefusals.named(e, path, identity, write, request) }

  override def toString: String = s"NamedRefusals($inner)"
}

private[spark] object NamedRefusals {
  val BucketNotFound = "BucketNotFoundError"
  val AccessDenied = "AccessDeniedError"

  /**
   * `e`, a failure of a request for `path` on `store` (`write`: a put or create), said plainly when it is a missing
   * bucket or refused credentials; else `e` itself.
   */
  def named(e: IOException, path: Path, store: StoreIdentity, write: Boolean, request: String = ""): IOException =
    e match {
      case _: BucketNotFoundException | _: CredentialsRefusedException => e
      case _ if Failures.isInterruption(e) => e
      case _ =>
        val answer = Failures.classify(e)
        val answered = Failures.chain(e).iterator.map(_.toString).flatMap(_.linesIterator).find(_.trim.nonEmpty)
          .getOrElse(e.getClass.getName)
        if (answer.error == BucketNotFound || (write && answer.name == Protocol.NotFound)) {
          new BucketNotFoundException(s"$path: the ${store.noun} '${store.bucket}' does not exist (at ${store.where}). " +
            s"Create it, or correct the path. The store answered: $answered", e)
        } else if (answer.error == AccessDenied) {
          new CredentialsRefusedException(path.toString, s"the store refused the credentials for the ${store.noun} " +
            s"'${store.bucket}' (at ${store.where}): a wrong, expired or revoked key, or one without permission there" +
            s"${Permissions.grant(path.toString, request, store.bucket)}. The store answered: $answered", e)
        } else e
    }
}
