package io.checkpointfs.sparksuites;

import org.apache.hadoop.fs.Path;
import org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.CheckpointFileManagerTests;
import org.apache.spark.sql.execution.streaming.ChecksumCheckpointFileManagerSuite;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.ChecksumCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.ChecksumFile;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;
import org.scalatest.exceptions.TestFailedException;

import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * Spark's own suites (its test-jars, unmodified) on a store a test fixture started ({@link OnStore}), for Spark
 * 4.1 and later (the trait's package {@code ...streaming.checkpointing}): {@code CheckpointFileManagerTests} and
 * {@code ChecksumCheckpointFileManagerSuite}, each once per manager: the shim as Spark loads it
 * ({@code CheckpointFileManager.create} with {@code spark.sql.streaming.checkpointFileManagerClass}), and Spark's
 * own FileContext, FileSystem and abortable-stream (spark-hadoop-cloud) managers. Each class supplies only what the
 * suites leave abstract or bind to the local disk: the manager, a fresh directory on the store, the leak checks on
 * the store's listing. The twin for 3.5 and 4.0 is in src/streaming.
 */
public final class SparkSuitesOnStore {
  private SparkSuitesOnStore() {}

  /** The manager of {@code kind} for {@code path}: shim, filecontext, filesystem or abortable. */
  static CheckpointFileManager manager(String kind, Path path) {
    switch (kind) {
      case "shim": return CheckpointFileManager.create(path, OnStore.shimConf());
      case "filecontext": return new FileContextBasedCheckpointFileManager(path, OnStore.conf());
      case "filesystem": return new FileSystemBasedCheckpointFileManager(path, OnStore.conf());
      case "abortable": return new AbortableStreamBasedCheckpointFileManager(path, OnStore.conf());
      default: throw new IllegalArgumentException("unknown manager " + kind);
    }
  }

  static void failIf(String wrong) {
    if (!wrong.isEmpty()) throw new TestFailedException(wrong, 0);
  }

  /** CheckpointFileManagerTests with {@code kind}'s manager on the store. */
  public abstract static class Tests extends CheckpointFileManagerTests {
    private final String kind;

    Tests(String kind) {
      this.kind = kind;
    }

    @Override public String suiteName() {
      return "CheckpointFileManagerTests[" + kind + "]";
    }

    @Override public void withTempHadoopPath(Function1<Path, BoxedUnit> body) {
      OnStore.withTempPath("CheckpointFileManagerTests-" + kind, body);
    }

    @Override public void checkLeakingCrcFiles(Path path) {
      failIf(OnStore.leakedCrcFiles(path));
    }

    @Override public CheckpointFileManager createManager(Path path) {
      return manager(kind, path);
    }
  }

  /** ChecksumCheckpointFileManagerSuite around {@code kind}'s manager on the store. */
  public abstract static class Checksum extends ChecksumCheckpointFileManagerSuite {
    private final String kind;

    Checksum(String kind) {
      this.kind = kind;
    }

    @Override public String suiteName() {
      return "ChecksumCheckpointFileManagerSuite[" + kind + "]";
    }

    @Override public void withTempHadoopPath(Function1<Path, BoxedUnit> body) {
      OnStore.withTempPath("ChecksumCheckpointFileManagerSuite-" + kind, body);
    }

    @Override public void checkLeakingCrcFiles(Path path) {
      failIf(OnStore.leakedCrcFiles(path));
      failIf(OnStore.orphanChecksumFiles(path, ChecksumCheckpointFileManager::isChecksumFile,
          p -> new ChecksumFile(p).mainFilePath()));
    }

    @Override public CheckpointFileManager createNoChecksumManager(Path path) {
      return manager(kind, path);
    }
  }

  public static final class ShimTests extends Tests { public ShimTests() { super("shim"); } }
  public static final class FileContextTests extends Tests { public FileContextTests() { super("filecontext"); } }
  public static final class FileSystemTests extends Tests { public FileSystemTests() { super("filesystem"); } }
  public static final class AbortableTests extends Tests { public AbortableTests() { super("abortable"); } }
  public static final class ShimChecksum extends Checksum { public ShimChecksum() { super("shim"); } }
  public static final class FileContextChecksum extends Checksum {
    public FileContextChecksum() { super("filecontext"); }
  }
  public static final class FileSystemChecksum extends Checksum {
    public FileSystemChecksum() { super("filesystem"); }
  }
  public static final class AbortableChecksum extends Checksum { public AbortableChecksum() { super("abortable"); } }
}
