package kts.jvm.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The token in the JSON file {@code kts sidecar --format json} keeps ({@code {"tokenId", "hmac",
 * "expiryTimestamp", "maxTimestamp"}}). The sidecar renews and replaces the token and rewrites the file atomically;
 * this reads it again whenever it changed, so each authentication gets the latest token.
 */
public final class TokenFileSource {
    private static final Logger log = LoggerFactory.getLogger(TokenFileSource.class);
    private static final long POLL_MS = 200;

    private final Path file;
    private final long firstTokenTimeoutMs;
    private KtsToken token;
    private Object seen; // what identified the file version that token came from

    public TokenFileSource(Path file, long firstTokenTimeoutMs) {
        this.file = Objects.requireNonNull(file, "file");
        this.firstTokenTimeoutMs = firstTokenTimeoutMs;
    }

    public TokenFileSource(Path file) {
        this(file, KtsSettings.DEFAULT_FIRST_TOKEN_TIMEOUT_MS);
    }

    public static TokenFileSource from(KtsSettings settings) {
        if (settings.tokenFile() == null) {
            throw new IllegalArgumentException(settings.prefix() + KtsSettings.TOKEN_FILE + " is required");
        }
        return new TokenFileSource(Path.of(settings.tokenFile()), settings.firstTokenTimeoutMs());
    }

    public Path file() {
        return file;
    }

    /**
     * The token the file holds now; waits up to the first-token timeout for the file to appear (the sidecar may
     * start beside the job), then throws. A file that cannot be read later leaves the last token in place.
     */
    public synchronized KtsToken current() {
        long deadline = System.nanoTime() + firstTokenTimeoutMs * 1_000_000L;
        while (true) {
            String problem = refresh();
            if (token != null) {
                return token;
            }
            if (System.nanoTime() >= deadline) {
                throw new IllegalStateException("no token in " + file + ": " + problem);
            }
            try {
                Thread.sleep(POLL_MS);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + file);
            }
        }
    }

    /** Reads the file when it changed; null, or why it could not be read. */
    private String refresh() {
        Object version;
        try {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            // The sidecar renames a new file over the old one: a new file key (inode), time or size.
            version = java.util.List.of(String.valueOf(attributes.fileKey()), attributes.lastModifiedTime(),
                    attributes.size());
        } catch (NoSuchFileException ex) {
            return "the file does not exist";
        } catch (IOException ex) {
            return ex.getClass().getSimpleName();
        }
        if (version.equals(seen) && token != null) {
            return null;
        }
        try {
            KtsToken read = parse(Files.readString(file, StandardCharsets.UTF_8));
            if (token == null || !token.tokenId().equals(read.tokenId())) {
                log.info("kts token {} read from {}", read.tokenId(), file);
            }
            token = read;
            seen = version;
            return null;
        } catch (IOException | IllegalArgumentException ex) {
            log.warn("cannot read the kts token file {}: {}", file, ex.getMessage());
            return ex.getMessage();
        }
    }

    static KtsToken parse(String text) {
        Map<String, Object> json = Json.parseObject(text);
        String tokenId = Json.stringField(json, "tokenId");
        String hmac = Json.stringField(json, "hmac");
        if (tokenId == null || hmac == null) {
            throw new IllegalArgumentException("no tokenId or hmac in the token file");
        }
        return new KtsToken(tokenId, hmac, Json.stringField(json, "owner"), Json.longField(json, "issueTimestamp", 0),
                Json.longField(json, "expiryTimestamp", 0), Json.longField(json, "maxTimestamp", 0));
    }
}
