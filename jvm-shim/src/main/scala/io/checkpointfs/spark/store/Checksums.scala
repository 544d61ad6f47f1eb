package io.checkpointfs.spark
package store

import java.security.MessageDigest
import java.util.Base64

/**
 * The checksums S3 keeps of an object (`x-amz-checksum-*`), as the shim and Python name them: `<algorithm>:<base64>`
 * (Python's `ObjectMeta.checksum`), so that one taken from a head compares with one computed of what a writer sent.
 */
private[spark] object Checksums {
  /** The SHA-256 of `data[0, len)`, as `sha256:<base64>` (Python's `S3Store.checksum`). */
  def sha256(data: Array[Byte], len: Int): String = {
    val digest = MessageDigest.getInstance("SHA-256")
    digest.update(data, 0, len)
    "sha256:" + Base64.getEncoder.encodeToString(digest.digest())
  }

  /** The base64 value of `checksum` when it is of `algorithm` (what the request header carries). */
  def value(checksum: String, algorithm: String): Option[String] =
    if (checksum.startsWith(algorithm + ":")) Some(checksum.substring(algorithm.length + 1)) else None

  /** The first checksum a head carried, by algorithm (null or "": not carried), named; "" for none. */
  def named(carried: Seq[(String, String)]): String =
    carried.collectFirst { case (name, v) if v != null && v.nonEmpty => s"$name:$v" }.getOrElse("")
}
