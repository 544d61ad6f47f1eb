package io.checkpointfs.spark
package store
package s3

import org.apache.hadoop.fs.FileSystem

/**
 * Every call the shim makes into S3A (hadoop-aws) beyond the `FileSystem` API, named in one place. Tested against the
 * hadoop-aws of each line (checkpointfs/spark/lines.py): 3.3.4 with AWS SDK 1.12.262 (Spark 3.5), 3.4.1 with SDK
 * 2.24 (Spark 4.0), 3.4.2 with SDK 2.29.52 (Spark 4.1) and 3.5.0 with SDK 2.35.4 (Spark 4.2, 4.3).
 *
 * Here, without loading S3A's classes: the S3A file system class, matched by name ([[isS3A]]). (The shim lists and
 * aborts multipart uploads with its own requests, through the S3 client below, not through S3A's
 * `listMultipartUploads`.) S3A's public `FileSystem` API (`createFile` with its options, `hasPathCapability`,
 * `openFile`, IOStatistics) is called where it is used, in this folder and [[FileSystemStore]].
 *
 * Compiled against each line's hadoop-aws, in the line's own source folder (the same package): S3A's S3 client and
 * its request factory, `getAmazonS3ClientForTesting` (3.3.4: `SdkV1.uploader`, src/spark35) and
 * `getS3AInternals().getAmazonS3Client` (3.4+: `SdkV2Uploader.apply`, src/sdkv2), `getRequestFactory()` and the
 * factory's builders (whose multipart signatures change in 3.4.2: `MultipartRequests`, src/spark40 and src/spark41).
 */
private[spark] object S3A {
  private val S3AClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"

  /** Whether `fs` is S3A or a subclass (such as [[CheckpointS3AFileSystem]]), without loading S3A's classes. */
  def isS3A(fs: FileSystem): Boolean =
    Iterator.iterate[Class[_]](fs.getClass)(_.getSuperclass).takeWhile(_ != null).exists(_.getName == S3AClass)
}
