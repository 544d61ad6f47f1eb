package io.checkpointfs.hdfs;

import java.io.IOException;
import java.io.InputStream;

/** What the launchers of this module (MiniHdfs, MiniYarn) share: how a start fails and how they run until told. */
public final class Launcher {
  private Launcher() {}

  /**
   * Reports a failed start on stderr and halts with exit code 1 (the JVM would otherwise stay up on the cluster's
   * non-daemon threads).
   */
  public static void failed(String name, Throwable e) {
    System.err.println(name + ": the cluster did not start: " + e);
    e.printStackTrace();
    System.err.flush();
    Runtime.getRuntime().halt(1);
  }

  /**
   * Runs until stdin closes (the parent went away or asked to stop), then runs {@code stop} and exits 0; SIGTERM
   * runs {@code stop} from a shutdown hook instead.
   */
  public static void serveUntilStdinCloses(Runnable stop, String name) throws IOException {
    Thread hook = new Thread(stop, name + "-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    InputStream in = System.in;
    while (in.read() != -1) {
      // ignore input
    }
    Runtime.getRuntime().removeShutdownHook(hook);
    stop.run();
    System.exit(0);
  }
}
