package io.checkpointfs.sparksuites;

import org.apache.hadoop.fs.Path;
import org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.CheckpointFileManagerTests;
import org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager;
import org.scalatest.exceptions.TestFailedException;

import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * Spark's own {@code CheckpointFileManagerTests} (its test-jar, unmodified) on a store a test fixture started
 * ({@link OnStore}), for Spark 3.5 and 4.0 (the trait's package {@code ...streaming}; these lines have no checksum
 * manager), once per manager: the shim as Spark loads it ({@code CheckpointFileManager.create} with
 * {@code spark.sql.streaming.checkpointFileManagerClass}), and Spark's own FileContext, FileSystem and abortable-stream
 * (spark-hadoop-cloud) managers. Each class supplies only what the suite leaves abstract: the manager, a fresh
 * directory on the store, the leak check on the store's listing. The twin for 4.1 and later is in
 * src/checkpointing.
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
      String wrong = OnStore.leakedCrcFiles(path);
      if (!wrong.isEmpty()) throw new TestFailedException(wrong, 0);
    }

    @Override public CheckpointFileManager createManager(Path path) {
      return manager(kind, path);
    }
  }

  public static final class ShimTests extends Tests { public ShimTests() { super("shim"); } }
  public static final class FileContextTests extends Tests { public FileContextTests() { super("filecontext"); } }
  public static final class FileSystemTests extends Tests { public FileSystemTests() { super("filesystem"); } }
  public static final class AbortableTests extends Tests { public AbortableTests() { super("abortable"); } }
}
