package kts.jvm.core;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The one holder per JVM through which a framework's receiver (Flink's delegation token receiver on a
 * TaskManager) hands tokens to the Kafka callback handler ({@code kts.registry.key} in its JAAS options). Keys are
 * chosen by the receiver, e.g. one per Kafka cluster.
 */
public final class TokenRegistry {
    private static final ConcurrentMap<String, KtsToken> TOKENS = new ConcurrentHashMap<>();

    private TokenRegistry() {
    }

    public static void publish(String key, KtsToken token) {
        TOKENS.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(token, "token"));
    }

    public static Optional<KtsToken> current(String key) {
        return Optional.ofNullable(TOKENS.get(key));
    }

    /** The token under {@code key}, waiting up to {@code timeoutMs} for it to be published. */
    public static KtsToken await(String key, long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            KtsToken token = TOKENS.get(key);
            if (token != null) {
                return token;
            }
            if (System.nanoTime() >= deadline) {
                throw new IllegalStateException("no kts token was published under " + key + " within " + timeoutMs
                        + " ms");
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for a kts token under " + key);
            }
        }
    }

    /** Forgets the token under {@code key} (the receiver's job ended). */
    public static void remove(String key) {
        TOKENS.remove(key);
    }
}
