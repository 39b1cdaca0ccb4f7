package kts.jvm.spark;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which of Spark's Kafka clusters take kts tokens, and when Spark should call again. Pure: reads a snapshot of the
 * Spark configuration as a map.
 */
final class SparkClusters {
    /** Spark's own prefix of a Kafka cluster's keys ({@code KafkaTokenSparkConf.CLUSTERS_CONFIG_PREFIX}). */
    static final String PREFIX = "spark.kafka.clusters.";
    static final String KTS_URL = "kts.url";
    /** Spark's key of the share of the returned time after which it calls the providers again (default 0.75). */
    static final String RENEWAL_RATIO = "spark.security.credentials.renewalRatio";
    static final double DEFAULT_RENEWAL_RATIO = 0.75;

    private SparkClusters() {
    }

    /** The ids of the clusters with a {@code spark.kafka.clusters.<id>.kts.url}, sorted. */
    static Set<String> ids(Map<String, String> conf) {
        Set<String> ids = new TreeSet<>();
        String suffix = "." + KTS_URL;
        for (String key : conf.keySet()) {
            if (key.startsWith(PREFIX) && key.endsWith(suffix)) {
                String id = key.substring(PREFIX.length(), key.length() - suffix.length());
                // Spark takes a cluster id up to the first dot; a key with more dots belongs to another option.
                if (!id.isEmpty() && id.indexOf('.') < 0) {
                    ids.add(id);
                }
            }
        }
        return ids;
    }

    /** The prefix of a cluster's keys, under which its {@code kts.*} keys are read. */
    static String prefix(String id) {
        return PREFIX + id + ".";
    }

    /** The alias Spark's Kafka source and sink look a cluster's token up by ({@code KafkaTokenUtil}). */
    static String alias(String id) {
        return "kafka.server.delegation.token." + id;
    }

    /**
     * What to return to Spark so that it calls again at {@code wantAtMs}: Spark schedules its next call at
     * {@code ratio} of the time to the returned one (it expects a token's expiry, and renews before it).
     */
    static long returnedTime(long nowMs, long wantAtMs, double ratio) {
        long wait = Math.max(0, wantAtMs - nowMs);
        double scaled = wait / ratio;
        if (scaled >= Long.MAX_VALUE - nowMs) {
            return Long.MAX_VALUE;
        }
        return nowMs + (long) Math.ceil(scaled);
    }

    /** Spark's renewal ratio from the configuration; the default where it is missing or not a usable number. */
    static double ratio(Map<String, String> conf) {
        String value = conf.get(RENEWAL_RATIO);
        if (value == null) {
            return DEFAULT_RENEWAL_RATIO;
        }
        try {
            double ratio = Double.parseDouble(value.trim());
            return ratio > 0 && ratio <= 1 ? ratio : DEFAULT_RENEWAL_RATIO;
        } catch (NumberFormatException ex) {
            return DEFAULT_RENEWAL_RATIO;
        }
    }
}
