package kts.jvm.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import kts.jvm.core.KtsToken;
import kts.jvm.core.TokenRegistry;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.security.token.DelegationTokenProvider.ObtainedDelegationTokens;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The provider against a fake kts (the JDK's HTTP server answering as kts's token endpoints do) on a clock of the
 * test's: what it asks kts at each of Flink's calls, and what it hands Flink.
 */
class KtsTokenProviderTest {
    private static final long EXPIRY = 10_000;
    private static final long MAX = 40_000;

    private final List<String> calls = new CopyOnWriteArrayList<>();
    private final List<String> bodies = new CopyOnWriteArrayList<>();
    private HttpServer kts;
    private long now = 1_700_000_000_000L;
    private int created;
    private int renewStatus = 200;

    @TempDir Path dir;

    @BeforeEach
    void startKts() throws IOException {
        kts = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        kts.createContext("/", this::answer);
        kts.start();
    }

    @AfterEach
    void stopKts() {
        kts.stop(0);
    }

    private void answer(HttpExchange exchange) throws IOException {
        String path = exchange.getRequestURI().getPath();
        calls.add(path);
        bodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        String body;
        int status = 200;
        if (path.equals("/v1/tokens")) {
            created++;
            status = 201;
            body = String.format("{\"tokenId\":\"tok-%d\",\"hmac\":\"aG1hYy0%d\",\"owner\":\"User:flink\","
                    + "\"issueTimestamp\":%d,\"expiryTimestamp\":%d,\"maxTimestamp\":%d}",
                    created, created, now, now + EXPIRY, now + MAX);
        } else if (path.endsWith("/renew") && renewStatus != 200) {
            status = renewStatus;
            body = "{\"error\":\"DELEGATION_TOKEN_OWNER_MISMATCH\",\"message\":\"not yours\"}";
        } else {
            body = "{\"expiryTimestamp\":" + (path.endsWith("/expire") ? now : now + EXPIRY) + "}";
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }

    private KtsTokenProvider provider(Map<String, String> extra) throws IOException {
        Path password = Files.writeString(dir.resolve("password"), "flink-password");
        String prefix = "security.delegation.token.provider.kts.clusters.orders.";
        Configuration configuration = new Configuration();
        configuration.setString(prefix + "url", "http://127.0.0.1:" + kts.getAddress().getPort());
        configuration.setString(prefix + "user", "flink");
        configuration.setString(prefix + "password.file", password.toString());
        configuration.setString(prefix + "replace.overlap.ms", "0");
        configuration.setString("pipeline.name", "orders-etl");
        configuration.setString("$internal.pipeline.job-id", "a1b2c3");
        extra.forEach(configuration::setString);
        KtsTokenProvider provider = new KtsTokenProvider(new Clock() {
            @Override
            public ZoneOffset getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(java.time.ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                return Instant.ofEpochMilli(now);
            }
        });
        provider.init(configuration);
        return provider;
    }

    private KtsToken orders(ObtainedDelegationTokens obtained) {
        return TokenBundle.decode(obtained.getTokens()).get("orders");
    }

    @Test
    void withoutClustersItAsksForNothing() throws Exception {
        KtsTokenProvider provider = new KtsTokenProvider();
        provider.init(new Configuration());
        assertFalse(provider.delegationTokensRequired());
        assertEquals("kts", provider.serviceName());
    }

    @Test
    void createsThenRenewsThenReplacesBeforeTheMaximumAndExpiresTheOldToken() throws Exception {
        KtsTokenProvider provider = provider(Map.of());
        assertTrue(provider.delegationTokensRequired());

        ObtainedDelegationTokens first = provider.obtainDelegationTokens();
        assertEquals("tok-1", orders(first).tokenId());
        assertEquals(now + EXPIRY, first.getValidUntil().orElseThrow());
        assertEquals(List.of("/v1/tokens"), calls);
        assertTrue(bodies.get(0).contains("\"job\":{\"framework\":\"flink\",\"id\":\"a1b2c3\",\"name\":\"orders-etl\""),
                bodies.get(0));

        now += 7_500; // Flink asks again at 0.75 of the time to validUntil
        ObtainedDelegationTokens renewed = provider.obtainDelegationTokens();
        assertEquals("tok-1", orders(renewed).tokenId());
        assertEquals(now + EXPIRY, renewed.getValidUntil().orElseThrow());
        assertEquals("/v1/tokens/tok-1/renew", calls.get(1));

        now += 25_000; // past 0.8 of the maximum lifetime: a new token, and the old one ends
        ObtainedDelegationTokens replaced = provider.obtainDelegationTokens();
        assertEquals("tok-2", orders(replaced).tokenId());
        long deadline = System.currentTimeMillis() + 10_000;
        while (!calls.contains("/v1/tokens/tok-1/expire") && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(List.of("/v1/tokens", "/v1/tokens/tok-1/renew", "/v1/tokens", "/v1/tokens/tok-1/expire"), calls);
    }

    @Test
    void aLoginThatMayNotRenewKeepsEachTokenUntilNearItsExpiry() throws Exception {
        renewStatus = 403;
        KtsTokenProvider provider = provider(Map.of());
        provider.obtainDelegationTokens();
        now += 7_500;
        assertEquals("tok-2", orders(provider.obtainDelegationTokens()).tokenId()); // the renewal was refused
        now += 1_000;
        assertEquals("tok-2", orders(provider.obtainDelegationTokens()).tokenId()); // kept, not renewed again
        assertEquals(3, calls.size());
        now += 7_000;
        assertEquals("tok-3", orders(provider.obtainDelegationTokens()).tokenId()); // 0.8 of its expiry passed
    }

    @Test
    void aClusterWithAnIncompleteLoginStopsTheJobManagerNamingTheCluster() {
        Configuration configuration = new Configuration();
        String prefix = "security.delegation.token.provider.kts.clusters.orders.";
        configuration.setString(prefix + "url", "http://127.0.0.1:1");
        configuration.setString(prefix + "user", "flink");
        IllegalArgumentException refused =
                assertThrows(IllegalArgumentException.class, () -> new KtsTokenProvider().init(configuration));
        assertTrue(refused.getMessage().startsWith("kts cluster orders (" + prefix), refused.getMessage());
        assertTrue(refused.getMessage().contains("password.file"), refused.getMessage());
    }

    @Test
    void theReceiverPublishesEachClusterUnderItsId() throws Exception {
        KtsTokenProvider provider = provider(Map.of());
        new KtsTokenReceiver().onNewTokensObtained(provider.obtainDelegationTokens().getTokens());
        assertEquals("tok-1", TokenRegistry.current("orders").orElseThrow().tokenId());
        TokenRegistry.remove("orders");
    }
}
