package kts.jvm.core;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * kts's token endpoints over its public HTTP API, with the JDK's own HTTP client. Each request logs in afresh: the
 * JWT file is read every time (the kubelet replaces a projected service-account token while the job runs), or
 * Basic with {@code kts.user} and the password file. Failures are {@link KtsException}s without secrets.
 */
public final class KtsClient implements AutoCloseable {
    // Token ids are URL-safe base64; anything else is refused before it goes into a path.
    private static final Pattern TOKEN_ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final int MAX_MESSAGE = 300;
    private static final Logger log = LoggerFactory.getLogger(KtsClient.class);

    private final KtsSettings settings;
    private final URI base;
    private final HttpClient http;
    private final Duration timeout;

    public KtsClient(KtsSettings settings) {
        if (settings.url() == null) {
            throw new IllegalArgumentException(settings.prefix() + KtsSettings.URL + " is required for a KtsClient");
        }
        this.settings = settings;
        String url = settings.url();
        this.base = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
        this.timeout = Duration.ofMillis(settings.httpTimeoutMs());
        HttpClient.Builder builder = HttpClient.newBuilder()
                .connectTimeout(timeout)
                // Never follow a redirect: it would carry the credentials to wherever it points.
                .followRedirects(HttpClient.Redirect.NEVER);
        if (settings.truststoreLocation() != null) {
            builder.sslContext(sslContext(settings));
        }
        this.http = builder.build();
        if ("http".equalsIgnoreCase(base.getScheme()) && !loopback(base.getHost())) {
            log.warn("{} is {}: the login to kts and the tokens it answers with cross the network in the clear; "
                    + "use https://", settings.prefix() + KtsSettings.URL, url);
        }
    }

    public KtsSettings settings() {
        return settings;
    }

    /**
     * A new token (POST /v1/tokens), owned by the caller or, with {@code ownerOrNull} (KIP-373, kts's
     * CreateTokens grant), by that principal; with the settings' renewers and max lifetime, and {@code jobOrNull}
     * for kts's audit trail.
     */
    public KtsToken create(String ownerOrNull, JobInfo jobOrNull) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (ownerOrNull != null) {
            body.put("owner", ownerOrNull);
        }
        if (!settings.renewers().isEmpty()) {
            body.put("renewers", settings.renewers());
        }
        if (settings.maxLifetimeMs() != -1) {
            body.put("maxLifetimeMs", settings.maxLifetimeMs());
        }
        if (jobOrNull != null) {
            body.put("job", jobOrNull.toJson());
        }
        Map<String, Object> answer = post("/v1/tokens", body, 201);
        try {
            String tokenId = Json.stringField(answer, "tokenId");
            String hmac = Json.stringField(answer, "hmac");
            if (tokenId == null || hmac == null) {
                throw new IllegalArgumentException("no tokenId or hmac");
            }
            return new KtsToken(tokenId, hmac, Json.stringField(answer, "owner"),
                    Json.longField(answer, "issueTimestamp", 0), Json.longField(answer, "expiryTimestamp", 0),
                    Json.longField(answer, "maxTimestamp", 0));
        } catch (IllegalArgumentException ex) {
            throw new KtsException(201, null, "kts's answer to a token create is not a token: " + ex.getMessage());
        }
    }

    /** Renews the token by the period kts's defaults give (POST /v1/tokens/{id}/renew); the new expiry. */
    public long renew(String tokenId) {
        Map<String, Object> answer = post("/v1/tokens/" + checkedId(tokenId) + "/renew", Map.of(), 200);
        return expiryOf(answer);
    }

    /** Ends the token now (POST /v1/tokens/{id}/expire with expiryTimePeriodMs -1: kts deletes it). */
    public void expire(String tokenId) {
        expire(tokenId, -1);
    }

    /**
     * Sets the token's expiry to now + {@code periodMs} (capped at its maximum; it can also extend a token), or
     * deletes it now when {@code periodMs} is negative; the new expiry.
     */
    public long expire(String tokenId, long periodMs) {
        Map<String, Object> answer =
                post("/v1/tokens/" + checkedId(tokenId) + "/expire", Map.of("expiryTimePeriodMs", periodMs), 200);
        return expiryOf(answer);
    }

    private static long expiryOf(Map<String, Object> answer) {
        try {
            return Json.longField(answer, "expiryTimestamp", 0);
        } catch (IllegalArgumentException ex) {
            throw new KtsException(200, null, "kts's answer has no expiryTimestamp");
        }
    }

    private static String checkedId(String tokenId) {
        if (tokenId == null || !TOKEN_ID.matcher(tokenId).matches()) {
            throw new IllegalArgumentException("not a token id");
        }
        return tokenId;
    }

    /**
     * kts's answer to a request already sent, waited for even when this thread is interrupted meanwhile (the
     * request's own timeout bounds the wait; the interrupt is kept for the caller). kts may have carried the request
     * out already: abandoning its answer would lose a token it created, which then no one would end.
     */
    private HttpResponse<String> answer(CompletableFuture<HttpResponse<String>> pending) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return pending.get();
                } catch (InterruptedException ex) {
                    interrupted = true;
                } catch (ExecutionException ex) {
                    Throwable cause = ex.getCause();
                    throw new KtsException(0, null, "kts at " + base + " could not be reached: " + describe(cause),
                            -1, cause);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private Map<String, Object> post(String path, Map<String, ?> body, int expected) {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(base.getPath() + path))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .header("Authorization", authorization())
                .POST(HttpRequest.BodyPublishers.ofString(Json.write(body)))
                .build();
        HttpResponse<String> response = answer(http.sendAsync(request,
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8)));
        if (response.statusCode() != expected) {
            throw failure(response);
        }
        try {
            return Json.parseObject(response.body());
        } catch (IllegalArgumentException ex) {
            throw new KtsException(response.statusCode(), null, "kts's answer is not JSON: " + ex.getMessage());
        }
    }

    private KtsException failure(HttpResponse<String> response) {
        int status = response.statusCode();
        String error = null;
        String message = null;
        try {
            Map<String, Object> body = Json.parseObject(response.body());
            error = body.get("error") instanceof String s ? s : null;
            message = body.get("message") instanceof String s ? s : null;
        } catch (IllegalArgumentException ex) {
            // not kts's JSON error (a proxy's page): the status says enough
        }
        long retryAfterMs = response.headers().firstValue("Retry-After").map(KtsClient::seconds).orElse(-1L);
        StringBuilder text = new StringBuilder("kts answered HTTP ").append(status);
        if (error != null) {
            text.append(' ').append(clip(error));
        }
        if (message != null) {
            text.append(": ").append(clip(message));
        }
        return new KtsException(status, error, text.toString(), retryAfterMs, null);
    }

    private static long seconds(String value) {
        try {
            return Math.max(0, Long.parseLong(value.trim())) * 1000;
        } catch (NumberFormatException ex) {
            return -1;
        }
    }

    private static String clip(String text) {
        String oneLine = text.replaceAll("[\\r\\n\\t]+", " ");
        return oneLine.length() > MAX_MESSAGE ? oneLine.substring(0, MAX_MESSAGE) + "..." : oneLine;
    }

    private static String describe(Throwable ex) {
        String message = ex.getMessage();
        return ex.getClass().getSimpleName() + (message == null ? "" : " (" + clip(message) + ")");
    }

    /** The Authorization header, from the files as they are now. */
    private String authorization() {
        if (settings.jwtFile() != null) {
            String jwt = readSecret(settings.jwtFile(), KtsSettings.JWT_FILE).trim();
            if (jwt.isEmpty()) {
                throw new KtsException(0, null, settings.prefix() + KtsSettings.JWT_FILE + " is empty");
            }
            return "Bearer " + jwt;
        }
        String password = stripNewline(readSecret(settings.passwordFile(), KtsSettings.PASSWORD_FILE));
        String pair = settings.user() + ":" + password;
        return "Basic " + Base64.getEncoder().encodeToString(pair.getBytes(StandardCharsets.UTF_8));
    }

    private String readSecret(String file, String key) {
        try {
            return Files.readString(Path.of(file), StandardCharsets.UTF_8);
        } catch (IOException ex) {
            // The path is configuration, not a secret; the content never appears.
            throw new KtsException(0, null,
                    "cannot read " + settings.prefix() + key + " (" + file + "): " + ex.getClass().getSimpleName(), -1,
                    null);
        }
    }

    private static String stripNewline(String text) {
        int end = text.length();
        while (end > 0 && (text.charAt(end - 1) == '\n' || text.charAt(end - 1) == '\r')) {
            end--;
        }
        return text.substring(0, end);
    }

    private static SSLContext sslContext(KtsSettings settings) {
        String location = settings.truststoreLocation();
        String type = settings.truststoreType() == null ? "JKS" : settings.truststoreType().toUpperCase(Locale.ROOT);
        try {
            KeyStore store;
            if (type.equals("PEM")) {
                store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                CertificateFactory factory = CertificateFactory.getInstance("X.509");
                int i = 0;
                try (InputStream in = Files.newInputStream(Path.of(location))) {
                    for (Certificate certificate : factory.generateCertificates(in)) {
                        store.setCertificateEntry("kts-" + i++, certificate);
                    }
                }
            } else {
                // The JDK's JKS and PKCS12 key stores each read the other format too.
                store = KeyStore.getInstance(type);
                String password = settings.truststorePassword();
                try (InputStream in = Files.newInputStream(Path.of(location))) {
                    store.load(in, password == null ? null : password.toCharArray());
                }
            }
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, trust.getTrustManagers(), null);
            return context;
        } catch (IOException | GeneralSecurityException ex) {
            throw new IllegalArgumentException(settings.prefix() + KtsSettings.TRUSTSTORE_LOCATION + " (" + location
                    + ") cannot be loaded as " + type + ": " + ex.getClass().getSimpleName());
        }
    }

    private static boolean loopback(String host) {
        if (host == null) {
            return false;
        }
        String h = host.toLowerCase(Locale.ROOT);
        return h.equals("localhost") || h.startsWith("127.") || h.equals("[::1]") || h.equals("::1");
    }

    @Override
    public void close() {
        // The JDK's HttpClient frees its threads when unreachable (close() arrived only in Java 21).
    }
}
