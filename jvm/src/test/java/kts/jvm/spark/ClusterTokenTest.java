package kts.jvm.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import kts.jvm.core.JobInfo;
import kts.jvm.core.KtsException;
import kts.jvm.core.KtsSettings;
import kts.jvm.core.KtsToken;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The provider's token for one cluster, driven by calls as Spark's renewer makes them, against a stand-in for kts
 * whose tokens expire after {@link #RENEW_MS} (renewable to {@link #MAX_MS}).
 */
class ClusterTokenTest {
    static final long RENEW_MS = 2_000;
    static final long MAX_MS = 3_000;
    static final String JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzcGFyayJ9.c2lnbmF0dXJl";

    record Request(String method, String path, String body) {
    }

    final List<Request> requests = new CopyOnWriteArrayList<>();
    final AtomicInteger tokens = new AtomicInteger();
    final Map<String, long[]> times = new HashMap<>(); // id -> {expiry, max}
    volatile int renewStatus = 200;
    volatile int status = 0; // 0: answer as kts, else this status for everything
    HttpServer server;

    @TempDir
    Path directory;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            String path = exchange.getRequestURI().getPath();
            requests.add(new Request(exchange.getRequestMethod(), path, body));
            int code;
            String reply;
            synchronized (times) {
                long now = System.currentTimeMillis();
                if (status != 0) {
                    code = status;
                    reply = "{\"error\": \"UNAVAILABLE\", \"message\": \"down\"}";
                } else if (path.equals("/v1/tokens")) {
                    String id = "token-" + tokens.incrementAndGet();
                    times.put(id, new long[] {now + RENEW_MS, now + MAX_MS});
                    code = 201;
                    reply = "{\"tokenId\": \"" + id + "\", \"hmac\": \"c2VjcmV0\", \"owner\": \"User:spark\","
                            + " \"issueTimestamp\": " + now + ", \"expiryTimestamp\": " + (now + RENEW_MS)
                            + ", \"maxTimestamp\": " + (now + MAX_MS) + "}";
                } else if (path.endsWith("/renew") && renewStatus != 200) {
                    code = renewStatus;
                    reply = "{\"error\": \"DELEGATION_TOKEN_OWNER_MISMATCH\", \"message\": \"no renewer\"}";
                } else {
                    long[] t = times.get(path.split("/")[3]);
                    t[0] = path.endsWith("/renew") ? Math.min(now + RENEW_MS, t[1]) : now + 500;
                    code = 200;
                    reply = "{\"expiryTimestamp\": " + t[0] + "}";
                }
            }
            byte[] bytes = reply.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(code, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    ClusterToken cluster(String... more) throws IOException {
        Path jwt = directory.resolve("jwt");
        Files.writeString(jwt, JWT);
        String prefix = "spark.kafka.clusters.events.";
        Map<String, String> conf = new HashMap<>(Map.of(prefix + "kts.url",
                "http://127.0.0.1:" + server.getAddress().getPort(), prefix + "kts.jwt.file", jwt.toString(),
                prefix + "kts.refresh.min.period.ms", "100", prefix + "kts.replace.overlap.ms", "100",
                prefix + "kts.first.token.timeout.ms", "1000"));
        for (int i = 0; i < more.length; i += 2) {
            conf.put(prefix + more[i], more[i + 1]);
        }
        return new ClusterToken("events", KtsSettings.from(conf, prefix), null,
                new JobInfo("spark", "app-1", "nightly", "joe"));
    }

    /** Calls as Spark would: at the time asked for, for {@code forMs}; the tokens handed out. */
    static List<KtsToken> drive(ClusterToken cluster, long forMs) throws InterruptedException {
        List<KtsToken> handed = new CopyOnWriteArrayList<>();
        long end = System.currentTimeMillis() + forMs;
        while (System.currentTimeMillis() < end) {
            handed.add(cluster.current(System.currentTimeMillis()));
            Thread.sleep(Math.max(0, Math.min(end, cluster.nextCallAtMs()) - System.currentTimeMillis()));
        }
        return handed;
    }

    long count(String suffix) {
        return requests.stream().filter(r -> r.path().endsWith(suffix)).count();
    }

    @Test
    void theFirstCallCreatesAndAsksToBeCalledAtTheRenewal() throws IOException {
        ClusterToken cluster = cluster();
        KtsToken token = cluster.current(System.currentTimeMillis());
        assertEquals("token-1", token.tokenId());
        // At 0.8 of the 2 s left, plus up to 5% jitter: not at once, and not later (measured after the call, so
        // a loaded machine only shortens it).
        long wait = cluster.nextCallAtMs() - System.currentTimeMillis();
        assertTrue(wait > 800 && wait <= 1_700, "renewal in " + wait + " ms");
        assertTrue(requests.get(0).body().contains("\"job\""), requests.get(0).body());
        // A call before that time changes nothing and asks kts nothing.
        assertEquals(token, cluster.current(System.currentTimeMillis()));
        assertEquals(1, requests.size());
        assertEquals(1, cluster.created());
    }

    @Test
    void itRenewsThenReplacesBeforeTheMaximumAndEndsTheReplacedTokenAfterTheOverlap() throws Exception {
        ClusterToken cluster = cluster();
        List<KtsToken> handed = drive(cluster, 4_500);
        assertTrue(count("/renew") >= 1, requests.toString());
        assertTrue(cluster.created() >= 2, requests.toString());
        KtsToken last = handed.get(handed.size() - 1);
        assertNotEquals("token-1", last.tokenId());
        Request end = requests.stream().filter(r -> r.path().equals("/v1/tokens/token-1/expire")).findFirst()
                .orElseThrow(() -> new AssertionError(requests.toString()));
        assertTrue(end.body().replace(" ", "").contains("\"expiryTimePeriodMs\":100"), end.body());
        for (KtsToken token : handed) {
            assertTrue(token.expiryTimestamp() > 0);
        }
    }

    @Test
    void aLoginThatMayNotRenewReplacesInstead() throws Exception {
        renewStatus = 403;
        ClusterToken cluster = cluster("kts.owner", "User:alice");
        drive(cluster, 3_000);
        assertEquals(1, count("/renew")); // refused once, then never asked again
        assertTrue(cluster.created() >= 2, requests.toString());
    }

    @Test
    void aFailedStepKeepsTheWorkingTokenAndAsksForACallSoon() throws IOException {
        ClusterToken cluster = cluster();
        KtsToken first = cluster.current(System.currentTimeMillis());
        status = 503;
        KtsToken still = cluster.current(cluster.nextCallAtMs());
        assertEquals(first.tokenId(), still.tokenId());
        long wait = cluster.nextCallAtMs() - System.currentTimeMillis();
        assertTrue(wait <= 500, "retry in " + wait + " ms");
    }

    @Test
    void noFirstTokenFailsNamingTheClusterAndNoSecret() throws IOException {
        status = 401;
        ClusterToken cluster = cluster();
        KtsException error = assertThrows(KtsException.class, () -> cluster.current(System.currentTimeMillis()));
        assertEquals(401, error.status());
        assertTrue(error.getMessage().contains("events"), error.getMessage());
        assertFalse(error.getMessage().contains(JWT), error.getMessage());
        assertEquals(1, requests.size()); // a refusal is not retried
    }
}
