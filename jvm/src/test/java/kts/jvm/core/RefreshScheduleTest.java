package kts.jvm.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RefreshScheduleTest {
    private static final long MIN = 1_000;

    private static final long T = 1_700_000_000_000L; // times are relative to T (an issueTimestamp of 0 means unknown)

    private static KtsToken token(long issue, long expiry, long max) {
        return new KtsToken("tok", "aG1hYw==", "User:alice", T + issue, T + expiry, T + max);
    }

    private static RefreshSchedule.Step next(long now, KtsToken token, boolean renewable, long minPeriod, double random) {
        RefreshSchedule.Step step = RefreshSchedule.next(T + now, token, renewable, 0.8, minPeriod, random);
        return new RefreshSchedule.Step(step.action(), step.atMs() - T);
    }

    @Test
    void renewsAtTheWindowFactorOfTheTimeLeft() {
        RefreshSchedule.Step step = next(0, token(0, 10_000, 100_000), true, MIN, 0.0);
        assertEquals(new RefreshSchedule.Step(RefreshSchedule.Action.RENEW, 8_000), step);
    }

    @Test
    void jitterAddsUpToFivePercent() {
        RefreshSchedule.Step step = next(0, token(0, 10_000, 100_000), true, MIN, 0.999999);
        assertEquals(RefreshSchedule.Action.RENEW, step.action());
        assertTrue(step.atMs() > 8_000 && step.atMs() < 8_500, String.valueOf(step.atMs()));
    }

    @Test
    void replacesAtTheWindowFactorOfTheLifetimeWhenRenewingCannotReachIt() {
        // expiry == max: a renewal cannot extend it, so keep it until 80% of its whole lifetime
        RefreshSchedule.Step step = next(5_000, token(0, 20_000, 20_000), true, MIN, 0.0);
        assertEquals(new RefreshSchedule.Step(RefreshSchedule.Action.REPLACE, 16_000), step);
    }

    @Test
    void replacesWhenTheNextRenewalWouldComeAfterTheReplacementPoint() {
        RefreshSchedule.Step step = next(70_000, token(0, 95_000, 100_000), true, MIN, 0.0);
        assertEquals(new RefreshSchedule.Step(RefreshSchedule.Action.REPLACE, 80_000), step);
    }

    @Test
    void aTokenThisClientMayNotRenewIsReplacedAtTheRenewalPoint() {
        RefreshSchedule.Step step = next(0, token(0, 10_000, 100_000), false, MIN, 0.0);
        assertEquals(new RefreshSchedule.Step(RefreshSchedule.Action.REPLACE, 8_000), step);
    }

    @Test
    void anExpiredTokenIsReplacedNow() {
        RefreshSchedule.Step step = next(50_000, token(0, 40_000, 100_000), true, MIN, 0.0);
        assertEquals(new RefreshSchedule.Step(RefreshSchedule.Action.REPLACE, 50_000), step);
    }

    @Test
    void theMinimumPeriodHoldsUnlessItWouldReachTheExpiry() {
        assertEquals(5_000, next(0, token(0, 6_000, 100_000), true, 5_000, 0.0).atMs(),
                "4.8 s is below the minimum period of 5 s, which still ends before the expiry");
        assertEquals(1_600, next(0, token(0, 2_000, 100_000), true, 5_000, 0.0).atMs(),
                "5 s would be past the expiry 2 s away: the window factor wins");
    }

    @Test
    void backoffDoublesAndIsCapped() {
        assertEquals(500, RefreshSchedule.backoffMs(1, 1.0));
        assertEquals(1_000, RefreshSchedule.backoffMs(2, 1.0));
        assertEquals(10_000, RefreshSchedule.backoffMs(30, 1.0));
        assertEquals(5_000, RefreshSchedule.backoffMs(30, 0.0));
    }

    @Test
    void aReplacedTokenEndsAfterTheOverlapButIsNeverExtended() {
        assertEquals(3_000L, RefreshSchedule.retirementPeriodMs(0, 10_000, 3_000));
        assertNull(RefreshSchedule.retirementPeriodMs(0, 2_000, 3_000));
        assertEquals(-1L, RefreshSchedule.retirementPeriodMs(0, 10_000, 0));
    }
}
