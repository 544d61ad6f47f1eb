package io.checkpointfs.kafka;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A test client of the fixture's broker, one command per JVM:
 * <ul>
 *   <li>{@code create BOOTSTRAP TOPIC PARTITIONS}: create a topic (replication factor 1);</li>
 *   <li>{@code produce BOOTSTRAP TOPIC}: send every line of stdin as a record value (no key, acks=all), then print
 *       the count;</li>
 *   <li>{@code consume BOOTSTRAP TOPIC}: print every record value of the topic, one a line, from the beginning to
 *       the end offsets taken at start (no consumer group, nothing committed).</li>
 * </ul>
 */
public final class KafkaTool {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  private KafkaTool() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: KafkaTool create|produce|consume BOOTSTRAP TOPIC [PARTITIONS]");
      System.exit(2);
    }
    String bootstrap = args[1];
    String topic = args[2];
    switch (args[0]) {
      case "create" -> create(bootstrap, topic, Integer.parseInt(args[3]));
      case "produce" -> produce(bootstrap, topic);
      case "consume" -> consume(bootstrap, topic);
      default -> {
        System.err.println("unknown command " + args[0]);
        System.exit(2);
      }
    }
  }

  private static void create(String bootstrap, String topic, int partitions) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(props)) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }
    System.out.println("created " + topic);
  }

  private static void produce(String bootstrap, String topic) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    long count = 0;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props);
         BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (!line.isEmpty()) {
          producer.send(new ProducerRecord<>(topic, line));
          count++;
        }
      }
      producer.flush();
    }
    System.out.println("produced " + count);
  }

  private static void consume(String bootstrap, String topic) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = new ArrayList<>();
      for (PartitionInfo p : consumer.partitionsFor(topic, TIMEOUT)) {
        partitions.add(new TopicPartition(topic, p.partition()));
      }
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions, TIMEOUT);
      long deadline = System.nanoTime() + TIMEOUT.toNanos();
      while (!reached(consumer, end)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("end offsets " + end + " not reached within " + TIMEOUT);
        }
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          System.out.println(record.value());
        }
      }
    }
    System.out.flush();
  }

  private static boolean reached(KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> end) {
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      if (consumer.position(e.getKey(), TIMEOUT) < e.getValue()) {
        return false;
      }
    }
    return true;
  }
}
