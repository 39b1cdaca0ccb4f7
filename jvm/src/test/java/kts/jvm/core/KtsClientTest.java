package kts.jvm.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KtsClientTest {
    private FakeKts kts;

    @BeforeEach
    void start() throws IOException {
        kts = new FakeKts();
    }

    @AfterEach
    void stop() {
        kts.close();
    }

    private KtsClient jwtClient(Path jwt, Map<String, Object> more) {
        Map<String, Object> options = new java.util.HashMap<>(more);
        options.put("kts.url", kts.url());
        options.put("kts.jwt.file", jwt.toString());
        return new KtsClient(KtsSettings.from(options, ""));
    }

    @Test
    void theJwtFileIsReadAgainForEveryRequest(@TempDir Path directory) throws IOException {
        Path jwt = directory.resolve("kts");
        Files.writeString(jwt, "first.jwt.value\n");
        KtsClient client = jwtClient(jwt, Map.of());
        client.create(null, null);
        Files.writeString(jwt, "second.jwt.value\n");
        client.renew("token-1");
        assertEquals("Bearer first.jwt.value", kts.requests.get(0).authorization());
        assertEquals("Bearer second.jwt.value", kts.requests.get(1).authorization());
    }

    @Test
    void basicLoginTakesThePasswordFileWithoutItsNewline(@TempDir Path directory) throws IOException {
        Path password = directory.resolve("password");
        Files.writeString(password, "pa:ss wörd\n");
        KtsClient client = new KtsClient(KtsSettings.from(
                Map.of("kts.url", kts.url(), "kts.user", "etl", "kts.password.file", password.toString()), ""));
        client.create(null, null);
        String expected = Base64.getEncoder().encodeToString("etl:pa:ss wörd".getBytes(StandardCharsets.UTF_8));
        assertEquals("Basic " + expected, kts.requests.get(0).authorization());
    }

    @Test
    void createSendsTheSettingsAndTheJobOnlyWhenGiven(@TempDir Path directory) throws IOException {
        Path jwt = Files.writeString(directory.resolve("kts"), "a.b.c");
        KtsClient client = jwtClient(jwt, Map.of("kts.renewers", "User:r", "kts.max.lifetime.ms", "20000"));
        KtsToken token = client.create("User:alice", null);
        assertEquals("token-1", token.tokenId());
        assertEquals("User:alice", token.owner());
        assertEquals("{\"owner\":\"User:alice\",\"renewers\":[\"User:r\"],\"maxLifetimeMs\":20000}",
                kts.requests.get(0).body());
        client.create(null, new JobInfo("spark", "app-1", null, "alice"));
        assertEquals("{\"renewers\":[\"User:r\"],\"maxLifetimeMs\":20000,\"job\":{\"framework\":\"spark\","
                + "\"id\":\"app-1\",\"user\":\"alice\"}}", kts.requests.get(1).body());
    }

    @Test
    void renewAndExpireNameTheTokenInThePath(@TempDir Path directory) throws IOException {
        KtsClient client = jwtClient(Files.writeString(directory.resolve("kts"), "a.b.c"), Map.of());
        assertTrue(client.renew("tok_-1") > 0);
        client.expire("tok_-1");
        client.expire("tok_-1", 3000);
        assertEquals("/v1/tokens/tok_-1/renew", kts.requests.get(0).path());
        assertEquals("{}", kts.requests.get(0).body());
        assertEquals("{\"expiryTimePeriodMs\":-1}", kts.requests.get(1).body());
        assertEquals("{\"expiryTimePeriodMs\":3000}", kts.requests.get(2).body());
        assertThrows(IllegalArgumentException.class, () -> client.renew("../users"));
        assertEquals(3, kts.requests.size());
    }

    @Test
    void anInterruptedCallStillTakesKtsAnswerAndKeepsTheInterrupt(@TempDir Path directory) throws IOException {
        // Spark stops its credential renewer with an interrupt: a token kts created meanwhile must not be lost.
        KtsClient client = jwtClient(Files.writeString(directory.resolve("kts"), "a.b.c"), Map.of());
        java.util.function.Function<FakeKts.Request, FakeKts.Reply> tokens = kts.handler;
        kts.handler = request -> {
            try {
                Thread.sleep(200);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            return tokens.apply(request);
        };
        Thread.currentThread().interrupt();
        try {
            assertEquals("token-1", client.create(null, null).tokenId());
            assertTrue(Thread.currentThread().isInterrupted());
        } finally {
            Thread.interrupted();
        }
        assertEquals(1, kts.created());
    }

    @Test
    void errorsCarryKtsStatusAndNameButNoSecret(@TempDir Path directory) throws IOException {
        Path jwt = Files.writeString(directory.resolve("kts"), "secret.jwt.value");
        kts.handler = request -> new FakeKts.Reply(429,
                "{\"error\": \"TOKEN_QUOTA_EXCEEDED\", \"message\": \"User:alice holds 500 tokens.\"}",
                Map.of("Retry-After", "7"));
        KtsException error = assertThrows(KtsException.class, () -> jwtClient(jwt, Map.of()).create(null, null));
        assertEquals(429, error.status());
        assertEquals("TOKEN_QUOTA_EXCEEDED", error.error());
        assertEquals(7000, error.retryAfterMs());
        assertTrue(error.retryable());
        assertEquals("kts answered HTTP 429 TOKEN_QUOTA_EXCEEDED: User:alice holds 500 tokens.", error.getMessage());
        assertFalse(error.getMessage().contains("secret.jwt.value"));

        kts.handler = request -> FakeKts.Reply.json(403, "{\"error\": \"DELEGATION_TOKEN_AUTHORIZATION_FAILED\"}");
        KtsException denied = assertThrows(KtsException.class, () -> jwtClient(jwt, Map.of()).create("User:x", null));
        assertFalse(denied.retryable());
    }

    @Test
    void aRedirectIsNotFollowed(@TempDir Path directory) throws IOException {
        kts.handler = request -> new FakeKts.Reply(307, "", Map.of("Location", "http://attacker.example/"));
        KtsClient client = jwtClient(Files.writeString(directory.resolve("kts"), "a.b.c"), Map.of());
        assertEquals(307, assertThrows(KtsException.class, () -> client.create(null, null)).status());
        assertEquals(1, kts.requests.size());
    }

    @Test
    void anUnreachableKtsIsRetryableAndAnUnreadableFileNamesTheKey(@TempDir Path directory) throws IOException {
        Path jwt = Files.writeString(directory.resolve("kts"), "a.b.c");
        KtsClient client = jwtClient(jwt, Map.of());
        kts.close();
        KtsException unreachable = assertThrows(KtsException.class, () -> client.create(null, null));
        assertEquals(0, unreachable.status());
        assertTrue(unreachable.retryable());
        Files.delete(jwt);
        KtsException noFile = assertThrows(KtsException.class, () -> client.create(null, null));
        assertTrue(noFile.getMessage().startsWith("cannot read kts.jwt.file"), noFile.getMessage());
    }
}
