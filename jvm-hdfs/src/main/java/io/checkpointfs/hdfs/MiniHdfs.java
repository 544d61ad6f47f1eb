package io.checkpointfs.hdfs;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Runs Hadoop's MiniDFSCluster (one NameNode, one DataNode, WebHDFS on) on 127.0.0.1 with free ports, for tests.
 *
 * <p>Usage: {@code java -cp ... io.checkpointfs.hdfs.MiniHdfs BASE_DIR [--keep]} ({@code --keep}: start on the
 * files a previous run left in BASE_DIR instead of formatting). When the cluster is up it prints one line
 * to stdout, {@code MINIHDFS_READY {"rpc_port": N, "http_port": M}}, and keeps running until its stdin closes or it gets SIGTERM;
 * either way it shuts the cluster down and exits 0. Everything else (Hadoop's logging) goes to stderr.
 *
 * <p>Ready means out of safe mode with the DataNode registered and its capacity reported, however long that takes:
 * MiniDFSCluster's own {@code waitClusterUp()} gives up after about 11 seconds ("Timed out waiting for Mini HDFS
 * Cluster to start"), too little on a loaded machine or for a restart that waits for block reports. {@link Patient}
 * waits for the same condition without a deadline of its own: the caller has one, and stops the process. A start
 * that fails exits 1 (the JVM would otherwise stay up on the cluster's non-daemon threads).
 */
public final class MiniHdfs {
  private MiniHdfs() {}

  /** MiniDFSCluster whose start waits for the cluster to be up as long as it takes, reporting on stderr. */
  static final class Patient extends MiniDFSCluster {
    Patient(MiniDFSCluster.Builder builder) throws IOException {
      super(builder); // calls waitClusterUp() below
    }

    @Override
    public void waitClusterUp() throws IOException {
      long started = System.nanoTime();
      long nextReport = started + 10_000_000_000L;
      while (!isClusterUp()) {
        if (System.nanoTime() >= nextReport) {
          System.err.println("MiniHdfs: waiting " + (System.nanoTime() - started) / 1_000_000_000L
              + " s for the NameNode to leave safe mode with a DataNode's capacity reported");
          nextReport += 10_000_000_000L;
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while waiting for the cluster", e);
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    boolean keep = args.length == 2 && args[1].equals("--keep");
    if (args.length != 1 && !keep) {
      System.err.println("usage: MiniHdfs BASE_DIR [--keep]");
      System.exit(2);
    }
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, args[0]);
    conf.setBoolean("dfs.webhdfs.enabled", true);
    // Permissions on (a user refused access is one of the failures tested); the root is open to everyone.
    conf.setBoolean("dfs.permissions.enabled", true);
    // Loopback only: every server of the cluster binds 127.0.0.1 on a free port.
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.set("dfs.datanode.hostname", "127.0.0.1");
    // Small files and one replica: quick block allocation for checkpoint-sized files.
    conf.setInt("dfs.replication", 1);
    conf.setLong("dfs.blocksize", 1024 * 1024);
    conf.setInt("dfs.namenode.fs-limits.min-block-size", 1024);

    MiniDFSCluster cluster;
    try {
      cluster = new Patient(new MiniDFSCluster.Builder(conf)
          .numDataNodes(1)
          .nameNodePort(0)
          .nameNodeHttpPort(0)
          .checkDataNodeHostConfig(true)
          .format(!keep)
          .manageNameDfsDirs(true)
          .manageDataDfsDirs(true));
      cluster.waitActive();
      if (!keep) {
        cluster.getFileSystem().setPermission(new Path("/"), new FsPermission((short) 0777));
      }
    } catch (Throwable e) {
      Launcher.failed("MiniHdfs", e);
      return;
    }

    int rpcPort = cluster.getNameNodePort();
    int httpPort = cluster.getNameNode().getHttpAddress().getPort();
    System.out.println("MINIHDFS_READY {\"rpc_port\": " + rpcPort + ", \"http_port\": " + httpPort + "}");
    System.out.flush();

    Launcher.serveUntilStdinCloses(cluster::shutdown, "minihdfs");
  }
}
