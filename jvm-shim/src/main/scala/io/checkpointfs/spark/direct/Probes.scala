package io.checkpointfs.spark
package direct

import java.util.Locale

import org.apache.hadoop.fs.Path
import org.slf4j.{Logger, LoggerFactory}

/**
 * How [[DirectWriteCheckpointFileManager]] answers `exists()` with the fewest requests S3 allows (docs/contract.md,
 * "exists: the probe rule"; Python's `checkpointfs.direct.probes` states the same rule).
 *
 * `CheckpointFileManager.exists()` means "a file or a directory is at this path". On S3 a file is one HEAD; a
 * directory is only a key prefix, so after a 404 a full probe sends one LIST as well. The LIST is skipped only where
 * the path cannot be a directory Spark asks about: a path strictly below the manager's root whose name is one Spark
 * gives only to files ([[isFileName]]) and that is not a directory this manager has seen.
 *
 * Every `CheckpointFileManager.exists()` call of Spark 3.5, 4.0, 4.1, 4.2 and 4.3, read off the bytecode of their
 * pyspark jars (3.5.9, 4.0.5, 4.1.4, 4.2.1, 4.3.0; the Kafka connector has none of its own) and the sources of
 * the same call sites, asks one of the following ("3.5-4.1": those lines only; "4.2+": 4.2 and 4.3; no mark: every
 * line):
 *
 *  - the manager's root, or a path above or beside it (full probe): HDFSMetadataLog's constructor (4.2+: not when
 *    read-only), `listBatches` and `listBatchesOnDisk` (4.2+), all `exists(metadataPath)`;
 *    HDFSBackedStateStoreProvider.createBaseDirIfNotExists (4.3); SnapshotLoaderHelper.getEligibleSnapshotsForVersion
 *    (4.2+, the state store's directory); RocksDBFileManager's root checks: `getLatestVersion` and
 *    `getLatestSnapshotVersion(version)`, `saveCheckpointToDfs` and `getChangeLogWriter` (3.5-4.1),
 *    `existsSnapshotFile` and `getLatestSnapshotVersionAndUniqueIdFromLineage` (4.0, 4.1),
 *    `createDfsRootDirIfNotExist`, `getLatestSnapshotVersion()` and `getSnapshotVersionsAndUniqueIdsFromLineage`
 *    (4.2+), `listDfsFilesForDiagnostics` (4.3); StateSchemaCompatibilityChecker (4.0+), whose manager's root is a
 *    schema file (`<partition>/_metadata/schema`, or transformWithState's newest
 *    `_stateSchema/<store>/<batch>_<uuid>`), asks that file (`getExistingKeyAndValueSchema`, `readSchemaFiles`),
 *    4.2+ its parent first (and in its constructor) and, in `readSchemaFiles`, the older schema files beside it;
 *    StreamStreamJoinStateHelper.usesVirtualColumnFamilies (4.1+, the state data source reading a join: its root is
 *    the schema file it asks); IncrementalExecution.checkOperatorValidWithMetadata (4.0+: `<checkpoint>/state`, on
 *    a manager made for it); OperatorStateMetadataV2Reader (4.0+: `listOffsets` asks `<checkpoint>/offsets`, its
 *    root; `listOperatorMetadataBatches`, and 4.2+ its constructor, ask `_metadata/v2`, its root, and `_metadata`);
 *    ResolveWriteToStream's check of the checkpoint's escaped legacy twin.
 *  - a path below the root named other than a file ([[isFileName]] is false: full probe), all directories but one:
 *    StateSchemaCompatibilityChecker.check (3.5 only: its manager is made for the store's directory, `state/<op>/0`
 *    or `state/<op>/0/<store>`, and it asks the schema file `_metadata/schema` below it); ResolveWriteToStream
 *    (`<root>/offsets`); MicroBatchExecution.verifyNewCheckpointDirectory (4.1+: `<root>/offsets`, `state`,
 *    `commits`); RocksDBFileManager.deleteOldVersions (`<root>/SSTs`, `<root>/logs`); the state data source's
 *    StateMetadataPartitionReader (4.0+: `<root>/commits`, `<root>/state/<op>/_metadata/v2`).
 *  - a file below the root (a file probe, one HEAD): HDFSMetadataLog.addNewBatchByStream and
 *    applyFnToBatchByStream (`get`), AsyncOffsetSeqLog and AsyncCommitLog of async progress tracking (`<root>/<batch>`,
 *    `<batch>.compact`); StreamMetadata.read (`<root>/metadata`); OperatorStateMetadataV1Writer (4.0+:
 *    `_metadata/metadata`) and OperatorStateMetadataV2Writer (4.0+: `_metadata/v2/<batch>`), both on a manager made
 *    for `state/<op>`; RocksDBFileManager.getLatestSnapshotVersion(version) (`<version>.zip`) and
 *    existsSnapshotFile (4.0+: `<version>.zip`, `<version>_<id>.zip`); ChecksumCheckpointFileManager (4.1+, around a
 *    state store's manager when `spark.sql.streaming.checkpoint.fileChecksum.enabled`: by default on 4.1, only with
 *    state checkpoint format v2 on 4.2+) passes `exists()` through and, before a create with
 *    `skipCreationIfFileMissingChecksum`, asks the state file (`<version>.delta`, `.zip`, ...) and, when it is
 *    there, its `.crc`: on 4.1 every state file is asked once before it is written.
 *
 * Real-time mode (4.1+) and the Kafka source ask through the same metadata logs. Spark's own
 * CheckpointFileManager.RenameBasedFSDataOutputStream also calls `exists()`, but on its own manager. No call of any
 * line asks `exists()` of a directory with a file's name below its manager's root: the numbered directories
 * `sources/<i>`, `state/<op>` and `state/<op>/<partition>` are only ever the root of the manager that asks (or lie
 * above it), and transformWithState's schema files, named `<batch>_<uuid>`, are not taken for file names at all.
 * The end-to-end tests check this on every line (tests/spark_e2e/probes.py reads the DEBUG records of [[record]]).
 * One more answer needs no request (mode `log-order`, the default): `exists(<dir>/N)` of a metadata-log batch
 * (`N` or `N.compact`) below the manager's root (Spark's logs: `<root>/N`) is false when this manager published
 * batch `N-1` (or `N-1.compact`) beside it with put-if-absent and has not deleted it since, and the store check is
 * on. Spark writes a
 * log's batches in order, so with one writer `N` is absent then. The only callers that ask about `N` right after
 * writing `N-1` are the adds of HDFSMetadataLog, AsyncOffsetSeqLog and AsyncCommitLog (every line; no `get` of
 * `N` follows the same manager's add of `N-1`): when another writer has `N` already, the put-if-absent that follows
 * fails with FileAlreadyExistsException and the query stops with Spark's error, as it stops when `exists()` says
 * true (a concurrent writer either way; only the error's class differs). The store check makes sure that
 * put-if-absent is refused; with `checkpointfs.store.check=false` this answer is not given.
 * ContinuousExecution ignores `add`'s answer, so there a second writer stops the query instead of letting it go on
 * silently. docs/contract.md ("exists: the probe rule") has the audit of every call site.
 *
 * A directory this manager made (`mkdirs`, which sends no request), or a parent of one, is present with no request
 * until this manager deletes it or a parent of it: on an object store an empty directory is nothing, and Spark
 * (its own CheckpointFileManagerTests among others) expects `exists()` of a directory it has just made to be true,
 * as on a file system. Spark's own callers that make a directory and ask about it later (4.3: HDFSMetadataLog's
 * constructor, then `listBatches`; RocksDBFileManager's `createDfsRootDirIfNotExist`, then `getLatestVersion`;
 * OperatorStateMetadataV2Reader; StateSchemaCompatibilityChecker, whose directory is its root's parent) then get
 * HDFS's answer, true, and go on to list it, instead of a HEAD and a LIST that found nothing.
 *
 * `checkpointfs.exists.probe=file-names` sends the HEAD for those batches again (the rule without this answer);
 * `full` makes every `exists()` a full probe, as S3A's `exists()`.
 */
private[spark] object Probes {
  /**
   * Hadoop setting: `log-order` (default: the rule above with the next batch answered from what this manager
   * wrote), `file-names` (the rule, a HEAD for every file) or `full` (HEAD, then LIST, for every path).
   */
  val ModeKey = "checkpointfs.exists.probe"
  val LogOrderMode = "log-order"
  val FileNamesMode = "file-names"
  val FullMode = "full"

  /**
   * Logger of every `exists()` answer ([[record]]), at DEBUG only: enable it alone (log4j2
   * `logger.probes.name = io.checkpointfs.spark.Probes`, `logger.probes.level = debug`) to see them.
   */
  val LoggerName = "io.checkpointfs.spark.Probes"
  private val log: Logger = LoggerFactory.getLogger(LoggerName)

  /**
   * Probe kinds of a record: answered from memory (no request), the next batch of a log this manager writes (no
   * request), one HEAD, HEAD then LIST, Spark's own manager.
   */
  val KnownProbe = "known"
  val NextBatchProbe = "next"
  val FileProbe = "file"
  val FullProbe = "full"
  val DelegatedProbe = "delegated"

  /** Whether [[record]] writes anything (the logger is at DEBUG). */
  def recording: Boolean = log.isDebugEnabled

  /**
   * One `exists()` answer, at DEBUG: `checkpointfs.exists probe=<kind> answer=<true|false> path=<uri> root=<uri>`,
   * the paths as encoded URIs (no spaces or quotes) without any user info, `root` the manager's.
   */
  def record(root: Path, path: Path, probe: String, answer: Boolean): Unit =
    if (log.isDebugEnabled) {
      log.debug(s"checkpointfs.exists probe=$probe answer=$answer path=${shown(path)} root=${shown(root)}")
    }

  private def shown(path: Path): String = {
    val uri = path.toUri
    if (uri.getRawUserInfo == null) uri.toString
    else new java.net.URI(uri.getScheme, null, uri.getHost, uri.getPort, uri.getPath, uri.getQuery, uri.getFragment)
      .toString
  }

  private val BatchFile = java.util.regex.Pattern.compile(Protocol.LogBatchName)
  private val StateFile = java.util.regex.Pattern.compile(Protocol.StateFileName)

  /**
   * Names Spark gives only to files (protocol.json `file_names`): metadata-log batches (`12`, `12.compact`), state
   * store files (`12.delta`, `12.snapshot`, `12.zip`, `12_<id>.zip`, `12.changelog`, `12_<id>.changelog`),
   * `metadata`, and checksum files (`*.crc`).
   */
  def isFileName(name: String): Boolean =
    isLogBatchName(name) || StateFile.matcher(name).matches() || Protocol.ExactFileNames.contains(name) || {
      val suffix = Protocol.ChecksumSuffix
      name.length > suffix.length && name.toLowerCase(Locale.ROOT).endsWith(suffix)
    }

  /**
   * Names of metadata-log batch files (`12`, `12.compact`): the only files whose bytes a manager keeps after
   * publishing them, since Spark reads them back (the file source its batch). A state store never reads back its
   * own files in steady state, and an executor holds one manager per state store partition.
   */
  def isLogBatchName(name: String): Boolean = BatchFile.matcher(name).matches()

  /**
   * The batch files before the log batch `name` (`N` or `N.compact`): `N-1` and `N-1.compact`; empty for batch 0
   * or a name that is not a log batch.
   */
  def previousBatches(name: String): Seq[String] =
    if (!isLogBatchName(name)) Nil
    else {
      val digits = name.stripSuffix(".compact")
      val batch = try BigInt(digits) catch { case _: NumberFormatException => BigInt(0) }
      if (batch <= 0) Nil else { val before = (batch - 1).toString; Seq(before, before + ".compact") }
    }

  /**
   * How `exists()` of the qualified `path` is answered (plans of tests/protocol/golden_probes.json, which Python's
   * `checkpointfs.direct.probes.exists_plan` follows too): [[KnownProbe]] (present, no request: a file this manager
   * published, a directory it made, or a parent of one, [[Knowledge]]), [[NextBatchProbe]]
   * (absent, no request), [[FileProbe]] (the store's file probe: one HEAD) or [[FullProbe]] (HEAD, then a one-entry
   * LIST when no file is there), for a manager serving `root` that knows `known`, in `mode` ([[ModeKey]]), with the
   * store check on or off.
   */
  def existsPlan(known: Knowledge, root: Path, path: Path, mode: String, storeCheck: Boolean): String = {
    val full = mode == FullMode
    val below = isBelow(root, path)
    if (!full && (known.isPublished(path) || known.isMade(path))) KnownProbe
    else if (mode == LogOrderMode && storeCheck && below && known.isNextBatch(path)) NextBatchProbe
    else if (!full && below && isFileName(path.getName) && !known.isDirectory(path)) FileProbe
    else FullProbe
  }

  /** Whether `path` lies strictly below `root` (both qualified). */
  def isBelow(root: Path, path: Path): Boolean = {
    var parent = path.getParent
    while (parent != null && parent != root) parent = parent.getParent
    parent != null
  }

  /** The mode of `value` (the setting's value), refused with the setting's name when unknown. */
  def mode(value: String): String = value.trim.toLowerCase(Locale.ROOT) match {
    case m @ (LogOrderMode | FileNamesMode | FullMode) => m
    case other => throw new IllegalArgumentException(
      s"$ModeKey must be '$LogOrderMode', '$FileNamesMode' or '$FullMode', got '$other'")
  }
}
