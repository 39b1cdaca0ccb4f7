package kts.jvm.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import kts.jvm.core.KtsToken;
import org.junit.jupiter.api.Test;

class TokenBundleTest {
    private static final KtsToken ORDERS = new KtsToken("tok-1", "aG1hYy1vbmU=", "User:alice", 1, 2, 3);
    private static final KtsToken CLICKS = new KtsToken("tok-2", "aG1hYy10d28=", "User:bob", 4, 5, 6);

    @Test
    void theReceiverGetsEveryClusterBackAsTheProviderHadIt() {
        Map<String, KtsToken> tokens = new LinkedHashMap<>();
        tokens.put("orders", ORDERS);
        tokens.put("clicks", CLICKS);
        Map<String, KtsToken> decoded = TokenBundle.decode(TokenBundle.encode(tokens));
        assertEquals(tokens, decoded);
        assertEquals("User:bob", decoded.get("clicks").owner());
        assertEquals(4, decoded.get("clicks").issueTimestamp());
        assertEquals(6, decoded.get("clicks").maxTimestamp());
    }

    @Test
    void anOwnerKtsDidNotNameTravelsAsNone() {
        KtsToken ownerless = new KtsToken("tok-3", "aG1hYw==", null, 0, 2, 3);
        assertEquals(null, TokenBundle.decode(TokenBundle.encode(Map.of("x", ownerless))).get("x").owner());
    }

    @Test
    void bytesThatAreNotABundleAreRefusedWithoutEchoingThem() {
        byte[] bytes = TokenBundle.encode(Map.of("orders", ORDERS));
        IllegalArgumentException cut =
                assertThrows(IllegalArgumentException.class, () -> TokenBundle.decode(Arrays.copyOf(bytes, bytes.length - 3)));
        assertFalse(cut.getMessage().contains("aG1hYy1vbmU="));
        byte[] longer = Arrays.copyOf(bytes, bytes.length + 1);
        assertThrows(IllegalArgumentException.class, () -> TokenBundle.decode(longer));
        byte[] otherVersion = bytes.clone();
        otherVersion[3] = 9;
        assertThrows(IllegalArgumentException.class, () -> TokenBundle.decode(otherVersion));
        byte[] huge = ByteBuffer.allocate(8).putInt(1).putInt(Integer.MAX_VALUE).array();
        assertThrows(IllegalArgumentException.class, () -> TokenBundle.decode(huge));
        assertThrows(IllegalArgumentException.class, () -> TokenBundle.decode(new byte[0]));
    }
}
