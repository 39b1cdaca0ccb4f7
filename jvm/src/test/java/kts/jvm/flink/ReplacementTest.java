package kts.jvm.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kts.jvm.core.KtsToken;
import org.junit.jupiter.api.Test;

class ReplacementTest {
    private static final long T = 1_700_000_000_000L;

    private static KtsToken token(long issue, long expiry, long max) {
        return new KtsToken("tok", "aG1hYw==", "User:alice", T + issue, T + expiry, T + max);
    }

    @Test
    void aRenewableTokenIsRenewedUntilTheWindowFactorOfItsMaximumLifetime() {
        KtsToken token = token(0, 10_000, 100_000);
        assertFalse(Replacement.due(token, T + 7_500, 0.8, true));
        assertFalse(Replacement.due(token.withExpiry(T + 90_000), T + 79_999, 0.8, true));
        assertTrue(Replacement.due(token.withExpiry(T + 90_000), T + 80_000, 0.8, true));
    }

    @Test
    void aTokenThisLoginMayNotRenewIsReplacedBeforeItsExpiry() {
        KtsToken token = token(0, 10_000, 100_000);
        assertFalse(Replacement.due(token, T + 7_500, 0.8, false));
        assertTrue(Replacement.due(token, T + 8_000, 0.8, false));
    }

    @Test
    void anExpiredTokenIsReplaced() {
        assertTrue(Replacement.due(token(0, 10_000, 100_000), T + 10_000, 0.8, true));
    }

    @Test
    void flinkCountsATokenValidUntilItsExpiryOrItsMaximumWhicheverComesFirst() {
        assertEquals(T + 10_000, Replacement.validUntil(token(0, 10_000, 100_000)));
        assertEquals(T + 100_000, Replacement.validUntil(token(0, 200_000, 100_000)));
    }
}
