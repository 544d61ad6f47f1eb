package io.checkpointfs.harness;

import java.util.Collections;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;

import scala.Tuple2;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The JVM {@code transformWithState} operator, which Spark 4.3's real-time mode allows (its allowlist names
 * {@code TransformWithStateExec}; pyspark's {@code transformWithState} plans {@code TransformWithStateInPySparkExec},
 * which it does not). Compiled by harness/jvm_shapes.py on Spark 4.3 and later only.
 */
public final class RealTimeStateful {
  private RealTimeStateful() {}

  /** A running count of the rows of each key, in a {@code ValueState<Long>}; emits the key's count per batch. */
  private static final class RunningCount extends StatefulProcessor<String, Row, Tuple2<String, Long>> {
    private static final long serialVersionUID = 1L;
    private transient ValueState<Long> count;

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
    }

    @Override
    public Iterator<Tuple2<String, Long>> handleInputRows(String key, Iterator<Row> rows, TimerValues timers) {
      long seen = count.exists() ? count.get() : 0L;
      while (rows.hasNext()) {
        rows.next();
        seen += 1;
      }
      count.update(seen);
      return CollectionConverters.asScala(Collections.singletonList(new Tuple2<>(key, seen)).iterator());
    }
  }

  /**
   * {@code input} grouped by its {@code key} column through {@code transformWithState} (no timers, update mode):
   * each batch emits, for each key it saw, the number of rows of that key so far.
   *
   * @param input a streaming frame with a column {@code key STRING}
   * @return a streaming frame with the columns {@code key} and {@code count}
   */
  public static Dataset<Row> runningCount(Dataset<Row> input) {
    return input
        .groupByKey((MapFunction<Row, String>) row -> row.getString(row.fieldIndex("key")), Encoders.STRING())
        .transformWithState(
            new RunningCount(),
            TimeMode.None(),
            OutputMode.Update(),
            Encoders.tuple(Encoders.STRING(), Encoders.LONG()))
        .toDF("key", "count");
  }
}
