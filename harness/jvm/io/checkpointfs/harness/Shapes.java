package io.checkpointfs.harness;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Collections;
import java.util.Iterator;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

import scala.Tuple2;

/**
 * Streaming query shapes the Python API cannot express, for the end-to-end tests of checkpointfs
 * (harness/jvm_shapes.py compiles this file against the running pyspark's jars and calls it through py4j).
 *
 * <p>One source for every Spark line: it uses only the Java API common to Spark 3.5 (Scala 2.12) and 4.x
 * (Scala 2.13), and reaches {@code Trigger.RealTime} (Spark 4.1 on) by reflection.
 */
public final class Shapes {
  private Shapes() {}

  /** The per-id state: whether the id was emitted already. */
  private static final class FirstSeen
      implements FlatMapGroupsWithStateFunction<Long, Row, Boolean, Tuple2<Long, String>> {
    private static final long serialVersionUID = 1L;

    @Override
    public Iterator<Tuple2<Long, String>> call(Long id, Iterator<Row> rows, GroupState<Boolean> seen) {
      if (seen.exists() || !rows.hasNext()) {
        return Collections.emptyIterator();
      }
      seen.update(Boolean.TRUE);
      Row first = rows.next();
      String key = first.isNullAt(first.fieldIndex("key")) ? null : first.getString(first.fieldIndex("key"));
      return Collections.singletonList(new Tuple2<>(id, key)).iterator();
    }
  }

  /**
   * Deduplication by id with {@code flatMapGroupsWithState} (a Boolean "seen" state per id, append mode, no
   * timeout): each id is emitted once, with the key of its first row, the first time it is seen.
   *
   * @param input a streaming frame with at least the columns {@code id LONG} and {@code key STRING}
   * @return a streaming frame with the columns {@code id}, {@code key}
   */
  public static Dataset<Row> flatMapGroupsWithStateDedup(Dataset<Row> input) {
    return input
        .groupByKey((MapFunction<Row, Long>) row -> row.getLong(row.fieldIndex("id")), Encoders.LONG())
        .flatMapGroupsWithState(
            new FirstSeen(),
            OutputMode.Append(),
            Encoders.BOOLEAN(),
            Encoders.tuple(Encoders.LONG(), Encoders.STRING()),
            GroupStateTimeout.NoTimeout())
        .toDF("id", "key");
  }

  /**
   * {@code Trigger.RealTime(batchDuration)}: Spark 4.1 on; an {@link UnsupportedOperationException} on older lines.
   *
   * @param batchDuration how long each real-time batch runs, e.g. {@code "5 seconds"}
   */
  public static Trigger realTimeTrigger(String batchDuration) {
    Method realTime;
    try {
      realTime = Trigger.class.getMethod("RealTime", String.class);
    } catch (NoSuchMethodException e) {
      throw new UnsupportedOperationException(
          "Trigger.RealTime is not in this Spark (" + SparkSession.class.getPackage().getImplementationVersion()
              + "): real-time mode came with Spark 4.1", e);
    }
    try {
      return (Trigger) realTime.invoke(null, batchDuration);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      throw cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause);
    }
  }

  /**
   * Starts a stateless real-time mode query from one Kafka topic to another: the records' keys and values are
   * copied as they are (output mode update, the only one real-time mode takes). Kafka is the one source and sink
   * pair Spark's real-time mode allows for such a query.
   *
   * @param spark the session (with Spark's Kafka connector on its jars)
   * @param bootstrap Kafka's bootstrap.servers
   * @param sourceTopic read from its earliest offsets
   * @param sinkTopic written to
   * @param checkpoint the checkpoint location
   * @param batchDuration how long each real-time batch runs, e.g. {@code "5 seconds"}
   * @return the started query
   */
  public static StreamingQuery startRealTimeKafka(
      SparkSession spark,
      String bootstrap,
      String sourceTopic,
      String sinkTopic,
      String checkpoint,
      String batchDuration)
      throws Exception {
    Trigger trigger = realTimeTrigger(batchDuration);
    return spark
        .readStream()
        .format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", sourceTopic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "value")
        .writeStream()
        .format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sinkTopic)
        .option("checkpointLocation", checkpoint)
        .outputMode(OutputMode.Update())
        .trigger(trigger)
        .start();
  }
}
