package kts.jvm.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kts.jvm.core.JobInfo;
import kts.jvm.core.KtsSettings;
import kts.jvm.core.KtsToken;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.spark.SparkConf;
import org.apache.spark.security.HadoopDelegationTokenProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.Tuple2;

/**
 * Spark's credential provider for kts ({@code spark.security.credentials.kts.enabled}): for each Kafka cluster with
 * a {@code spark.kafka.clusters.<id>.kts.url} (and a login under the same prefix), a kts token in the job's
 * credentials under the alias Spark's Kafka source and sink look for, {@code kafka.server.delegation.token.<id>}
 * (kind {@code KAFKA_DELEGATION_TOKEN}, identifier the token id, password the HMAC's base64 text, as Spark's own
 * {@code KafkaDelegationTokenProvider} stores one). Spark ships it to the executors and calls again at the time
 * returned here: the token is renewed before its expiry and replaced before its maximum lifetime.
 *
 * <p>Spark runs it without Kerberos when {@code spark.security.directCredentialProviders.enabled=true} (Spark 4.3).
 * The token is owned by the identity that logs in to kts, or with {@code kts.owner}, or when the job runs as a
 * {@code --proxy-user}, by that user (kts's {@code CreateTokens} grant, KIP-373). Each create names the job
 * (framework {@code spark}, application id and name, user) for kts's audit trail. No HMAC is ever logged.
 */
public final class KtsTokenProvider implements HadoopDelegationTokenProvider {
    public static final String SERVICE_NAME = "kts";
    static final Text KIND = new Text("KAFKA_DELEGATION_TOKEN");
    /** When Spark should call again for a cluster that got no token while others did. */
    static final long FAILED_CLUSTER_RETRY_MS = 10_000;
    private static final Logger log = LoggerFactory.getLogger(KtsTokenProvider.class);

    private final Map<String, ClusterToken> clusters = new HashMap<>();
    private JobInfo job;
    private boolean ending; // the JVM shuts down: its tokens are ended, and no call creates another

    @Override
    public String serviceName() {
        return SERVICE_NAME;
    }

    @Override
    public boolean delegationTokensRequired(SparkConf sparkConf, Configuration hadoopConf) {
        return !SparkClusters.ids(snapshot(sparkConf)).isEmpty();
    }

    @Override
    public synchronized Option<Object> obtainDelegationTokens(Configuration hadoopConf, SparkConf sparkConf,
            Credentials creds) {
        if (ending) {
            // Spark's renewer may still call while the JVM shuts down: a token made now would outlive the job.
            return Option.empty();
        }
        Map<String, String> conf = snapshot(sparkConf);
        long next = Long.MAX_VALUE;
        boolean handedOut = false;
        List<String> failed = new ArrayList<>();
        RuntimeException firstError = null;
        for (String id : SparkClusters.ids(conf)) {
            try {
                ClusterToken cluster = cluster(id, conf);
                KtsToken token = cluster.current(System.currentTimeMillis());
                creds.addToken(new Text(SparkClusters.alias(id)), hadoopToken(token, id));
                next = Math.min(next, cluster.nextCallAtMs());
                handedOut = true;
            } catch (RuntimeException ex) {
                // Other clusters still get their tokens, and Spark calls again soon for this one.
                next = Math.min(next, System.currentTimeMillis() + FAILED_CLUSTER_RETRY_MS);
                failed.add(id);
                firstError = firstError == null ? ex : firstError;
                log.error("kts: no token for Spark's Kafka cluster {}: {}", id, ex.getMessage());
            }
        }
        if (!failed.isEmpty() && !handedOut) {
            // Nothing to hand out: Spark logs it and calls again after spark.security.credentials.retryWait.
            throw new IllegalStateException("kts: no token for Spark's Kafka cluster(s) " + String.join(", ", failed)
                    + ": " + firstError.getMessage(), firstError);
        }
        if (next == Long.MAX_VALUE) {
            return Option.empty();
        }
        long now = System.currentTimeMillis();
        return Option.apply(SparkClusters.returnedTime(now, next, SparkClusters.ratio(conf)));
    }

    private void endAll() {
        List<ClusterToken> all;
        synchronized (this) {
            ending = true;
            all = new ArrayList<>(clusters.values());
        }
        for (ClusterToken cluster : all) {
            cluster.end();
        }
    }

    private ClusterToken cluster(String id, Map<String, String> conf) {
        ClusterToken cluster = clusters.get(id);
        if (cluster == null) {
            KtsSettings settings = KtsSettings.from(conf, SparkClusters.prefix(id));
            if (settings.url() == null) {
                throw new IllegalArgumentException(SparkClusters.prefix(id) + KtsSettings.TOKEN_FILE
                        + " is not for Spark: the driver fetches tokens itself, set "
                        + SparkClusters.prefix(id) + KtsSettings.URL);
            }
            if (job == null) {
                job = job(conf);
            }
            cluster = new ClusterToken(id, settings, owner(settings), job);
            if (clusters.isEmpty()) {
                // Spark has no hook for a provider at the application's end: the JVM's shutdown is the last chance
                // to end the tokens, which would otherwise stay valid until their expiry.
                Runtime.getRuntime().addShutdownHook(new Thread(this::endAll, "kts-spark-tokens-end"));
            }
            clusters.put(id, cluster);
        }
        return cluster;
    }

    /**
     * The owner to ask kts for: {@code kts.owner}; else, for a job run as a {@code --proxy-user}, that user; else
     * null (the identity that logs in to kts).
     */
    static String owner(KtsSettings settings) {
        if (settings.owner() != null) {
            return settings.owner();
        }
        try {
            UserGroupInformation user = UserGroupInformation.getCurrentUser();
            UserGroupInformation real = user.getRealUser();
            if (real != null && !real.getShortUserName().equals(user.getShortUserName())) {
                return "User:" + user.getShortUserName();
            }
        } catch (IOException ex) {
            throw new IllegalStateException("kts: cannot tell which user the job runs as: " + ex.getMessage(), ex);
        }
        return null;
    }

    /**
     * Who the tokens are for: the application id (in local mode Spark sets it only after the first tokens, so
     * {@code <name>@<start time>} then), its name, the user it runs as. The same for every token of the job.
     */
    static JobInfo job(Map<String, String> conf) {
        String name = conf.get("spark.app.name");
        String id = conf.get("spark.app.id");
        if (id == null && name != null) {
            String start = conf.get("spark.app.startTime");
            id = start == null ? name : name + "@" + start;
        }
        String user = System.getenv("SPARK_USER");
        if (user == null || user.isBlank()) {
            try {
                user = UserGroupInformation.getCurrentUser().getShortUserName();
            } catch (IOException ex) {
                user = null;
            }
        }
        return new JobInfo("spark", id, name, user);
    }

    /** The token as Spark's Kafka connector reads it: identifier = token id, password = the HMAC's base64 text. */
    static Token<TokenIdentifier> hadoopToken(KtsToken token, String clusterId) {
        return new Token<>(token.tokenId().getBytes(StandardCharsets.UTF_8),
                token.hmac().getBytes(StandardCharsets.UTF_8), KIND, new Text(SparkClusters.alias(clusterId)));
    }

    private static Map<String, String> snapshot(SparkConf conf) {
        Map<String, String> map = new LinkedHashMap<>();
        for (Tuple2<String, String> entry : conf.getAll()) {
            map.put(entry._1(), entry._2());
        }
        return map;
    }
}
