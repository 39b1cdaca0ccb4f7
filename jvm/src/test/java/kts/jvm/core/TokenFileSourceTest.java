package kts.jvm.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenFileSourceTest {
    private static final String HMAC_A = "QUFBQQ==";
    private static final String HMAC_B = "QkJCQg==";

    private static void write(Path file, String tokenId, String hmac, long expiry) throws IOException {
        // as kts sidecar does: a new file renamed over the old one
        Path temporary = Files.createTempFile(file.getParent(), ".token", ".tmp");
        Files.writeString(temporary, "{\n  \"tokenId\": \"" + tokenId + "\",\n  \"hmac\": \"" + hmac
                + "\",\n  \"expiryTimestamp\": " + expiry + ",\n  \"maxTimestamp\": 9000000000000\n}\n");
        Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    @Test
    void followsTheFileAsTheSidecarReplacesIt(@TempDir Path directory) throws IOException {
        Path file = directory.resolve("token.json");
        write(file, "first", HMAC_A, 1000);
        TokenFileSource source = new TokenFileSource(file, 0);
        assertEquals("first", source.current().tokenId());
        assertEquals(HMAC_A, source.current().hmac());
        write(file, "second", HMAC_B, 2000);
        assertEquals("second", source.current().tokenId());
        assertEquals(2000, source.current().expiryTimestamp());
    }

    @Test
    void aBrokenFileLeavesTheLastTokenInPlace(@TempDir Path directory) throws IOException {
        Path file = directory.resolve("token.json");
        write(file, "first", HMAC_A, 1000);
        TokenFileSource source = new TokenFileSource(file, 0);
        source.current();
        Files.writeString(file, "{\"tokenId\": ");
        assertEquals("first", source.current().tokenId());
    }

    @Test
    void noFileIsAClearErrorAfterTheWait(@TempDir Path directory) {
        TokenFileSource source = new TokenFileSource(directory.resolve("absent.json"), 0);
        IllegalStateException error = assertThrows(IllegalStateException.class, source::current);
        assertEquals("no token in " + directory.resolve("absent.json") + ": the file does not exist",
                error.getMessage());
    }

    @Test
    void theTokenNeverPrintsItsHmac() {
        KtsToken token = TokenFileSource.parse("{\"tokenId\":\"t\",\"hmac\":\"" + HMAC_A + "\"}");
        assertFalse(token.toString().contains(HMAC_A));
        assertEquals(4, token.hmacBytes().length);
    }
}
