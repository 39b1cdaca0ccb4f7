package kts.jvm.spark;

import java.util.concurrent.ThreadLocalRandom;
import kts.jvm.core.JobInfo;
import kts.jvm.core.KtsClient;
import kts.jvm.core.KtsException;
import kts.jvm.core.KtsSettings;
import kts.jvm.core.KtsToken;
import kts.jvm.core.RefreshSchedule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The kts token of one of Spark's Kafka clusters, kept between Spark's calls to the provider: created at the first
 * call, renewed and replaced at the calls the provider asks Spark for ({@link RefreshSchedule}, as every kts-jvm
 * client), the replaced one ended at kts after {@code kts.replace.overlap.ms} so that executors still reading with
 * it have time to move to the new one. No thread of its own: Spark's credential renewer drives it.
 */
final class ClusterToken {
    private static final Logger log = LoggerFactory.getLogger(ClusterToken.class);
    /** A call this early is taken as the planned one (Spark's timer and the clocks are not exact). */
    static final long EARLY_CALL_TOLERANCE_MS = 500;

    private final String cluster;
    private final KtsSettings settings;
    private final KtsClient client;
    private final String owner;
    private final JobInfo job;

    private KtsToken current;
    private boolean renewable = true; // the current token can still be extended
    private boolean mayRenew = true; // false once kts said this login is no renewer of the cluster's tokens
    private long clockOffsetMs;
    private RefreshSchedule.Step planned;
    private long retryAtMs = Long.MIN_VALUE; // local clock; set after a failed step while the token still works
    private int failures;
    private int created;

    ClusterToken(String cluster, KtsSettings settings, String ownerOrNull, JobInfo job) {
        this.cluster = cluster;
        this.settings = settings;
        this.client = new KtsClient(settings);
        this.owner = ownerOrNull;
        this.job = job;
    }

    /**
     * The token to hand to Spark now, after the step that is due (create, renew or replace). Throws when there is
     * no working token: at the first call after retrying for {@code kts.first.token.timeout.ms}.
     */
    synchronized KtsToken current(long nowMs) {
        if (current == null || current.expiryTimestamp() <= kts(nowMs)) {
            return first();
        }
        boolean due = retryAtMs != Long.MIN_VALUE ? nowMs >= retryAtMs
                : planned == null || planned.atMs() - EARLY_CALL_TOLERANCE_MS <= kts(nowMs);
        if (due) {
            try {
                step(planned == null ? plan().action() : planned.action());
                failures = 0;
                retryAtMs = Long.MIN_VALUE;
                planned = plan();
            } catch (RuntimeException ex) {
                failures++;
                long backoff = RefreshSchedule.backoffMs(failures, ThreadLocalRandom.current().nextDouble());
                retryAtMs = System.currentTimeMillis() + backoff;
                log.warn("kts: Spark's Kafka cluster {}: {}; token {} still works until {}, retrying in {} ms",
                        cluster, ex.getMessage(), current.tokenId(), current.expiryTimestamp(), backoff);
            }
        }
        return current;
    }

    /** When Spark should call again (local clock). */
    synchronized long nextCallAtMs() {
        if (retryAtMs != Long.MIN_VALUE) {
            return retryAtMs;
        }
        return planned == null ? System.currentTimeMillis() : planned.atMs() - clockOffsetMs;
    }

    /** How many tokens this cluster's provider created (the first and every replacement). */
    synchronized int created() {
        return created;
    }

    private KtsToken first() {
        long deadline = System.nanoTime() + settings.firstTokenTimeoutMs() * 1_000_000L;
        while (true) {
            try {
                if (current != null) {
                    log.warn("kts: Spark's Kafka cluster {}: token {} has expired; creating another",
                            cluster, current.tokenId());
                }
                current = create();
                renewable = mayRenew;
                failures = 0;
                retryAtMs = Long.MIN_VALUE;
                planned = plan();
                return current;
            } catch (KtsException ex) {
                failures++;
                long backoff = RefreshSchedule.backoffMs(failures, ThreadLocalRandom.current().nextDouble());
                if (!ex.retryable() || System.nanoTime() + backoff * 1_000_000L > deadline) {
                    throw new KtsException(ex.status(), ex.error(), "no kts token for Spark's Kafka cluster "
                            + cluster + " (" + settings.url() + "): " + ex.getMessage(), ex.retryAfterMs(), ex);
                }
                log.warn("kts: Spark's Kafka cluster {}: {}; retrying in {} ms", cluster, ex.getMessage(), backoff);
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw ex;
                }
            }
        }
    }

    private RefreshSchedule.Step plan() {
        return RefreshSchedule.next(kts(System.currentTimeMillis()), current, renewable,
                settings.refreshWindowFactor(), settings.refreshMinPeriodMs(),
                ThreadLocalRandom.current().nextDouble());
    }

    private void step(RefreshSchedule.Action action) {
        if (action == RefreshSchedule.Action.RENEW && mayRenew && renew()) {
            return;
        }
        replace();
    }

    /** False when the token must be replaced instead. */
    private boolean renew() {
        long expiry;
        try {
            expiry = client.renew(current.tokenId());
        } catch (KtsException ex) {
            if (ex.status() == 403 || ex.status() == 404 || ex.status() == 410) {
                // Not a renewer of it (a token for another owner, without kts.renewers), or gone: a new one.
                log.info("kts: Spark's Kafka cluster {}: token {} cannot be renewed ({}); replacing it", cluster,
                        current.tokenId(), ex.error());
                if (ex.status() == 403) {
                    mayRenew = false;
                }
                return false;
            }
            throw ex;
        }
        if (expiry <= current.expiryTimestamp()) {
            renewable = false; // at its maximum
        }
        current = current.withExpiry(expiry);
        log.info("kts: Spark's Kafka cluster {}: token {} renewed, expires at {}", cluster, current.tokenId(), expiry);
        return true;
    }

    private void replace() {
        KtsToken old = current;
        current = create();
        renewable = mayRenew;
        log.info("kts: Spark's Kafka cluster {}: token {} replaced by {}", cluster, old.tokenId(),
                current.tokenId());
        Long period = RefreshSchedule.retirementPeriodMs(kts(System.currentTimeMillis()), old.expiryTimestamp(),
                settings.replaceOverlapMs());
        if (period == null) {
            return;
        }
        try {
            client.expire(old.tokenId(), period);
        } catch (KtsException ex) {
            // It ends at its own expiry anyway; the new token is handed out either way.
            log.warn("kts: Spark's Kafka cluster {}: token {} could not be ended after its replacement: {}",
                    cluster, old.tokenId(), ex.getMessage());
        }
    }

    private KtsToken create() {
        long sent = System.currentTimeMillis();
        KtsToken token = client.create(owner, job);
        long received = System.currentTimeMillis();
        created++;
        if (token.issueTimestamp() > 0) {
            // kts sets the times on its own clock: plan on that clock, whatever this machine's says.
            clockOffsetMs = token.issueTimestamp() - (sent + received) / 2;
        }
        log.info("kts: Spark's Kafka cluster {}: token {} created (owner {}, for {}), expires at {}, max {}",
                cluster, token.tokenId(), token.owner(), job, token.expiryTimestamp(), token.maxTimestamp());
        return token;
    }

    private long kts(long localMs) {
        return localMs + clockOffsetMs;
    }

    /** Ends the current token at kts (best effort): the application is ending, no executor needs it any more. */
    synchronized void end() {
        if (current == null) {
            return;
        }
        try {
            client.expire(current.tokenId());
            log.info("kts: Spark's Kafka cluster {}: token {} ended (the application ends)", cluster,
                    current.tokenId());
        } catch (RuntimeException ex) {
            log.warn("kts: Spark's Kafka cluster {}: token {} could not be ended: {}", cluster, current.tokenId(),
                    ex.getMessage());
        }
        current = null;
        client.close();
    }
}
