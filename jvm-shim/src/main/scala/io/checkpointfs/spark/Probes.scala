package io.checkpointfs.spark

import java.util.Locale

import org.apache.hadoop.fs.Path

/**
 * How [[DirectWriteCheckpointFileManager]] answers `exists()` with the fewest requests S3 allows (docs/contract.md,
 * "exists: the probe rule"; Python's `checkpointfs.s3.probes` states the same rule).
 *
 * `CheckpointFileManager.exists()` means "a file or a directory is at this path". On S3 a file is one HEAD; a
 * directory is only a key prefix, so after a 404 a full probe sends one LIST as well. The LIST is skipped only where
 * the path cannot be a directory Spark asks about: a path strictly below the manager's root whose name is one Spark
 * gives only to files ([[isFileName]]) and that is not a directory this manager has seen. Every
 * `CheckpointFileManager.exists()` call of Spark 3.5 and 4.3 (read off their spark-sql jars) asks one of:
 *
 *  - the manager's root, or a path above it (full probe): HDFSMetadataLog's constructor, `listBatches` and
 *    `listBatchesOnDisk` (`exists(metadataPath)`); HDFSBackedStateStoreProvider.createBaseDirIfNotExists;
 *    RocksDBFileManager's root checks (`createDfsRootDirIfNotExist`, `getLatestVersion`,
 *    `getLatestSnapshotVersion`, `existsSnapshotFile`, `getSnapshotVersionsAndUniqueIdsFromLineage`,
 *    `listDfsFilesForDiagnostics`, 3.5's `saveCheckpointToDfs` and `getChangeLogWriter`);
 *    SnapshotLoaderHelper.getEligibleSnapshotsForVersion; StateSchemaCompatibilityChecker (its manager's root is
 *    the schema file; it also asks the schema file's parent); IncrementalExecution.checkOperatorValidWithMetadata;
 *    OperatorStateMetadataV2Reader (`listOffsets`, `listOperatorMetadataBatches`: its root and the root's parent);
 *    ResolveWriteToStream's check of the checkpoint location itself.
 *  - a directory below the root, every one named other than a file ([[isFileName]] is false: full probe):
 *    ResolveWriteToStream (`<root>/offsets`), MicroBatchExecution.verifyNewCheckpointDirectory (`<root>/offsets`,
 *    `state`, `commits`), RocksDBFileManager.deleteOldVersions (`<root>/SSTs`, `<root>/logs`), the state data
 *    source's StateMetadataPartitionReader (`<root>/commits`, `<root>/state/<op>/_metadata/v2`).
 *  - a file below the root (a file probe, one HEAD): HDFSMetadataLog.addNewBatchByStream and
 *    applyFnToBatchByStream (`get`), AsyncOffsetSeqLog and AsyncCommitLog (`<root>/<batch>`, `<batch>.compact`);
 *    StreamMetadata.read (`<root>/metadata`); OperatorStateMetadataV1Writer (`_metadata/metadata`),
 *    OperatorStateMetadataV2Writer (`_metadata/v2/<batch>`); RocksDBFileManager.existsSnapshotFile
 *    (`<version>.zip`, `<version>_<id>.zip`); ChecksumCheckpointFileManager (4.3) passes its callers' paths and
 *    their `.crc` files through.
 *
 * Spark's own CheckpointFileManager.RenameBasedFSDataOutputStream also calls `exists()`, but on its own manager.
 * No call asks `exists()` of a directory with a file's name below its manager's root (the numbered directories
 * `sources/<i>` and `state/<op>/<partition>` are only ever the root of the manager that asks). Setting
 * `checkpointfs.exists.probe=full` makes every `exists()` a full probe, as S3A's `exists()`.
 */
private[spark] object Probes {
  /** Hadoop setting: `file-names` (default, the rule above) or `full` (HEAD, then LIST, for every path). */
  val ModeKey = "checkpointfs.exists.probe"
  val FileNamesMode = "file-names"
  val FullMode = "full"

  private val BatchFile = "[0-9]+(\\.compact)?".r
  private val StateFile = "[0-9]+(_[0-9A-Za-z-]+)?\\.(delta|snapshot|zip|changelog)".r

  /**
   * Names Spark gives only to files: metadata-log batches (`12`, `12.compact`), state store files (`12.delta`,
   * `12.snapshot`, `12.zip`, `12_<id>.zip`, `12.changelog`, `12_<id>.changelog`), `metadata`, and checksum files
   * (`*.crc`).
   */
  def isFileName(name: String): Boolean = name match {
    case BatchFile(_) | StateFile(_, _) | "metadata" => true
    case _ => name.toLowerCase(Locale.ROOT).endsWith(".crc") && name.length > 4
  }

  /**
   * Names of metadata-log batch files (`12`, `12.compact`): the only files whose bytes a manager keeps after
   * publishing them, since Spark reads them back (the file source its batch). A state store never reads back its
   * own files in steady state, and an executor holds one manager per state store partition.
   */
  def isLogBatchName(name: String): Boolean = BatchFile.pattern.matcher(name).matches()

  /** Whether `path` lies strictly below `root` (both qualified). */
  def isBelow(root: Path, path: Path): Boolean = {
    var parent = path.getParent
    while (parent != null && parent != root) parent = parent.getParent
    parent != null
  }

  /** The mode of `value` (the setting's value), refused with the setting's name when unknown. */
  def mode(value: String): String = value.trim.toLowerCase(Locale.ROOT) match {
    case m @ (FileNamesMode | FullMode) => m
    case other => throw new IllegalArgumentException(s"$ModeKey must be '$FileNamesMode' or '$FullMode', got '$other'")
  }
}
