package kts.jvm.flink;

import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import kts.jvm.core.JobInfo;
import kts.jvm.core.KtsClient;
import kts.jvm.core.KtsException;
import kts.jvm.core.KtsSettings;
import kts.jvm.core.KtsToken;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.security.token.DelegationTokenProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Flink's delegation token provider for kts (service name {@code kts}), run by the JobManager's
 * {@code DelegationTokenManager}: for each cluster under {@code security.delegation.token.provider.kts.clusters.<id>.}
 * it logs in to kts (the only place that holds a kts login) and keeps one token, created for the job, renewed
 * while Flink asks again, and replaced before its maximum lifetime, the old one expired after an overlap. Flink
 * ships the tokens to every TaskManager, where {@link KtsTokenReceiver} takes them.
 */
public final class KtsTokenProvider implements DelegationTokenProvider {
    static final String SERVICE_NAME = "kts";

    private static final Logger LOG = LoggerFactory.getLogger(KtsTokenProvider.class);

    private final Clock clock;
    private final Map<String, Cluster> clusters = new LinkedHashMap<>();
    private JobInfo job;
    private ScheduledExecutorService expirer;

    public KtsTokenProvider() {
        this(Clock.systemUTC());
    }

    KtsTokenProvider(Clock clock) {
        this.clock = clock;
    }

    @Override
    public String serviceName() {
        return SERVICE_NAME;
    }

    @Override
    public void init(Configuration configuration) {
        Map<String, String> options = configuration.toMap();
        for (Map.Entry<String, Map<String, String>> entry : FlinkClusters.read(options).entrySet()) {
            KtsSettings settings;
            try {
                settings = KtsSettings.from(entry.getValue(), "");
            } catch (IllegalArgumentException e) {
                // The message names the library's key (kts.user); say where it is in Flink's configuration.
                throw new IllegalArgumentException("kts cluster " + entry.getKey() + " (" + FlinkClusters.CLUSTERS_PREFIX
                        + entry.getKey() + ".<key without kts.>): " + e.getMessage(), e);
            }
            clusters.put(entry.getKey(), new Cluster(entry.getKey(), settings, new KtsClient(settings)));
        }
        job = FlinkJob.of(options);
        if (!clusters.isEmpty()) {
            LOG.info("kts: taking tokens for the Kafka clusters {} for {}", clusters.keySet(), FlinkJob.describe(job));
        }
    }

    @Override
    public boolean delegationTokensRequired() {
        return !clusters.isEmpty();
    }

    @Override
    public synchronized ObtainedDelegationTokens obtainDelegationTokens() {
        Map<String, KtsToken> tokens = new LinkedHashMap<>();
        long validUntil = Long.MAX_VALUE;
        for (Cluster cluster : clusters.values()) {
            KtsToken token = cluster.current(clock.millis());
            tokens.put(cluster.id, token);
            validUntil = Math.min(validUntil, Replacement.validUntil(token));
        }
        return new ObtainedDelegationTokens(TokenBundle.encode(tokens), Optional.of(validUntil));
    }

    /** One cluster's kts and its current token. */
    private final class Cluster {
        final String id;
        final KtsSettings settings;
        final KtsClient client;
        KtsToken token;
        boolean renewable = true;

        Cluster(String id, KtsSettings settings, KtsClient client) {
            this.id = id;
            this.settings = settings;
            this.client = client;
        }

        /** The token to hand out now: created, renewed, or replaced by a new one. */
        KtsToken current(long now) {
            if (token != null && !Replacement.due(token, now, settings.refreshWindowFactor(), renewable)) {
                if (renewable) {
                    try {
                        long expiry = client.renew(token.tokenId());
                        token = token.withExpiry(expiry);
                        LOG.info("kts: cluster {}: renewed token {} until {}", id, token.tokenId(), expiry);
                        return token;
                    } catch (KtsException e) {
                        if (e.status() == 403) {
                            // A token created for another owner (kts.owner) may be renewed only by its owner and
                            // renewers: from now on each token lives to its expiry and is then replaced.
                            renewable = false;
                        }
                        LOG.warn("kts: cluster {}: could not renew token {}, creating a new one: {}", id,
                                token.tokenId(), e.getMessage());
                    }
                } else {
                    return token;
                }
            }
            KtsToken previous = token;
            token = client.create(settings.owner(), job);
            if (previous == null) {
                LOG.info("kts: cluster {}: created token {} for owner {}, expires at {}, at the latest {}", id,
                        token.tokenId(), token.owner(), token.expiryTimestamp(), token.maxTimestamp());
            } else {
                LOG.info("kts: cluster {}: token {} replaces token {}", id, token.tokenId(), previous.tokenId());
                retireLater(previous, now);
            }
            return token;
        }

        /**
         * The replaced token stays valid for the overlap ({@code replace.overlap.ms}), so that no TaskManager
         * between the two is refused, and is then expired (at once when its own expiry comes sooner anyway).
         */
        private void retireLater(KtsToken previous, long now) {
            long delay = Math.max(0, Math.min(settings.replaceOverlapMs(), previous.expiryTimestamp() - now));
            expirer().schedule(() -> {
                try {
                    client.expire(previous.tokenId());
                    LOG.info("kts: cluster {}: expired the replaced token {}", id, previous.tokenId());
                } catch (RuntimeException e) {
                    LOG.warn("kts: cluster {}: could not expire the replaced token {} (it ends at its expiry): {}",
                            id, previous.tokenId(), e.getMessage());
                }
            }, delay, TimeUnit.MILLISECONDS);
        }
    }

    private synchronized ScheduledExecutorService expirer() {
        if (expirer == null) {
            expirer = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread thread = new Thread(runnable, "kts-token-expirer");
                thread.setDaemon(true);
                return thread;
            });
        }
        return expirer;
    }
}
