package kts.jvm.core;

/**
 * When a {@link TokenKeeper} acts on its token. Pure: the caller gives the time (kts's clock) and the randomness.
 *
 * <p>As kafka-clients' refreshing logins: renew once the window factor (0.8) of the time left to the expiry has
 * passed, plus a jitter of up to 5% of it, but not sooner than the minimum period (unless that would reach the
 * expiry), so a failed renewal has the rest of the period to be retried. Renewals cannot go past the token's
 * maximum, so replace it (a new token) once the window factor of its whole lifetime has passed, or at the renewal
 * point when this client may not renew it or a renewal cannot extend it any more.
 */
public final class RefreshSchedule {
    static final double JITTER = 0.05;
    static final long INITIAL_BACKOFF_MS = 500;
    static final long MAX_BACKOFF_MS = 10_000;

    public enum Action {
        RENEW,
        REPLACE
    }

    public record Step(Action action, long atMs) {
    }

    private RefreshSchedule() {
    }

    /**
     * The next step for {@code token} at {@code nowMs}; {@code random} in [0, 1) draws the jitter.
     */
    public static Step next(long nowMs, KtsToken token, boolean renewable, double factor, long minPeriodMs, double random) {
        long left = token.expiryTimestamp() - nowMs;
        if (left <= 0) {
            return new Step(Action.REPLACE, nowMs);
        }
        long delay = (long) (left * Math.min(0.95, factor + JITTER * random));
        if (delay < minPeriodMs && minPeriodMs < left * 0.95) {
            delay = minPeriodMs;
        }
        long renewAt = nowMs + delay;
        long start = token.issueTimestamp() > 0 ? token.issueTimestamp() : nowMs;
        long replaceAt = start + (long) ((token.maxTimestamp() - start) * factor);
        if (!renewable) {
            return new Step(Action.REPLACE, Math.max(nowMs, Math.min(renewAt, replaceAt)));
        }
        if (token.expiryTimestamp() >= token.maxTimestamp()) {
            // A renewal cannot extend it any more: keep it until the replacement point.
            return new Step(Action.REPLACE, Math.max(nowMs, replaceAt));
        }
        if (renewAt < replaceAt) {
            return new Step(Action.RENEW, renewAt);
        }
        return new Step(Action.REPLACE, Math.max(nowMs, replaceAt));
    }

    /** The wait before retry number {@code failures} (1, 2, ...): doubling from 0.5 s, capped at 10 s, half jittered. */
    public static long backoffMs(int failures, double random) {
        int exponent = Math.min(Math.max(failures - 1, 0), 20);
        long ceiling = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS << exponent);
        return ceiling / 2 + (long) (ceiling / 2 * random);
    }

    /**
     * The expiryTimePeriodMs that ends a replaced token after {@code overlapMs}, or null when it ends sooner by
     * itself (an expire with a period can also extend a token, which would be wrong here); -1 to end it now.
     */
    public static Long retirementPeriodMs(long nowMs, long expiryTimestamp, long overlapMs) {
        if (overlapMs <= 0) {
            return -1L;
        }
        return expiryTimestamp - nowMs <= overlapMs ? null : overlapMs;
    }
}
