package kts.jvm.flink;

import kts.jvm.core.KtsToken;

/**
 * When the provider stops renewing a cluster's token and creates its successor. Flink decides when the provider
 * runs (at {@code security.delegation.tokens.renewal.time-ratio}, 0.75 by default, of the time to the
 * {@code validUntil} it returned); the provider returns the token's expiry, capped by its maximum lifetime, so Flink
 * always asks again while the token is valid, and the token is replaced at the first run past the refresh window
 * factor (0.8) of its maximum lifetime, or once it can no longer be renewed. The old token stays valid meanwhile:
 * the TaskManagers get the new one before any connection has to re-authenticate.
 */
final class Replacement {
    private Replacement() {}

    static boolean due(KtsToken token, long now, double refreshWindowFactor) {
        long lifetime = token.maxTimestamp() - token.issueTimestamp();
        return now >= token.expiryTimestamp()
                || now >= token.maxTimestamp()
                || now >= token.issueTimestamp() + (long) (refreshWindowFactor * lifetime);
    }

    /** When Flink should count the token as gone: its expiry, or its maximum lifetime if that comes first. */
    static long validUntil(KtsToken token) {
        return Math.min(token.expiryTimestamp(), token.maxTimestamp());
    }
}
