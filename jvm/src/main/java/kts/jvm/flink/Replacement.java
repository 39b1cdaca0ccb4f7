package kts.jvm.flink;

import kts.jvm.core.KtsToken;

/**
 * When the provider stops renewing a cluster's token and creates its successor. Flink decides when the provider
 * runs: at {@code security.delegation.tokens.renewal.time-ratio} (0.75 by default) of the time to the
 * {@code validUntil} it last returned. The provider returns the token's expiry, capped by its maximum lifetime, so
 * Flink always asks again while the token is valid; the token is replaced at the first run past the refresh window
 * factor (0.8) of its lifetime (to its maximum, or to its expiry when this login may not renew it), or once it can
 * no longer be renewed. The old token is still valid then: the TaskManagers have the new one before any of their
 * connections must re-authenticate.
 */
final class Replacement {
    private Replacement() {}

    static boolean due(KtsToken token, long now, double refreshWindowFactor, boolean renewable) {
        long end = renewable ? token.maxTimestamp() : validUntil(token);
        long start = token.issueTimestamp() > 0 ? token.issueTimestamp() : now;
        return now >= validUntil(token) || now >= start + (long) (refreshWindowFactor * (end - start));
    }

    /** When Flink should count the token as gone: its expiry, or its maximum lifetime if that comes first. */
    static long validUntil(KtsToken token) {
        return Math.min(token.expiryTimestamp(), token.maxTimestamp());
    }
}
