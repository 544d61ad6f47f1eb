package io.checkpointfs.yarn;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import io.checkpointfs.hdfs.Launcher;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Runs Hadoop's MiniYARNCluster (one ResourceManager, N NodeManagers, FIFO scheduler) on 127.0.0.1 with free ports,
 * for Spark-on-YARN tests. Its work dirs (NodeManagers' local and log dirs) go under {@code BASE_DIR/target}.
 *
 * <p>Usage: {@code java -cp ... io.checkpointfs.yarn.MiniYarn BASE_DIR NODE_MANAGERS}. When every NodeManager has
 * registered it writes the cluster's whole configuration to {@code BASE_DIR/conf/yarn-site.xml} (a
 * {@code HADOOP_CONF_DIR} for {@code spark-submit --master yarn}) and prints one line to stdout,
 * {@code MINIYARN_READY {"rm_address": "...", "rm_webapp": "...", "conf_dir": "...", "work_dir": "..."}}; it then
 * runs until its stdin closes or it gets SIGTERM, and either way shuts the cluster down and exits 0. Hadoop's
 * logging goes to stderr. A start that fails exits 1.
 */
public final class MiniYarn {
  private MiniYarn() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: MiniYarn BASE_DIR NODE_MANAGERS");
      System.exit(2);
    }
    File base = new File(args[0]).getAbsoluteFile();
    int nodeManagers = Integer.parseInt(args[1]);
    YarnConfiguration conf = new YarnConfiguration();
    // Loopback only, free ports (MiniYARNCluster sets ":0" ports on this host name).
    conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
    conf.set(YarnConfiguration.NM_ADDRESS, "127.0.0.1:0");
    conf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, "127.0.0.1:0");
    conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, "127.0.0.1:0");
    conf.set("yarn.nodemanager.hostname", "127.0.0.1");
    // FIFO: the capacity scheduler's 10% cap on application masters would leave a small cluster's AM waiting.
    conf.set(YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    // Small containers on a small machine: Spark's executors (512 MiB + 384 MiB overhead) and AM fit in 1 GiB.
    conf.setInt(YarnConfiguration.NM_PMEM_MB, 3072);
    conf.setInt(YarnConfiguration.NM_VCORES, 4);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 2048);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // A nearly full disk would mark the local dirs bad and no container would start.
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    // Keep finished containers' dirs and logs a while: tests read an AM's stdout after the application ends.
    conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 3600);
    conf.setBoolean(YarnConfiguration.TIMELINE_SERVICE_ENABLED, false);

    MiniYARNCluster cluster = new MiniYARNCluster("miniyarn", nodeManagers, 1, 1);
    File confDir = new File(base, "conf");
    try {
      cluster.init(conf);
      cluster.start();
      if (!cluster.waitForNodeManagersToConnect(600_000)) {
        throw new IllegalStateException("the NodeManagers did not register within 600 s");
      }
      Configuration live = cluster.getConfig();
      Files.createDirectories(confDir.toPath());
      File site = new File(confDir, "yarn-site.xml");
      try (OutputStream out = new FileOutputStream(site)) {
        live.writeXml(out);
      }
      System.out.println("MINIYARN_READY {\"rm_address\": \"" + live.get(YarnConfiguration.RM_ADDRESS)
          + "\", \"rm_webapp\": \"" + live.get(YarnConfiguration.RM_WEBAPP_ADDRESS)
          + "\", \"conf_dir\": \"" + confDir + "\", \"work_dir\": \"" + cluster.getTestWorkDir().getAbsolutePath()
          + "\"}");
      System.out.flush();
    } catch (Throwable e) {
      Launcher.failed("MiniYarn", e);
      return;
    }
    Launcher.serveUntilStdinCloses(cluster::stop, "miniyarn");
  }
}
