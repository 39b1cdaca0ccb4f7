import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A Kafka client logging in with a delegation token, as any Java workload would: SCRAM with tokenauth="true".
 * It produces one record to a topic, then reads it back (assigned partition 0, no consumer group, so that the
 * token's owner needs only Write and Read on the topic).
 *
 * Usage: java -cp 'libs/*:classes' TokenClient BOOTSTRAP MECHANISM TOPIC; the token's id and HMAC come in the
 * environment (KAFKA_TOKEN_ID, KAFKA_TOKEN_HMAC), never on the command line. Prints "produced ...",
 * "consumed ..." and exits 0; on a refusal prints "refused: <the exception Kafka raised>" and exits 1.
 */
public final class TokenClient {
    public static void main(String[] args) {
        String bootstrap = args[0];
        String mechanism = args[1];
        String topic = args[2];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        common.put("security.protocol", "SASL_PLAINTEXT");
        common.put("sasl.mechanism", mechanism);
        common.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"" + System.getenv("KAFKA_TOKEN_ID") + "\""
                + " password=\"" + System.getenv("KAFKA_TOKEN_HMAC") + "\""
                + " tokenauth=\"true\";");
        common.put("request.timeout.ms", "20000");
        common.put("default.api.timeout.ms", "30000");
        String value = "hello from token " + System.getenv("KAFKA_TOKEN_ID") + " over " + mechanism;
        try {
            Properties producerConfig = new Properties();
            producerConfig.putAll(common);
            producerConfig.put("key.serializer", StringSerializer.class.getName());
            producerConfig.put("value.serializer", StringSerializer.class.getName());
            producerConfig.put("max.block.ms", "30000");
            producerConfig.put("enable.idempotence", "false");  // no IdempotentWrite on the cluster needed
            producerConfig.put("acks", "all");
            long offset;
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
                RecordMetadata sent = producer.send(new ProducerRecord<>(topic, 0, mechanism, value)).get();
                offset = sent.offset();
                System.out.println("produced to " + sent.topic() + "-" + sent.partition() + " at offset " + offset);
            }
            Properties consumerConfig = new Properties();
            consumerConfig.putAll(common);
            consumerConfig.put("key.deserializer", StringDeserializer.class.getName());
            consumerConfig.put("value.deserializer", StringDeserializer.class.getName());
            consumerConfig.put("enable.auto.commit", "false");
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig)) {
                TopicPartition partition = new TopicPartition(topic, 0);
                consumer.assign(List.of(partition));
                consumer.seek(partition, offset);
                long deadline = System.currentTimeMillis() + 30000;
                while (System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        System.out.println("consumed from " + record.topic() + "-" + record.partition()
                                + " at offset " + record.offset() + ": " + record.value());
                        if (record.value().equals(value)) {
                            System.exit(0);
                        }
                    }
                }
            }
            System.out.println("not consumed within 30 s");
            System.exit(2);
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.out.println("refused: " + cause.getClass().getName() + ": " + cause.getMessage());
            System.exit(1);
        }
    }
}
