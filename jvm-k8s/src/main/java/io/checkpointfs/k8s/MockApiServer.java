package io.checkpointfs.k8s;

import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.dsl.HttpMethod;
import io.fabric8.mockwebserver.http.Buffer;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.concurrent.CountDownLatch;

/**
 * Runs fabric8's Kubernetes mock API server in CRUD mode (objects created are stored and served back) over plain
 * HTTP on 127.0.0.1, for tests of spark-submit's {@code k8s://} submit path.
 *
 * <p>Usage: {@code java -cp ... io.checkpointfs.k8s.MockApiServer PORT} (0: a free port). Once it listens it
 * prints one line to stdout, {@code K8S_MOCK_READY http://127.0.0.1:N}, and keeps running until its stdin closes or
 * it gets SIGTERM; either way it shuts the server down and exits 0.
 *
 * <p>A server-side apply ({@code PATCH} with {@code application/apply-patch+yaml}) of an object that does not exist
 * creates it, as a real API server does: spark-submit applies the driver's config map and service that way, and
 * the CRUD dispatcher alone answers 404 (spark-submit then deletes the driver pod).
 */
public final class MockApiServer {
  private MockApiServer() {}

  /** The CRUD dispatcher with server-side apply's create-if-absent. */
  static final class ApplyingDispatcher extends KubernetesCrudDispatcher {
    @Override
    public MockResponse handlePatch(RecordedRequest request) {
      String type = request.getHeader("Content-Type");
      String path = request.getPath();
      String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
      if (type != null && type.contains("apply-patch") && handleGet(bare).code() == 404) {
        String collection = bare.substring(0, bare.lastIndexOf('/'));
        RecordedRequest create = new RecordedRequest(request.getHttpVersion(), HttpMethod.POST, collection,
            request.getHeaders(), new Buffer(request.getBody().getBytes()));
        return handleCreate(create);
      }
      return super.handlePatch(request);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: MockApiServer PORT");
      System.exit(2);
    }
    KubernetesMockServer server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new ApplyingDispatcher(), false);
    server.init(InetAddress.getByName("127.0.0.1"), Integer.parseInt(args[0]));
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.destroy();
      done.countDown();
    }));
    System.out.println("K8S_MOCK_READY http://127.0.0.1:" + server.getPort());
    System.out.flush();
    Thread stdin = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {
          // the parent holds stdin open while it wants the server
        }
      } catch (java.io.IOException e) {
        // closed: stop
      }
      System.exit(0);
    });
    stdin.setDaemon(true);
    stdin.start();
    done.await();
  }
}
