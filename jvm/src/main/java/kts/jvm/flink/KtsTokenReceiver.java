package kts.jvm.flink;

import java.util.Map;
import kts.jvm.core.KtsToken;
import kts.jvm.core.TokenRegistry;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.security.token.DelegationTokenReceiver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * On every TaskManager (and the JobManager), Flink hands this receiver the bytes {@link KtsTokenProvider} made; it
 * publishes each cluster's token to the {@link TokenRegistry} under the cluster id, where
 * {@code kts.jvm.kafka.KtsTokenCallbackHandler} with {@code kts.registry.key="<id>"} hands it to Flink's Kafka
 * sources and sinks at their next authentication. Enabled with the provider
 * ({@code security.delegation.token.provider.kts.enabled}).
 */
public final class KtsTokenReceiver implements DelegationTokenReceiver {
    private static final Logger LOG = LoggerFactory.getLogger(KtsTokenReceiver.class);

    @Override
    public String serviceName() {
        return KtsTokenProvider.SERVICE_NAME;
    }

    @Override
    public void init(Configuration configuration) {
        // Nothing to read: the bytes say which clusters there are, and the TaskManagers hold no kts login.
    }

    @Override
    public void onNewTokensObtained(byte[] tokens) {
        Map<String, KtsToken> bundle = TokenBundle.decode(tokens);
        for (Map.Entry<String, KtsToken> entry : bundle.entrySet()) {
            TokenRegistry.publish(entry.getKey(), entry.getValue());
            LOG.info(
                    "kts: cluster {} now uses token {} (expires at {}, at the latest {})",
                    entry.getKey(),
                    entry.getValue().tokenId(),
                    entry.getValue().expiryTimestamp(),
                    entry.getValue().maxTimestamp());
        }
    }
}
