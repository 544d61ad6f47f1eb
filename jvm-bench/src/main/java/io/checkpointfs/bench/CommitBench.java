package io.checkpointfs.bench;

import java.io.ByteArrayInputStream;
import java.io.Reader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * Checkpoint-file commits timed inside one JVM: the checkpointfs shim, Spark's checkpoint managers (created by class
 * name through their (Path, Configuration) constructor, as Spark's CheckpointFileManager.create does) and one AWS SDK
 * v2 PutObject per file (the floor: the SDK and HTTP client S3A uses, its client built once).
 *
 * <p>Each commit is what Spark's metadata logs do: createAtomic(new path, overwrite=false), write, close, into a log
 * directory made once before (mkdirs, untimed). Contenders run interleaved in rounds whose order rotates; each is
 * warmed up first (JIT, connection pools). Requests are counted at the server: before and after every measured batch
 * the harness sends a HEAD for a marker key ({@code <prefix>/_marks/begin|end/<phase>}), and the driver splits the
 * server's request log at those markers. Between series (e.g. without and with the latency model) the harness asks the
 * driver to switch through files in a hand-shake directory.
 *
 * <p>Usage: {@code CommitBench <properties file>}; the driver (benchmarks/bench_jvm_inprocess.py) writes the file and
 * reads the JSON written to its {@code out} path. Properties: endpoint, region, bucket, access.key, secret.key,
 * prefix, root (the store's Hadoop URI, default s3a://BUCKET; elsewhere than S3 leave endpoint out and give marks.url
 * and marks.encode), contenders (name=class, the floor as raw_put_floor=floor), series, small.commits.SERIES, small.rounds,
 * warmup.commits.SERIES, sizes.SERIES (bytes), sizes.repeat, write.chunk, handshake.dir, out, and hadoop.KEY for
 * every Hadoop setting (the fs.s3a.* that checkpointfs.spark.configure() gives Spark).
 */
public final class CommitBench {
    static final String FLOOR = "floor";
    /** Diagnostics: the floor's PutObject with the shim's If-None-Match and write-id metadata. */
    static final String FLOOR_CONDITIONAL = "floor-conditional";
    /** Diagnostics: S3A's conditional create through the FileSystem API, without the shim around it. */
    static final String S3A_CREATE = "s3a-create";

    private final Properties props;
    private final Configuration conf = new Configuration();
    /** The floor's and the markers' client on S3 (null on other stores: no {@code endpoint} property). */
    private final S3Client client;
    private final String bucket;
    private final String root;
    private final String prefix;
    private final Map<String, Contender> contenders = new LinkedHashMap<>();
    private final List<String> phases = new ArrayList<>();

    /** One way to commit a file. */
    private interface Contender {
        /** Make the log directory (untimed, as Spark does once per log). */
        void prepare(String directory) throws Exception;

        /** Commit {@code data} as the file {@code key}. */
        void commit(String key, byte[] data) throws Exception;
    }

    CommitBench(Properties props) {
        this.props = props;
        for (String name : props.stringPropertyNames()) {
            if (name.startsWith("hadoop.")) conf.set(name.substring("hadoop.".length()), props.getProperty(name));
        }
        bucket = props.getProperty("bucket");
        prefix = props.getProperty("prefix", "jvm-bench");
        root = props.getProperty("root", "s3a://" + bucket).replaceAll("/+$", "");
        client = props.getProperty("endpoint") == null ? null : S3Client.builder()
            .httpClientBuilder(ApacheHttpClient.builder())
            .endpointOverride(URI.create(props.getProperty("endpoint")))
            .region(Region.of(props.getProperty("region", "us-east-1")))
            .credentialsProvider(StaticCredentialsProvider.create(
                AwsBasicCredentials.create(props.getProperty("access.key"), props.getProperty("secret.key"))))
            .forcePathStyle(true)
            // As S3A with fs.s3a.checksum.generation/validation=false (checkpointfs's defaults): no CRC trailers.
            .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
            .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
            .build();
    }

    /** A manager by class name; "class:k=v;k=v" gives it a Hadoop configuration of its own with those settings. */
    private Contender manager(String spec, String series) throws Exception {
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(uri(prefix + "/" + series));
        String className = spec.split(":", 2)[0];
        Configuration own = conf;
        if (spec.contains(":")) {
            own = new Configuration(conf);
            for (String kv : spec.split(":", 2)[1].split(";")) own.set(kv.split("=", 2)[0], kv.split("=", 2)[1]);
        }
        Object m = Class.forName(className)
            .getConstructor(org.apache.hadoop.fs.Path.class, Configuration.class).newInstance(root, own);
        Method create = m.getClass().getMethod("createAtomic", org.apache.hadoop.fs.Path.class, boolean.class);
        Method mkdirs = m.getClass().getMethod("mkdirs", org.apache.hadoop.fs.Path.class);
        int chunk = Integer.parseInt(props.getProperty("write.chunk", String.valueOf(1 << 20)));
        return new Contender() {
            @Override public void prepare(String directory) throws Exception {
                call(mkdirs, m, new org.apache.hadoop.fs.Path(uri(directory)));
            }

            @Override public void commit(String key, byte[] data) throws Exception {
                FSDataOutputStream out = (FSDataOutputStream) call(create, m, new org.apache.hadoop.fs.Path(uri(key)), false);
                for (int at = 0; at < data.length; at += chunk) out.write(data, at, Math.min(chunk, data.length - at));
                out.close();
            }
        };
    }

    /** S3A's create without the shim; {@code overrides} ("k=v;k=v") give it its own FileSystem instance. */
    private Contender s3aCreate(String series, String overrides) throws Exception {
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(uri(prefix + "/" + series));
        org.apache.hadoop.fs.FileSystem fs;
        if (overrides.isEmpty()) {
            fs = root.getFileSystem(conf);
        } else {
            Configuration own = new Configuration(conf);
            for (String kv : overrides.split(";")) own.set(kv.split("=", 2)[0], kv.split("=", 2)[1]);
            fs = org.apache.hadoop.fs.FileSystem.newInstance(root.toUri(), own);
        }
        int chunk = Integer.parseInt(props.getProperty("write.chunk", String.valueOf(1 << 20)));
        return new Contender() {
            @Override public void prepare(String directory) { }

            @Override public void commit(String key, byte[] data) throws Exception {
                FSDataOutputStream out = (FSDataOutputStream) fs.createFile(new org.apache.hadoop.fs.Path(uri(key))).create().overwrite(false)
                    .recursive().must("fs.s3a.create.performance", true)
                    .must("fs.option.create.conditional.overwrite", true)
                    .opt("fs.s3a.create.header.checkpointfs-write-id", java.util.UUID.randomUUID().toString())
                    .build();
                for (int at = 0; at < data.length; at += chunk) out.write(data, at, Math.min(chunk, data.length - at));
                out.close();
            }
        };
    }

    private Contender floor(boolean conditional) {
        return new Contender() {
            @Override public void prepare(String directory) { }

            @Override public void commit(String key, byte[] data) {
                PutObjectRequest.Builder request = PutObjectRequest.builder().bucket(bucket).key(key);
                if (conditional) {
                    request.ifNoneMatch("*").metadata(Map.of("checkpointfs-write-id",
                        java.util.UUID.randomUUID().toString().replace("-", "")));
                }
                // The body is read from the caller's array (no defensive copy, unlike RequestBody.fromBytes).
                client.putObject(request.build(),
                    RequestBody.fromContentProvider(() -> new ByteArrayInputStream(data), data.length,
                        "application/octet-stream"));
            }
        };
    }

    private static Object call(Method method, Object target, Object... args) throws Exception {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    private String uri(String key) {
        return root + "/" + key;
    }

    /**
     * A read of a key nobody writes: the driver splits the server's request log at these. On S3 a HEAD; elsewhere
     * one plain GET of {@code marks.url} with {@code {key}} replaced by the key (URL-encoded whole when
     * {@code marks.encode} is true, as the GCS JSON API names objects), unauthenticated: only its key matters.
     */
    private void mark(String which, String phase) throws Exception {
        Thread.sleep(100); // let requests still in flight (asynchronous cleanups, if any) land before the marker
        String key = prefix + "/_marks/" + which + "/" + phase;
        if (client == null) {
            boolean encode = Boolean.parseBoolean(props.getProperty("marks.encode", "false"));
            String name = encode ? java.net.URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20") : key;
            java.net.HttpURLConnection c = (java.net.HttpURLConnection)
                URI.create(props.getProperty("marks.url").replace("{key}", name)).toURL().openConnection();
            c.getResponseCode();
            try (java.io.InputStream body = c.getErrorStream() != null ? c.getErrorStream() : c.getInputStream()) {
                body.readAllBytes();
            }
            return;
        }
        try {
            client.headObject(HeadObjectRequest.builder().bucket(bucket).key(key).build());
        } catch (SdkServiceException e) {
            if (e.statusCode() != 404) throw e;
        }
    }

    /** Ask the driver to set up series {@code series} (e.g. turn the latency model on) and wait until it has. */
    private void handshake(String series) throws Exception {
        Path dir = Paths.get(props.getProperty("handshake.dir"));
        Files.writeString(dir.resolve(series + ".request"), series);
        Path ready = dir.resolve(series + ".ready");
        long deadline = System.nanoTime() + 600_000_000_000L;
        while (!Files.exists(ready)) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("the driver never set up series " + series);
            Thread.sleep(20);
        }
    }

    private static List<Integer> ints(String value) {
        List<Integer> out = new ArrayList<>();
        if (value == null || value.isBlank()) return out;
        for (String part : value.split(",")) out.add(Integer.parseInt(part.trim()));
        return out;
    }

    /** The offsets file of batch {@code n}, about 250 bytes, as harness.demo.checkpoint_file writes it. */
    static byte[] offsetsFile(int n) {
        String text = "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":" + (1763700000000L + n * 1000L)
            + ",\"conf\":{\"spark.sql.shuffle.partitions\":\"200\",\"spark.sql.streaming.stateStore.providerClass\":"
            + "\"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider\"}}\n"
            + "{\"logOffset\":" + n + "}";
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** CPU time of this JVM so far (every thread: the caller's, S3A's and the SDK's), in nanoseconds. */
    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
            .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private void phase(String id, String series, String kind, String contender, int round,
                       long size, List<Long> nanos, long cpu) {
        StringBuilder times = new StringBuilder();
        for (long t : nanos) times.append(times.length() == 0 ? "" : ",").append(t);
        phases.add(String.format("{\"id\":\"%s\",\"series\":\"%s\",\"kind\":\"%s\",\"contender\":\"%s\","
            + "\"round\":%d,\"size_bytes\":%d,\"cpu_ns\":%d,\"times_ns\":[%s]}", id, series, kind, contender, round, size,
            cpu, times));
    }

    private void run() throws Exception {
        String[] series = props.getProperty("series", "local").split(",");
        int rounds = Integer.parseInt(props.getProperty("small.rounds", "5"));
        int repeat = Integer.parseInt(props.getProperty("sizes.repeat", "3"));
        List<String> names = new ArrayList<>();
        Map<String, String> classes = new LinkedHashMap<>();
        for (String spec : props.getProperty("contenders").split(",")) {
            String[] kv = spec.trim().split("=", 2);
            names.add(kv[0]);
            classes.put(kv[0], kv[1]);
        }
        for (int s = 0; s < series.length; s++) {
            String name = series[s];
            if (s > 0) handshake(name);
            contenders.clear();
            for (String c : names) {
                String cls = classes.get(c);
                contenders.put(c, FLOOR.equals(cls) ? floor(false) : FLOOR_CONDITIONAL.equals(cls) ? floor(true)
                    : cls.startsWith(S3A_CREATE) ? s3aCreate(name, cls.substring(S3A_CREATE.length()).replaceFirst("^:", ""))
                    : manager(cls, name));
            }
            // Warm-up: JIT, connection pools, S3A's lazily made parts; neither timed nor counted.
            int warmup = Integer.parseInt(props.getProperty("warmup.commits." + name, "0"));
            for (String c : names) {
                String dir = prefix + "/" + name + "/warmup/" + c + "/offsets";
                contenders.get(c).prepare(dir);
                for (int i = 0; i < warmup; i++) contenders.get(c).commit(dir + "/" + i, offsetsFile(i));
            }
            int commits = Integer.parseInt(props.getProperty("small.commits." + name, "0"));
            for (int r = 0; commits > 0 && r < rounds; r++) {
                for (int k = 0; k < names.size(); k++) {
                    String c = names.get((k + r) % names.size());
                    Contender contender = contenders.get(c);
                    String dir = prefix + "/" + name + "/small/" + c + "/r" + r + "/offsets";
                    contender.prepare(dir);
                    String id = "small/" + name + "/" + c + "/r" + r;
                    List<Long> nanos = new ArrayList<>(commits);
                    mark("begin", id);
                    long cpu = cpuNanos();
                    for (int n = 0; n < commits; n++) {
                        byte[] data = offsetsFile(n);
                        long start = System.nanoTime();
                        contender.commit(dir + "/" + n, data);
                        nanos.add(System.nanoTime() - start);
                    }
                    cpu = cpuNanos() - cpu;
                    mark("end", id);
                    phase(id, name, "small", c, r, offsetsFile(0).length, nanos, cpu);
                }
                System.err.printf("jvm-bench: %s small round %d of %d done%n", name, r + 1, rounds);
            }
            List<Integer> sizes = ints(props.getProperty("sizes." + name));
            if (!sizes.isEmpty()) {
                // One large warm-up commit each (S3A's block buffers and upload threads), neither timed nor counted.
                byte[] warm = random(40 << 20, 1); // above the shim's 16M parts: its multipart path warms up too
                for (String c : names) {
                    String dir = prefix + "/" + name + "/warmup-large/" + c;
                    contenders.get(c).prepare(dir);
                    contenders.get(c).commit(dir + "/0", warm);
                    delete(dir + "/0");
                }
            }
            for (int size : sizes) {
                byte[] data = random(size, size);
                for (int i = 0; i < repeat; i++) {
                    for (int k = 0; k < names.size(); k++) {
                        String c = names.get((k + i) % names.size());
                        Contender contender = contenders.get(c);
                        String dir = prefix + "/" + name + "/size/" + c + "/" + size;
                        contender.prepare(dir);
                        String id = "size/" + name + "/" + c + "/" + size + "/" + i;
                        mark("begin", id);
                        long cpu = cpuNanos();
                        long start = System.nanoTime();
                        contender.commit(dir + "/" + i, data);
                        long spent = System.nanoTime() - start;
                        cpu = cpuNanos() - cpu;
                        mark("end", id);
                        delete(dir + "/" + i); // frees the store's memory; after the end marker, so not counted
                        phase(id, name, "size", c, i, size, List.of(spent), cpu);
                        System.err.printf("jvm-bench: %s %d B %s: %.0f ms%n", name, size, c, spent / 1e6);
                    }
                }
            }
        }
        StringBuilder json = new StringBuilder("{\"java\":\"").append(System.getProperty("java.version"))
            .append("\",\"phases\":[\n");
        for (int i = 0; i < phases.size(); i++) json.append(i == 0 ? "" : ",\n").append(phases.get(i));
        json.append("\n]}\n");
        Files.writeString(Paths.get(props.getProperty("out")), json.toString());
    }

    private void delete(String key) throws java.io.IOException {
        if (client != null) {
            client.deleteObject(b -> b.bucket(bucket).key(key));
        } else {
            org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(uri(key));
            path.getFileSystem(conf).delete(path, false);
        }
    }

    private static byte[] random(int size, long seed) {
        byte[] data = new byte[size];
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i + 8 <= size; i += 8) {
            long v = random.nextLong();
            for (int j = 0; j < 8; j++) data[i + j] = (byte) (v >>> (8 * j));
        }
        return data;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (Reader in = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            props.load(in);
        }
        new CommitBench(props).run();
        System.exit(0); // S3A's and the SDK's non-daemon threads
    }
}
