package io.checkpointfs.spark
package store

/**
 * The store permissions each request of a writer needs (protocol.json `permissions`, compiled into
 * [[Protocol.Permissions]]), and how a refusal names them: [[needs]] words the missing permission and the bucket
 * exactly as Python's `checkpointfs.protocol.permissions.needs` does (tests/protocol/golden_permissions.json).
 */
private[spark] object Permissions {
  private val Schemes: Map[String, String] = Map("s3" -> "s3", "s3a" -> "s3", "s3n" -> "s3", "gs" -> "gcs",
    "az" -> "azure", "abfs" -> "azure", "abfss" -> "azure", "wasb" -> "azure", "wasbs" -> "azure")

  /** The store family of `uri` by its scheme (None for one the table does not cover). */
  def familyOf(uri: String): Option[String] = {
    val at = uri.indexOf("://")
    if (at < 0) None else Schemes.get(uri.substring(0, at).toLowerCase(java.util.Locale.ROOT))
  }

  /** The permissions `request` needs on a store of `family` (empty: none of its own, or unknown). */
  def actions(family: String, request: String): Seq[String] =
    Protocol.Permissions.get(family).flatMap(_.get(request)).getOrElse(Nil)

  /**
   * What to grant for `request` on `bucket` of a store of `family`, as a refusal says it ("" when the table names
   * nothing). A head on S3 names s3:ListBucket too: without it S3 answers a HEAD of a missing key 403.
   */
  def needs(family: String, request: String, bucket: String): String = {
    val granted = actions(family, request)
    if (granted.isEmpty) return ""
    val missing = actions(family, request + "_missing")
    s"grant ${granted.mkString(" and ")} on bucket '$bucket'" +
      (if (missing.isEmpty) "" else s", and ${missing.mkString(" and ")} (without it a $request of a missing key is " +
        "answered 403, not 404)")
  }

  /** `" (grant ...)"` for a refusal of `request` on `uri` in `bucket`, or "" when the table names nothing. */
  def grant(uri: String, request: String, bucket: String): String =
    familyOf(uri).map(needs(_, request, bucket)).filter(_.nonEmpty).map(t => s" ($t)").getOrElse("")
}
