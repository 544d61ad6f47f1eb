package io.checkpointfs.spark
package store

import java.util.Locale

import org.apache.hadoop.fs.{FileSystem, Path}

import io.checkpointfs.spark.compat.LineStore
import io.checkpointfs.spark.direct.Options
import io.checkpointfs.spark.store.azure.Abfs
import io.checkpointfs.spark.store.gcs.{GcsConnector, GcsDirectStore}
import io.checkpointfs.spark.store.s3.{OwnS3A, S3A}

/**
 * One function from a checkpoint root's file system and the shim's options to the store it is written to directly,
 * or the reason it is left to Spark's own manager ([[open]]; Python's `checkpointfs.store.registry`). Each store's
 * folder opens its own store: `s3a://` (and `s3://`, `s3n://` served by S3A) by the jar's line (`compat.LineStore`),
 * `gs://` with Google's connector by [[GcsDirectStore]], `abfs[s]://` by the line (the Azure store from Spark 4.1).
 */
private[spark] object Registry {

  /**
   * Why a checkpoint root is left to Spark's own manager. `meant`: the shim is meant to write it directly (`s3a`,
   * `gs://` on Google's connector, `abfs[s]://` on a flat-namespace account with a Shared Key) and could not (a
   * connector version that lacks a call the shim makes, a file system other than the one the scheme names): said
   * at WARN and counted ([[ShimMetrics.unexpectedDelegations]]). Otherwise the delegation is by design (another
   * scheme, a scheme listed in `checkpointfs.rename.schemes`, an account or line the shim does not write): INFO.
   */
  final case class Delegation(reason: String, meant: Boolean)

  /** Why a scheme other than S3A and Google's gs:// connector is delegated. */
  val OtherSchemeReason: String = "checkpointfs writes directly only S3A (scheme s3a, s3 and s3n served by " +
    "S3AFileSystem, and s3 on another file system through its own S3A), gs:// with Google's connector " +
    "(com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem) and, on Spark 4.1 and later, abfs[s]:// on a " +
    "flat-namespace account with a Shared Key, and leaves other file systems (wasb[s]:// included) to Spark, as " +
    "without checkpointfs"

  /** Why Hadoop 3.5's hadoop-gcp is delegated (docs/spark.md has the details). */
  val HadoopGcpReason: String = "Hadoop's own GCS connector (hadoop-gcp, Hadoop 3.5) offers no create without an " +
    "existence probe, cannot store a write id in the object's metadata (so an answer lost in transit could not be " +
    "settled) and keeps its storage client private; set fs.gs.impl=com.google.cloud.hadoop.fs.gcs." +
    "GoogleHadoopFileSystem (Google's gcs-connector) for direct writes on gs://"

  /** The scheme of `fs`, lower-cased ("" when it has none). */
  def schemeOf(fs: FileSystem): String = Option(fs.getUri.getScheme).getOrElse("").toLowerCase(Locale.ROOT)

  /**
   * The store the checkpoint root `path` on `fs` is written to directly, the store check in front of its
   * put-if-absent writes unless `checkpointfs.store.check=false`, a missing bucket and refused credentials said
   * plainly ([[NamedRefusals]]); or why it is left to Spark's manager. Throws a
   * [[CheckpointStoreConfigException]] where neither is safe (S3A with conditional writes turned off).
   */
  def open(path: Path, fs: FileSystem, options: Options): Either[Delegation, DirectStore] = {
    val scheme = schemeOf(fs)
    val opened: Either[Delegation, Opened] =
      if (options.renameSchemes.contains(scheme)) {
        Left(Delegation(s"the scheme is trusted for atomic rename (${Options.RenameSchemesKey})", meant = false))
      } else if (GcsConnector.isGoogleConnector(fs)) GcsDirectStore.open(fs).left.map(Delegation(_, meant = true))
      else if (GcsConnector.isHadoopGcp(fs)) Left(Delegation(HadoopGcpReason, meant = false))
      else if (Abfs.isAbfs(fs)) LineStore.openAzure(fs)
      else if (scheme == "s3" && !S3A.isS3A(fs) && !options.ownS3A)
        Left(Delegation(OwnS3A.offReason(fs), meant = false))
      else LineStore.open(fs, path).toRight(Delegation(OtherSchemeReason, meant = scheme == "s3a" || S3A.isS3A(fs)))
    opened.map(o => new NamedRefusals(if (options.storeCheck) new CheckedStore(o.store, o.check) else o.store))
  }

  /** A store as its folder opened it, with what the store check needs of it. */
  final case class Opened(store: DirectStore, check: StoreCheck.Plan)
}
