import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A plain Java workload configured like any Kafka client (a properties file whose only credential is
 * {@code sasl.client.callback.handler.class} with its JAAS options): a producer sends a record every 300 ms and a
 * consumer reads them, until the wanted number of distinct tokens has logged in and records have been read after the
 * last replaced token's maximum lifetime (when the broker ends every session still authenticated with it).
 *
 * <p>To see which token each login used, the configured handler class is wrapped by {@link Observer}, which only
 * prints the token id Kafka was given. One JSON line per event on stdout: {@code login} (tokenId), {@code record}
 * (value, offset), {@code error} (a client exception), {@code done}. Exit 0 when done, 2 at the deadline.
 *
 * <p>Without a callback handler (a token pasted into {@code sasl.jaas.config}, the comparison) it runs to the
 * deadline.
 *
 * <p>Arguments: client.properties topic wantedTokens maxLifetimeMs deadlineSeconds
 */
public final class KtsConsumer {
    private static String observedHandler;

    private static synchronized void emit(String event, String fields) {
        System.out.println("{\"event\": \"" + event + "\", \"t\": " + System.currentTimeMillis() + fields + "}");
        System.out.flush();
    }

    private static String quoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    /** Delegates to the configured handler and prints the token id of each login (never the password). */
    public static final class Observer implements AuthenticateCallbackHandler {
        private AuthenticateCallbackHandler inner;

        @Override
        public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
            try {
                inner = (AuthenticateCallbackHandler) Class.forName(observedHandler).getDeclaredConstructor()
                        .newInstance();
            } catch (ReflectiveOperationException ex) {
                throw new IllegalStateException(ex);
            }
            inner.configure(configs, mechanism, entries);
        }

        @Override
        public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
            inner.handle(callbacks);
            for (Callback callback : callbacks) {
                if (callback instanceof NameCallback name) {
                    emit("login", ", \"tokenId\": " + quoted(name.getName()));
                    synchronized (KtsConsumer.class) {
                        firstLogin.putIfAbsent(name.getName(), System.currentTimeMillis());
                    }
                }
            }
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    private static final Map<String, Long> firstLogin = new LinkedHashMap<>();
    private static long lastRecordAt;

    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            config.load(in);
        }
        String topic = args[1];
        int wanted = Integer.parseInt(args[2]);
        long maxLifetimeMs = Long.parseLong(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000;
        observedHandler = config.getProperty("sasl.client.callback.handler.class");
        if (observedHandler != null) {
            config.setProperty("sasl.client.callback.handler.class", Observer.class.getName());
        }

        Properties producerConfig = (Properties) config.clone();
        producerConfig.put("key.serializer", StringSerializer.class.getName());
        producerConfig.put("value.serializer", StringSerializer.class.getName());
        producerConfig.put("linger.ms", "0");
        Properties consumerConfig = (Properties) config.clone();
        consumerConfig.put("key.deserializer", StringDeserializer.class.getName());
        consumerConfig.put("value.deserializer", StringDeserializer.class.getName());
        consumerConfig.put("enable.auto.commit", "false");

        AtomicBoolean stop = new AtomicBoolean();
        int exit = 2;
        KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig);
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig);
        try {
            Thread sender = new Thread(() -> {
                long n = 0;
                while (!stop.get()) {
                    try {
                        producer.send(new ProducerRecord<>(topic, Long.toString(n++))).get();
                    } catch (Exception ex) {
                        emit("error", ", \"client\": \"producer\", \"what\": " + quoted(String.valueOf(ex)));
                    }
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException ex) {
                        return;
                    }
                }
            }, "sender");
            sender.setDaemon(true);
            sender.start();
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            while (System.currentTimeMillis() < deadline) {
                try {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        emit("record", ", \"value\": " + quoted(record.value()) + ", \"offset\": " + record.offset());
                        lastRecordAt = System.currentTimeMillis();
                    }
                } catch (Exception ex) {
                    emit("error", ", \"client\": \"consumer\", \"what\": " + quoted(String.valueOf(ex)));
                }
                if (done(wanted, maxLifetimeMs)) {
                    exit = 0;
                    break;
                }
            }
            stop.set(true);
            sender.join(5000);
        } finally {
            // A client whose token was refused may fail to close cleanly: that is an event, not a crash.
            for (Runnable close : List.<Runnable>of(() -> consumer.close(Duration.ofSeconds(10)),
                    () -> producer.close(Duration.ofSeconds(10)))) {
                try {
                    close.run();
                } catch (Exception ex) {
                    emit("error", ", \"client\": \"close\", \"what\": " + quoted(String.valueOf(ex)));
                }
            }
        }
        emit("done", ", \"exit\": " + exit);
        System.exit(exit);
    }

    /**
     * Done once the wanted number of distinct tokens logged in and the last replaced one is past its maximum
     * lifetime (counted from its first login, which comes after its issue): any record read now came over a
     * session authenticated with a newer token.
     */
    private static synchronized boolean done(int wanted, long maxLifetimeMs) {
        if (firstLogin.size() < wanted) {
            return false;
        }
        List<Long> logins = new ArrayList<>(firstLogin.values());
        if (wanted == 1) {
            return lastRecordAt > logins.get(0) + 1000; // one token: records read with it are enough
        }
        long replacedEnds = logins.get(wanted - 2) + maxLifetimeMs;
        return lastRecordAt > replacedEnds + 1000;
    }
}
