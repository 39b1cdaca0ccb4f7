package kts.jvm.core;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one current kts token for a client: creates it, renews it before its expiry, replaces it before its
 * maximum lifetime (the new one becomes current first, the old one is ended after {@code kts.replace.overlap.ms}
 * so that connections and readers still holding it have time to move), with capped exponential backoff on
 * failures. One daemon thread; {@link #close()} stops it and ends the current token.
 */
public final class TokenKeeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TokenKeeper.class);

    private final KtsClient client;
    private final String owner;
    private final JobInfo job;
    private final KtsSettings settings;
    private final List<Consumer<KtsToken>> listeners = new CopyOnWriteArrayList<>();
    private final Object lock = new Object();
    private final Thread thread;
    private final AtomicInteger created = new AtomicInteger();

    private volatile KtsToken current;
    private volatile RuntimeException lastError;
    private volatile boolean closed;
    // Written and read by the keeper's thread only.
    private boolean renewable = true;
    private long clockOffsetMs;
    private int failures;

    public TokenKeeper(KtsClient client, String ownerOrNull, JobInfo jobOrNull, KtsSettings settings) {
        this.client = client;
        this.owner = ownerOrNull;
        this.job = jobOrNull;
        this.settings = settings;
        this.thread = new Thread(this::run, "kts-token-keeper");
        thread.setDaemon(true);
        thread.start();
    }

    /** The current token; waits for the first one up to {@code kts.first.token.timeout.ms}, then throws. */
    public KtsToken current() {
        KtsToken token = current;
        if (token != null) {
            return token;
        }
        long deadline = System.nanoTime() + settings.firstTokenTimeoutMs() * 1_000_000L;
        synchronized (lock) {
            while ((token = current) == null && !closed) {
                long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
                if (leftMs <= 0) {
                    break;
                }
                try {
                    lock.wait(leftMs);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        if (token != null) {
            return token;
        }
        RuntimeException error = lastError;
        String why = error == null ? "" : ": " + error.getMessage();
        if (closed) {
            throw new IllegalStateException("the kts token keeper is closed");
        }
        throw new KtsException(error instanceof KtsException k ? k.status() : 0,
                error instanceof KtsException k ? k.error() : null,
                "no kts token within " + settings.firstTokenTimeoutMs() + " ms" + why, -1, error);
    }

    /** Called with each new current token (created, renewed or replaced), on the keeper's thread. */
    public void addListener(Consumer<KtsToken> listener) {
        listeners.add(listener);
        KtsToken token = current;
        if (token != null) {
            listener.accept(token);
        }
    }

    /** How many tokens this keeper has created. */
    public int tokensCreated() {
        return created.get();
    }

    private void run() {
        while (!closed) {
            try {
                KtsToken token = current;
                if (token == null) {
                    publish(createToken());
                } else {
                    RefreshSchedule.Step step = RefreshSchedule.next(kts(), token, renewable,
                            settings.refreshWindowFactor(), settings.refreshMinPeriodMs(),
                            ThreadLocalRandom.current().nextDouble());
                    if (!sleepUntilKts(step.atMs())) {
                        return;
                    }
                    if (step.action() == RefreshSchedule.Action.RENEW) {
                        renew(token);
                    } else {
                        replace(token);
                    }
                }
                failures = 0;
                lastError = null;
            } catch (RuntimeException ex) {
                lastError = ex;
                failures++;
                long backoff = RefreshSchedule.backoffMs(failures, ThreadLocalRandom.current().nextDouble());
                log.warn("kts token keeper ({}): {}; retrying in {} ms", settings.url(), ex.getMessage(), backoff);
                if (!sleepFor(backoff)) {
                    return;
                }
            }
        }
    }

    private KtsToken createToken() {
        long sent = System.currentTimeMillis();
        KtsToken token = client.create(owner, job);
        long received = System.currentTimeMillis();
        created.incrementAndGet();
        if (token.issueTimestamp() > 0) {
            // kts sets the times on its own clock; act on that clock, whatever this machine's says.
            clockOffsetMs = token.issueTimestamp() - (sent + received) / 2;
        }
        renewable = true;
        log.info("kts token {} created (owner {}), expires at {}, max {}", token.tokenId(), token.owner(),
                token.expiryTimestamp(), token.maxTimestamp());
        return token;
    }

    private void renew(KtsToken token) {
        long expiry;
        try {
            expiry = client.renew(token.tokenId());
        } catch (KtsException ex) {
            if (ex.status() == 403) {
                // Not a renewer of this token (a KIP-373 token owned by someone else): replace instead.
                log.info("kts token {} may not be renewed by this client ({}); it will be replaced instead",
                        token.tokenId(), ex.error());
                renewable = false;
                return;
            }
            if (ex.status() == 404 || ex.status() == 410) {
                log.warn("kts token {} is gone ({}); replacing it now", token.tokenId(), ex.error());
                replace(token);
                return;
            }
            throw ex;
        }
        if (expiry <= token.expiryTimestamp()) {
            renewable = false; // at its maximum: a renewal cannot extend it
        }
        log.info("kts token {} renewed, expires at {}", token.tokenId(), expiry);
        publish(token.withExpiry(expiry));
    }

    private void replace(KtsToken old) {
        KtsToken fresh = createToken();
        publish(fresh);
        log.info("kts token {} replaced by {}", old.tokenId(), fresh.tokenId());
        retire(old);
    }

    private void retire(KtsToken old) {
        Long period = RefreshSchedule.retirementPeriodMs(kts(), old.expiryTimestamp(), settings.replaceOverlapMs());
        if (period == null) {
            return;
        }
        try {
            client.expire(old.tokenId(), period);
        } catch (KtsException ex) {
            // It still ends at its own expiry; the new token is current either way.
            log.warn("kts token {} could not be ended after its replacement: {}", old.tokenId(), ex.getMessage());
        }
    }

    private void publish(KtsToken token) {
        synchronized (lock) {
            current = token;
            lock.notifyAll();
        }
        for (Consumer<KtsToken> listener : listeners) {
            try {
                listener.accept(token);
            } catch (RuntimeException ex) {
                log.warn("a kts token listener failed: {}", ex.toString());
            }
        }
    }

    /** Now on kts's clock. */
    private long kts() {
        return System.currentTimeMillis() + clockOffsetMs;
    }

    private boolean sleepUntilKts(long atMs) {
        return sleepFor(atMs - kts());
    }

    /** False when the keeper was closed meanwhile. */
    private boolean sleepFor(long ms) {
        long deadline = System.nanoTime() + Math.max(0, ms) * 1_000_000L;
        synchronized (lock) {
            while (!closed) {
                long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
                if (leftMs <= 0) {
                    return true;
                }
                try {
                    lock.wait(leftMs);
                } catch (InterruptedException ex) {
                    return false;
                }
            }
        }
        return false;
    }

    /** Stops the keeper and ends its current token at kts (best effort): no token outlives its client. */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            lock.notifyAll();
        }
        try {
            thread.join(settings.httpTimeoutMs() + 1000);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        KtsToken token = current;
        if (token != null) {
            try {
                client.expire(token.tokenId());
                log.info("kts token {} ended (its client closed)", token.tokenId());
            } catch (RuntimeException ex) {
                log.warn("kts token {} could not be ended: {}", token.tokenId(), ex.getMessage());
            }
        }
        client.close();
    }
}
