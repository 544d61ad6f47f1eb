package io.checkpointfs.spark
package store
package s3

import java.lang.reflect.InvocationTargetException
import java.time.Instant

import org.apache.hadoop.fs.FileSystem

/**
 * Every call the shim makes into S3A (hadoop-aws) beyond the `FileSystem` API, in one place. Tested against the
 * hadoop-aws of each line (checkpointfs/spark/lines.py): 3.3.4 with AWS SDK 1.12.262 (Spark 3.5), 3.4.1 with SDK
 * 2.24 (Spark 4.0), 3.4.2 with SDK 2.29.52 (Spark 4.1) and 3.5.0 with SDK 2.35.4 (Spark 4.2, 4.3).
 *
 * By reflection here (their signatures name SDK types, which differ between SDK v1 and v2):
 *  - the S3A file system class, matched by name ([[isS3A]]);
 *  - `S3AFileSystem.listMultipartUploads(prefix)` and `abortMultipartUpload(key, uploadId)` (public, marked
 *    `@InterfaceAudience.Private`), and the `key()`, `uploadId()`, `initiated()` of each upload it lists.
 *
 * Compiled against each line's hadoop-aws, in the line's own source folder (the same package): S3A's S3 client and
 * its request factory, `getAmazonS3ClientForTesting` (3.3.4: `SdkV1.store`, src/spark35) and
 * `getS3AInternals().getAmazonS3Client` (3.4+: `SdkV2Uploader.apply`, src/sdkv2), `getRequestFactory()` and the
 * factory's builders (whose multipart signatures change in 3.4.2: `MultipartRequests`, src/spark40 and src/spark41).
 */
private[spark] object S3A {
  private val S3AClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"

  /** Whether `fs` is S3A or a subclass (such as [[CheckpointS3AFileSystem]]), without loading S3A's classes. */
  def isS3A(fs: FileSystem): Boolean =
    Iterator.iterate[Class[_]](fs.getClass)(_.getSuperclass).takeWhile(_ != null).exists(_.getName == S3AClass)

  /** The open multipart uploads of exactly `key` (S3A lists those below its parent): (upload id, initiated). */
  def listUploads(fs: FileSystem, key: String): Seq[(String, Option[Instant])] = {
    val uploads = unwrapped(fs.getClass.getMethod("listMultipartUploads", classOf[String])
      .invoke(fs, DirectStore.parentOf(key))).asInstanceOf[java.util.List[AnyRef]]
    val out = Seq.newBuilder[(String, Option[Instant])]
    uploads.forEach { upload =>
      if (invoke[String](upload, "key") == key) {
        out += ((invoke[String](upload, "uploadId"), Option(invoke[Instant](upload, "initiated"))))
      }
    }
    out.result()
  }

  /** Abort one multipart upload; FileNotFoundException when it is gone. */
  def abortUpload(fs: FileSystem, key: String, uploadId: String): Unit =
    unwrapped(fs.getClass.getMethod("abortMultipartUpload", classOf[String], classOf[String]).invoke(fs, key, uploadId))

  private def invoke[T](target: AnyRef, method: String): T =
    target.getClass.getMethod(method).invoke(target).asInstanceOf[T]

  private def unwrapped(call: => AnyRef): AnyRef =
    try call
    catch { case e: InvocationTargetException if e.getCause != null => throw e.getCause }
}
