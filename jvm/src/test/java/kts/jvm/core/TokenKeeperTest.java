package kts.jvm.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenKeeperTest {
    private FakeKts kts;

    @BeforeEach
    void start() throws IOException {
        kts = new FakeKts();
    }

    @AfterEach
    void stop() {
        kts.close();
    }

    private KtsSettings settings(Path directory, String... more) throws IOException {
        Path jwt = Files.writeString(directory.resolve("kts"), "a.b.c");
        Map<String, Object> options = new java.util.HashMap<>(Map.of("kts.url", kts.url(), "kts.jwt.file",
                jwt.toString(), "kts.replace.overlap.ms", "500", "kts.first.token.timeout.ms", "60000"));
        for (int i = 0; i < more.length; i += 2) {
            options.put(more[i], more[i + 1]);
        }
        return KtsSettings.from(options, "");
    }

    /** Polls (the keeper runs on its own thread); the bound is generous and only ends a hung test. */
    private static void eventually(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "condition not met within 60 s");
            Thread.sleep(20);
        }
    }

    @Test
    void replacesTheTokenBeforeItsMaximumAndEndsTheOldOneAfterTheOverlap(@TempDir Path directory)
            throws Exception {
        kts.lifetimeMs = 3_000; // replaced at 2.4 s, with 0.6 s left: more than the overlap
        KtsSettings settings = settings(directory, "kts.replace.overlap.ms", "200");
        List<String> seen = new CopyOnWriteArrayList<>();
        try (TokenKeeper keeper = new TokenKeeper(new KtsClient(settings), null, null, settings)) {
            keeper.addListener(token -> seen.add(token.tokenId()));
            KtsToken first = keeper.current();
            eventually(() -> !keeper.current().tokenId().equals(first.tokenId()));
            assertNotEquals(first.hmac(), keeper.current().hmac());
            eventually(() -> kts.requests.stream().anyMatch(r -> r.path().equals("/v1/tokens/" + first.tokenId()
                    + "/expire") && r.body().equals("{\"expiryTimePeriodMs\":200}")));
            assertTrue(keeper.tokensCreated() >= 2);
            assertEquals(first.tokenId(), seen.get(0));
        }
        String last = seen.get(seen.size() - 1);
        // closing ends the current token at once
        assertTrue(kts.requests.stream().anyMatch(r -> r.path().equals("/v1/tokens/" + last + "/expire")
                && r.body().equals("{\"expiryTimePeriodMs\":-1}")));
    }

    @Test
    void renewsBeforeTheExpiryAndKeepsTheSameToken(@TempDir Path directory) throws Exception {
        long created = System.currentTimeMillis();
        kts.handler = request -> {
            long now = System.currentTimeMillis();
            if (request.path().equals("/v1/tokens")) {
                return FakeKts.Reply.json(201, "{\"tokenId\": \"only\", \"hmac\": \"aG1hYw==\", \"issueTimestamp\": "
                        + now + ", \"expiryTimestamp\": " + (now + 1500) + ", \"maxTimestamp\": "
                        + (created + 600_000) + "}");
            }
            return FakeKts.Reply.json(200, "{\"tokenId\": \"only\", \"expiryTimestamp\": " + (now + 1500) + "}");
        };
        KtsSettings settings = settings(directory, "kts.refresh.min.period.ms", "100");
        List<Long> expiries = new CopyOnWriteArrayList<>();
        try (TokenKeeper keeper = new TokenKeeper(new KtsClient(settings), null, null, settings)) {
            keeper.addListener(token -> expiries.add(token.expiryTimestamp()));
            long first = keeper.current().expiryTimestamp();
            eventually(() -> kts.requests.stream().filter(r -> r.path().equals("/v1/tokens/only/renew")).count() >= 2);
            eventually(() -> keeper.current().expiryTimestamp() > first);
            assertEquals("only", keeper.current().tokenId());
            assertEquals(1, keeper.tokensCreated());
            assertTrue(expiries.size() >= 2, "listeners hear of renewals too");
        }
    }

    @Test
    void aRenewalRefusedAsNotARenewerMeansReplacing(@TempDir Path directory) throws Exception {
        kts.lifetimeMs = 600_000;
        long created = System.currentTimeMillis();
        kts.handler = request -> {
            if (request.path().equals("/v1/tokens")) {
                // expiry 1.5 s away, maximum far off: renewals are due
                long now = System.currentTimeMillis();
                return FakeKts.Reply.json(201, "{\"tokenId\": \"t" + kts.requests.size() + "\", \"hmac\": \"aG1hYw==\","
                        + " \"issueTimestamp\": " + now + ", \"expiryTimestamp\": " + (now + 1500)
                        + ", \"maxTimestamp\": " + (created + 600_000) + "}");
            }
            if (request.path().endsWith("/renew")) {
                return FakeKts.Reply.json(403, "{\"error\": \"DELEGATION_TOKEN_OWNER_MISMATCH\"}");
            }
            return FakeKts.Reply.json(200, "{\"expiryTimestamp\": 1}");
        };
        KtsSettings settings = settings(directory);
        try (TokenKeeper keeper = new TokenKeeper(new KtsClient(settings), "User:bob", null, settings)) {
            String first = keeper.current().tokenId();
            eventually(() -> !keeper.current().tokenId().equals(first));
            assertEquals(1, kts.requests.stream().filter(r -> r.path().endsWith("/renew")).count(),
                    "one refused renewal, then replaced");
        }
    }

    @Test
    void noTokenWithinTheWaitIsAClearError(@TempDir Path directory) throws Exception {
        kts.handler = request -> FakeKts.Reply.json(401, "{\"error\": \"UNAUTHENTICATED\", \"message\": \"bad JWT\"}");
        KtsSettings settings = settings(directory, "kts.first.token.timeout.ms", "300");
        try (TokenKeeper keeper = new TokenKeeper(new KtsClient(settings), null, null, settings)) {
            // a second attempt comes after the first refusal was recorded
            eventually(() -> kts.requests.size() >= 2);
            KtsException error = assertThrows(KtsException.class, keeper::current);
            assertEquals("no kts token within 300 ms: kts answered HTTP 401 UNAUTHENTICATED: bad JWT",
                    error.getMessage());
        }
    }
}
