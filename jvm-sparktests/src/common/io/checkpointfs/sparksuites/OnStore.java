package io.checkpointfs.sparksuites;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.function.Predicate;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * What Spark's CheckpointFileManager suites leave to a subclass, for a store a test fixture started (the embedded S3
 * or MinIO): the Hadoop configuration of its S3A endpoint and credentials (a properties file named by the system
 * property {@value #CONF}, written by harness/spark_suites.py and never printed), a fresh directory below the
 * {@value #ROOT} URI for each test (deleted after it), and the leak checks Spark's local-disk hooks make, on the
 * store's own listing. The suites' tests themselves are Spark's, unmodified (Spark's test-jars).
 */
public final class OnStore {
  /** System property: the properties file of Hadoop settings (fs.s3a.*) for the store. */
  public static final String CONF = "checkpointfs.suites.conf";
  /** System property: the s3a:// URI below which each test gets a fresh directory. */
  public static final String ROOT = "checkpointfs.suites.root";
  /** Spark's setting naming the CheckpointFileManager class that CheckpointFileManager.create() loads. */
  public static final String MANAGER_CLASS_KEY = "spark.sql.streaming.checkpointFileManagerClass";
  /** The shim, as Spark is told to load it. */
  public static final String SHIM_CLASS = "io.checkpointfs.spark.DirectWriteCheckpointFileManager";

  private static Properties settings;

  private OnStore() {}

  private static synchronized Properties settings() {
    if (settings == null) {
      String file = System.getProperty(CONF);
      if (file == null) throw new IllegalStateException("set -D" + CONF + " to the store's Hadoop settings file");
      Properties loaded = new Properties();
      try (InputStream in = Files.newInputStream(Paths.get(file))) {
        loaded.load(in);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the store's Hadoop settings " + file, e);
      }
      settings = loaded;
    }
    return settings;
  }

  /** A new Hadoop configuration with the store's settings (no default resources' S3A settings). */
  public static Configuration conf() {
    Configuration conf = new Configuration();
    Properties s = settings();
    for (String key : s.stringPropertyNames()) conf.set(key, s.getProperty(key));
    return conf;
  }

  /** The store's configuration naming the shim as the manager Spark's CheckpointFileManager.create() loads. */
  public static Configuration shimConf() {
    Configuration conf = conf();
    conf.set(MANAGER_CLASS_KEY, SHIM_CLASS);
    return conf;
  }

  /**
   * {@code body} with a fresh, empty directory on the store, deleted afterwards. As Spark's local-disk hook
   * ({@code withTempDir}) creates the directory, this one is made by S3A ({@code mkdirs}: a directory marker object),
   * so that a manager that needs its parent directory to exist (Hadoop's FileContext API) can create files in it.
   */
  public static void withTempPath(String suite, Function1<Path, BoxedUnit> body) {
    String root = System.getProperty(ROOT);
    if (root == null) throw new IllegalStateException("set -D" + ROOT + " to an s3a:// URI on the store");
    Path base = new Path(root.replaceAll("/+$", "") + "/" + suite + "/" + UUID.randomUUID());
    try {
      base.getFileSystem(conf()).mkdirs(base);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make " + base + " for the test", e);
    }
    try {
      body.apply(base);
    } finally {
      try {
        base.getFileSystem(conf()).delete(base, true);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot delete " + base + " after the test", e);
      }
    }
  }

  /** The names of the files directly in {@code dir}, as the store lists them. */
  public static List<Path> files(Path dir) {
    try {
      FileSystem fs = dir.getFileSystem(conf());
      List<Path> files = new ArrayList<>();
      for (FileStatus status : fs.listStatus(dir)) {
        if (status.isFile()) files.add(fs.makeQualified(status.getPath()));
      }
      return files;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
  }

  /**
   * Spark's local-disk check, on the store's listing: every Hadoop checksum file {@code .name.crc} in {@code dir}
   * has its file {@code name} beside it. Returns what is wrong, empty when nothing is.
   */
  public static String leakedCrcFiles(Path dir) {
    List<Path> files = files(dir);
    Set<String> names = new HashSet<>();
    for (Path p : files) names.add(p.getName());
    List<String> orphans = new ArrayList<>();
    for (String name : names) {
      if (name.startsWith(".") && name.endsWith(".crc") && !names.contains(name.substring(1, name.length() - 4))) {
        orphans.add(name);
      }
    }
    return orphans.isEmpty() ? "" : "crc files without their file in " + dir + ": " + orphans + " / files: " + names;
  }

  /**
   * Spark's checksum-manager check, on the store's listing: every checksum file in {@code dir} (as Spark's
   * {@code isChecksumFile} tells, its main file by {@code mainFile}) has its main file beside it. Returns what is
   * wrong, empty when nothing is.
   */
  public static String orphanChecksumFiles(Path dir, Predicate<Path> isChecksumFile,
      java.util.function.Function<Path, Path> mainFile) {
    List<Path> files = files(dir);
    Set<Path> present = new HashSet<>(files);
    List<Path> orphans = new ArrayList<>();
    for (Path p : files) {
      boolean hadoopCrc = p.getName().startsWith(".") && p.getName().endsWith(".crc");
      if (!hadoopCrc && isChecksumFile.test(p) && !present.contains(mainFile.apply(p))) orphans.add(p);
    }
    return orphans.isEmpty() ? "" : "checksum files without their main file: " + orphans + " / files: " + files;
  }
}
