package io.checkpointfs.spark
package direct

import java.util.Locale

import org.apache.hadoop.conf.Configuration

/**
 * The direct manager's settings (Python's `checkpointfs.direct.options`), read from the Hadoop configuration once
 * they passed [[SettingsCheck]] (defaults from protocol.json's settings table): how a cancel is carried out
 * (`checkpointfs.cancel.strategy`, `abort` or `close-then-delete`; `checkpointfs.cancel.delete.attempts`), the
 * schemes left to Spark's own manager (`checkpointfs.rename.schemes`), whether the store check runs
 * (`checkpointfs.store.check`), how `exists()` probes (`checkpointfs.exists.probe`, [[Probes]]) and whether `s3://`
 * on a file system other than S3A (EMRFS) is written through the shim's own S3A (`checkpointfs.s3.own.s3a`).
 */
private[spark] final case class Options(abortOnCancel: Boolean, deleteAttempts: Int, renameSchemes: Set[String],
    storeCheck: Boolean = true, probeMode: String = Probes.LogOrderMode, ownS3A: Boolean = true)

private[spark] object Options {
  val CancelStrategyKey = "checkpointfs.cancel.strategy"
  val DeleteAttemptsKey = "checkpointfs.cancel.delete.attempts"
  val RenameSchemesKey = "checkpointfs.rename.schemes"
  val OwnS3AKey = "checkpointfs.s3.own.s3a"
  /** The schemes trusted for atomic rename unless `checkpointfs.rename.schemes` says otherwise (protocol.json). */
  val DefaultRenameSchemes: String = SettingsCheck.setting(RenameSchemesKey).default.get

  private def text(conf: Configuration, key: String): String =
    conf.getTrimmed(key, SettingsCheck.setting(key).default.get).toLowerCase(Locale.ROOT)

  def apply(conf: Configuration): Options = {
    val schemes = conf.getTrimmedStrings(RenameSchemesKey, DefaultRenameSchemes.split(","): _*)
      .map(_.toLowerCase(Locale.ROOT)).filter(_.nonEmpty).toSet
    new Options(text(conf, CancelStrategyKey) == "abort", text(conf, DeleteAttemptsKey).stripPrefix("+").toInt,
      schemes, text(conf, Protocol.StoreCheckKey) == "true", Probes.mode(conf.get(Probes.ModeKey, Probes.LogOrderMode)),
      text(conf, OwnS3AKey) == "true")
  }
}
