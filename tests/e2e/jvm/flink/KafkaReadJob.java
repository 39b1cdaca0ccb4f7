import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * A Flink job as its user writes it, run on a MiniCluster: flink-connector-kafka's KafkaSource reads a topic from
 * its start and prints each record with the time it was read ("read <value> at <epoch ms>"), until it is killed.
 * With jars after the topic, the job is submitted with them as a cluster runs a job's own jar.
 * Nothing here knows kts: the Flink configuration (args[0]) enables kts's provider, and the Kafka client
 * properties (args[1]) name kts's callback handler; neither holds a Kafka password.
 */
public final class KafkaReadJob {
    public static void main(String[] args) throws Exception {
        Map<String, String> flink = new HashMap<>();
        load(args[0]).forEach((key, value) -> flink.put((String) key, (String) value));
        Properties kafka = load(args[1]);
        String topic = args[2];

        Configuration configuration = Configuration.fromMap(flink);
        StreamExecutionEnvironment env;
        if (args.length > 3) {
            // As a cluster runs a job: this JVM's classpath is the cluster's lib/, and the job's own jars (args[3..])
            // are loaded by Flink's job class loader, submitted to a MiniCluster over its REST API.
            MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                    .setConfiguration(configuration)
                    .setNumTaskManagers(1)
                    .setNumSlotsPerTaskManager(1)
                    .build());
            cluster.start();
            URI rest = cluster.getRestAddress().get();
            String[] jars = Arrays.copyOfRange(args, 3, args.length);
            env = StreamExecutionEnvironment.createRemoteEnvironment(rest.getHost(), rest.getPort(), configuration, jars);
        } else {
            env = StreamExecutionEnvironment.getExecutionEnvironment(configuration);
        }
        env.setParallelism(1);
        KafkaSource<String> source = KafkaSource.<String>builder()
                .setProperties(kafka)
                .setTopics(topic)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setValueOnlyDeserializer(new SimpleStringSchema())
                .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka")
                .map(value -> {
                    if (value.equals("r0")) {
                        // Which class loader the job's code and the Kafka callback handler came from.
                        ClassLoader context = Thread.currentThread().getContextClassLoader();
                        Class<?> handler = Class.forName("kts.jvm.kafka.KtsTokenCallbackHandler", false, context);
                        System.out.println("loaders job " + KafkaReadJob.class.getClassLoader().getClass().getName()
                                + " handler " + handler.getClassLoader().getClass().getName());
                    }
                    System.out.println("read " + value + " at " + System.currentTimeMillis());
                    System.out.flush();
                    return value;
                })
                .sinkTo(new DiscardingSink<>());
        try {
            env.execute(flink.getOrDefault("pipeline.name", "kts-flink-read"));
        } catch (Exception e) {
            // The MiniCluster's threads would keep the JVM up: end it, so that the test sees the failure at once.
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static Properties load(String path) throws IOException {
        Properties properties = new Properties();
        try (InputStream in = new FileInputStream(path)) {
            properties.load(in);
        }
        return properties;
    }
}
