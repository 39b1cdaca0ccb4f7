package kts.jvm.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KtsSettingsTest {
    private static Map<String, Object> jwtLogin() {
        Map<String, Object> options = new HashMap<>();
        options.put("kts.url", "https://kts.example:8443");
        options.put("kts.jwt.file", "/var/run/secrets/tokens/kts");
        return options;
    }

    @Test
    void readsEveryKeyWithDefaults() {
        Map<String, Object> options = jwtLogin();
        options.put("kts.owner", "User:alice");
        options.put("kts.renewers", "User:a, User:b,");
        KtsSettings settings = KtsSettings.from(options, "");
        assertEquals("https://kts.example:8443", settings.url());
        assertEquals("User:alice", settings.owner());
        assertEquals(List.of("User:a", "User:b"), settings.renewers());
        assertEquals(-1, settings.maxLifetimeMs());
        assertEquals(0.8, settings.refreshWindowFactor());
        assertEquals(60_000, settings.replaceOverlapMs());
        assertEquals("jwt:/var/run/secrets/tokens/kts", settings.login());
    }

    @Test
    void readsUnderAPrefix() {
        String prefix = "spark.kafka.clusters.c1.";
        Map<String, Object> options = Map.of(prefix + "kts.url", "http://kts:8080", prefix + "kts.user", "etl",
                prefix + "kts.password.file", "/secrets/etl", prefix + "kts.max.lifetime.ms", "3600000",
                "kts.url", "http://other");
        KtsSettings settings = KtsSettings.from(options, prefix);
        assertEquals("http://kts:8080", settings.url());
        assertEquals("etl", settings.user());
        assertEquals(3_600_000, settings.maxLifetimeMs());
    }

    @Test
    void aTokenFileNeedsNoLogin() {
        KtsSettings settings = KtsSettings.from(Map.of("kts.token.file", "/run/kts/token.json"), "");
        assertEquals("/run/kts/token.json", settings.tokenFile());
    }

    private static String refusal(Map<String, Object> options, String prefix) {
        return assertThrows(IllegalArgumentException.class, () -> KtsSettings.from(options, prefix)).getMessage();
    }

    @Test
    void refusalsNameTheKeyAndNeverASecret() {
        assertTrue(refusal(Map.of(), "p.").startsWith("p.kts.url "));
        Map<String, Object> both = jwtLogin();
        both.put("kts.user", "etl");
        both.put("kts.password.file", "/secrets/etl");
        assertTrue(refusal(both, "").startsWith("kts.jwt.file "));
        assertTrue(refusal(Map.of("kts.url", "http://kts", "kts.user", "etl"), "").startsWith("kts.password.file "));
        assertTrue(refusal(Map.of("kts.url", "ftp://kts", "kts.jwt.file", "/f"), "").startsWith("kts.url "));
        Map<String, Object> withFile = jwtLogin();
        withFile.put("kts.token.file", "/t.json");
        assertTrue(refusal(withFile, "").startsWith("kts.token.file "));
        Map<String, Object> badFactor = jwtLogin();
        badFactor.put("kts.refresh.window.factor", "1.5");
        assertTrue(refusal(badFactor, "").startsWith("kts.refresh.window.factor "));
        Map<String, Object> badTrust = jwtLogin();
        badTrust.put("kts.ssl.truststore.password", "s3cret-trust");
        String message = refusal(badTrust, "");
        assertTrue(message.startsWith("kts.ssl.truststore.location "));
        assertFalse(message.contains("s3cret-trust"));
        Map<String, Object> badOwner = jwtLogin();
        badOwner.put("kts.owner", "alice");
        assertTrue(refusal(badOwner, "").startsWith("kts.owner "));
    }

    @Test
    void toStringHoldsNoSecret() {
        Map<String, Object> options = jwtLogin();
        options.put("kts.ssl.truststore.location", "/t.jks");
        options.put("kts.ssl.truststore.password", "s3cret-trust");
        assertFalse(KtsSettings.from(options, "").toString().contains("s3cret-trust"));
    }
}
