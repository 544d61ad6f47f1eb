package io.checkpointfs.spark
package store

import java.time.Instant

/**
 * The requests every store's direct write sends itself, through the client its connector configured (credentials,
 * endpoint, retries): one object in one request, the write id read back, a delete. Failures are IOExceptions as the
 * connector makes them (S3A's `translateException`: its kinds for throttling, access denied, a missing bucket, 404).
 * Each store adds its large upload: S3's multipart requests ([[MultipartUploader]]), GCS's resumable upload and
 * Azure's blocks ([[LargeUploadRequests]]).
 */
private[spark] trait ConditionalUploader {
  /** One object of `data[0, len)` with the write id in its metadata; put-if-absent when `ifNoneMatch`. */
  def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit
  /** One object of the local `file` (read from it, not held in memory), unconditional, the write id in metadata. */
  def putFile(key: String, file: java.io.File, writeId: String): Unit
  /** The write id in the object's metadata (None: no object; Some(""): no id). */
  def writeId(key: String): Option[String]
  /**
   * The checksum [[put]] sends with `data[0, len)` and the store keeps, as [[Kept]] names it (`sha256:<base64>`; ""
   * when this store sends none): Python's `ObjectStore.checksum`.
   */
  def checksum(data: Array[Byte], len: Int): String = ""
  /** [[put]] with `checksum` (from [[checksum]]) sent along, where the store takes one. */
  def put(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String, checksum: String): Unit =
    put(key, data, len, ifNoneMatch, writeId)
  /**
   * What the store kept of the object: its write id, and where the store keeps checksums, the checksum and size that
   * settle a lost answer when it kept no write id (None: no object).
   */
  def kept(key: String): Option[Kept] = writeId(key).map(Kept(_, "", -1L))
  /** Delete `key` (no error when it is absent). */
  def delete(key: String): Unit
}

/**
 * S3's multipart requests (S3 and the stores that speak its API), sent through the S3 client S3A configured.
 * Implemented per AWS SDK in each jar group's `compat` package.
 */
private[spark] trait MultipartUploader extends ConditionalUploader {
  /** CreateMultipartUpload with the write id in user metadata; the upload id. */
  def startMultipart(key: String, writeId: String): String
  /** UploadPart; the part's ETag. */
  def uploadPart(key: String, uploadId: String, partNumber: Int, data: Array[Byte], len: Int): String
  /** CompleteMultipartUpload of `etags` (parts 1..n); `If-None-Match: *` when `ifNoneMatch`. */
  def complete(key: String, uploadId: String, etags: Seq[String], ifNoneMatch: Boolean): Unit
  def abort(key: String, uploadId: String): Unit
  /** ListMultipartUploads of exactly `key`: (upload id, initiated). */
  def uploads(key: String): Seq[(String, Option[Instant])]
}

private[spark] object MultipartUploader {
  /**
   * Whether S3 bucket `bucket` is a directory bucket (S3 Express One Zone), by its name: it ends in
   * [[Protocol.DirectoryBucketSuffix]]. The twin of Python's `checkpointfs.paths.is_directory_bucket`.
   */
  def isDirectoryBucket(bucket: String): Boolean = bucket.endsWith(Protocol.DirectoryBucketSuffix)

  /**
   * The prefix the open uploads of `key` in `bucket` are listed by (then filtered to the key): the key itself, since
   * MinIO lists the uploads of an exact object name only; its directory, ending in `/` ("" at the root), in a
   * directory bucket ([[isDirectoryBucket]]), which takes only such prefixes. The twin of Python's `uploads_prefix`.
   */
  def uploadsPrefix(bucket: String, key: String): String =
    if (!isDirectoryBucket(bucket)) key
    else key.lastIndexOf('/') match {
      case -1 => ""
      case i => key.substring(0, i + 1)
    }
}

/**
 * The requests of a store whose large files go as one upload of its own rather than S3's multipart requests (GCS's
 * resumable upload, Azure's Put Blocks and one Put Block List): the store check sends it over its canary.
 */
private[spark] trait LargeUploadRequests extends ConditionalUploader {
  /** `data[0, len)` as the store's large upload, with the write id; conditional (put-if-absent) when `ifNoneMatch`. */
  def putLargeBytes(key: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Unit
}

/**
 * The requests of a store whose creates tell which version of the object they made (GCS's generation), so that the
 * store check deletes its canary with one request, conditional on that version.
 */
private[spark] trait VersionedRequests extends ConditionalUploader {
  /** The version the last create of this thread made (-1: unknown, or none). */
  def lastVersion: Long

  /** Delete `key` while it is still `version` (one request); whatever is there when it was replaced since. */
  def deleteVersion(key: String, version: Long): Unit
}
