package kts.jvm.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import kts.jvm.core.KtsSettings;
import org.junit.jupiter.api.Test;

class FlinkClustersTest {
    private static final String P = "security.delegation.token.provider.kts.clusters.";

    @Test
    void eachClusterGetsItsOwnKtsOptions() {
        Map<String, Map<String, String>> clusters = FlinkClusters.read(Map.of(
                P + "orders.url", "https://kts.example:8443",
                P + "orders.jwt.file", "/var/run/secrets/tokens/kts",
                P + "clicks.url", "https://kts.other:8443",
                P + "clicks.user", "flink",
                P + "clicks.password.file", "/etc/flink/kts-password",
                "security.delegation.token.provider.kts.enabled", "true",
                "pipeline.name", "etl"));
        assertEquals(Map.of("kts.url", "https://kts.example:8443", "kts.jwt.file", "/var/run/secrets/tokens/kts"),
                clusters.get("orders"));
        assertEquals("flink", KtsSettings.from(clusters.get("clicks"), "").user());
        assertEquals(2, clusters.size());
    }

    @Test
    void noClusterMeansNoTokens() {
        assertTrue(FlinkClusters.read(Map.of("security.delegation.token.provider.kts.enabled", "true")).isEmpty());
    }

    @Test
    void aClusterWithoutItsUrlIsRefusedByName() {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> FlinkClusters.read(Map.of(P + "orders.user", "flink", P + "orders.password.file", "/secret")));
        assertEquals("kts cluster orders has no " + P + "orders.url", refused.getMessage());
        assertFalse(refused.getMessage().contains("/secret"));
    }

    @Test
    void aKeyWithoutClusterOrOptionIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> FlinkClusters.read(Map.of(P + "orders", "x")));
        assertThrows(IllegalArgumentException.class, () -> FlinkClusters.read(Map.of(P + ".url", "x")));
        assertThrows(IllegalArgumentException.class, () -> FlinkClusters.read(Map.of(P + "orders.", "x")));
    }
}
