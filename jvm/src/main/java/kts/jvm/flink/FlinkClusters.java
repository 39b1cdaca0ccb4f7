package kts.jvm.flink;

import java.util.Map;
import java.util.TreeMap;

/**
 * The Kafka clusters a Flink deployment takes kts tokens for, read from Flink's configuration:
 * {@code security.delegation.token.provider.kts.clusters.<id>.<key>}, where {@code <key>} is one of kts's login keys
 * without their {@code kts.} prefix ({@code url}, {@code jwt.file}, {@code user}, {@code password.file},
 * {@code owner}, {@code ssl.truststore.location}, ...). The id names the cluster and is the key under which every
 * TaskManager's Kafka clients find the token ({@code kts.registry.key} in their {@code sasl.jaas.config}).
 */
final class FlinkClusters {
    /** Flink's prefix for the options of the provider with service name {@code kts}. */
    static final String SERVICE_PREFIX = "security.delegation.token.provider.kts.";

    static final String CLUSTERS_PREFIX = SERVICE_PREFIX + "clusters.";

    private FlinkClusters() {}

    /**
     * Each configured cluster's options, keyed as {@code KtsSettings} reads them ({@code kts.url}, ...), by cluster id
     * in a stable order. A cluster without {@code url} is not a cluster: it is refused, naming the key (never a
     * value).
     */
    static Map<String, Map<String, String>> read(Map<String, String> flinkConfiguration) {
        Map<String, Map<String, String>> clusters = new TreeMap<>();
        for (Map.Entry<String, String> entry : flinkConfiguration.entrySet()) {
            String key = entry.getKey();
            if (!key.startsWith(CLUSTERS_PREFIX)) {
                continue;
            }
            String rest = key.substring(CLUSTERS_PREFIX.length());
            int dot = rest.indexOf('.');
            if (dot <= 0 || dot == rest.length() - 1) {
                throw new IllegalArgumentException(
                        "a kts cluster option is " + CLUSTERS_PREFIX + "<id>.<key>, not " + key);
            }
            String id = rest.substring(0, dot);
            clusters.computeIfAbsent(id, unused -> new TreeMap<>()).put("kts." + rest.substring(dot + 1), entry.getValue());
        }
        for (Map.Entry<String, Map<String, String>> cluster : clusters.entrySet()) {
            if (!cluster.getValue().containsKey("kts.url")) {
                throw new IllegalArgumentException(
                        "kts cluster " + cluster.getKey() + " has no " + CLUSTERS_PREFIX + cluster.getKey() + ".url");
            }
        }
        return clusters;
    }
}
