package kts.jvm.kafka;

import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import kts.jvm.core.KtsSettings;
import kts.jvm.core.KtsToken;
import kts.jvm.core.TokenFileSource;
import kts.jvm.core.TokenRegistry;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.scram.ScramExtensionsCallback;
import org.apache.kafka.common.security.scram.ScramLoginModule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka client's SASL/SCRAM callback handler that logs in with a kts delegation token, by configuration alone:
 *
 * <pre>
 * sasl.mechanism=SCRAM-SHA-512
 * sasl.client.callback.handler.class=kts.jvm.kafka.KtsTokenCallbackHandler
 * sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required tokenauth="true" \
 *     kts.url="https://kts.example:8443" kts.jwt.file="/var/run/secrets/tokens/kts";
 * </pre>
 *
 * <p>The token comes from one of three sources, by JAAS option: {@code kts.url} with a login (a
 * {@link kts.jvm.core.TokenKeeper} that creates, renews and replaces it, shared by every client of the JVM with
 * the same kts, login and owner); {@code kts.token.file} (the JSON file {@code kts sidecar --format json} keeps);
 * {@code kts.registry.key} (what a framework's receiver published in the {@link TokenRegistry}). Kafka asks the
 * handler at every authentication, and re-authentication ({@code connections.max.reauth.ms} on the brokers), so
 * each one gets the token current at that moment. The HMAC is never logged.
 */
public final class KtsTokenCallbackHandler implements AuthenticateCallbackHandler {
    public static final String REGISTRY_KEY = "kts.registry.key";
    private static final Logger log = LoggerFactory.getLogger(KtsTokenCallbackHandler.class);
    private static final Map<String, String> TOKEN_EXTENSIONS = Map.of("tokenauth", "true");

    private Supplier<KtsToken> source;
    private SharedKeepers.Lease lease;

    @Override
    public void configure(Map<String, ?> configs, String saslMechanism, List<AppConfigurationEntry> jaasConfigEntries) {
        if (saslMechanism == null || !saslMechanism.startsWith("SCRAM-SHA-")) {
            throw new IllegalArgumentException("KtsTokenCallbackHandler needs sasl.mechanism SCRAM-SHA-512 or "
                    + "SCRAM-SHA-256 (delegation tokens log in with SCRAM), not " + saslMechanism);
        }
        Map<String, ?> options = scramOptions(jaasConfigEntries);
        Object registryKey = options.get(REGISTRY_KEY);
        if (registryKey != null && !registryKey.toString().isBlank()) {
            String key = registryKey.toString().trim();
            long timeoutMs = KtsSettings.DEFAULT_FIRST_TOKEN_TIMEOUT_MS;
            source = () -> TokenRegistry.await(key, timeoutMs);
            log.info("Kafka logins take kts tokens from the registry under {}", key);
            return;
        }
        KtsSettings settings = KtsSettings.from(withClientTrust(options, configs), "");
        if (settings.tokenFile() != null) {
            TokenFileSource file = TokenFileSource.from(settings);
            source = file::current;
            log.info("Kafka logins take kts tokens from {}", file.file());
        } else {
            lease = SharedKeepers.acquire(settings);
            SharedKeepers.Lease held = lease;
            source = () -> held.keeper().current();
            log.info("Kafka logins take kts tokens from {} (login {}, owner {})", settings.url(), settings.login(),
                    settings.owner());
        }
    }

    /** The options of the ScramLoginModule entry (the only login module a token login has). */
    private static Map<String, ?> scramOptions(List<AppConfigurationEntry> entries) {
        if (entries != null) {
            for (AppConfigurationEntry entry : entries) {
                if (ScramLoginModule.class.getName().equals(entry.getLoginModuleName())) {
                    return entry.getOptions();
                }
            }
        }
        throw new IllegalArgumentException("KtsTokenCallbackHandler needs sasl.jaas.config with "
                + ScramLoginModule.class.getName() + " required tokenauth=\"true\" and its kts.* options");
    }

    /**
     * Without {@code kts.ssl.truststore.*}, kts is trusted as the client trusts its brokers (the client's own
     * {@code ssl.truststore.*}), so one CA bundle serves both.
     */
    private static Map<String, Object> withClientTrust(Map<String, ?> options, Map<String, ?> configs) {
        Map<String, Object> merged = new HashMap<>(options);
        if (merged.get(KtsSettings.TRUSTSTORE_LOCATION) == null && configs != null
                && configs.get("ssl.truststore.location") != null) {
            merged.put(KtsSettings.TRUSTSTORE_LOCATION, plain(configs.get("ssl.truststore.location")));
            Object password = configs.get("ssl.truststore.password");
            if (password != null) {
                merged.put(KtsSettings.TRUSTSTORE_PASSWORD, plain(password));
            }
            Object type = configs.get("ssl.truststore.type");
            if (type != null) {
                merged.put(KtsSettings.TRUSTSTORE_TYPE, plain(type));
            }
        }
        return merged;
    }

    private static String plain(Object value) {
        // Kafka hands passwords over as Password, whose toString() is "[hidden]".
        return value instanceof Password password ? password.value() : value.toString();
    }

    @Override
    public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
        if (source == null) {
            throw new IllegalStateException("KtsTokenCallbackHandler is not configured");
        }
        KtsToken token = null;
        for (Callback callback : callbacks) {
            // One token for all the callbacks of one authentication, so name and password match.
            if (token == null && (callback instanceof NameCallback || callback instanceof PasswordCallback)) {
                token = tokenNow();
            }
            if (callback instanceof NameCallback name) {
                name.setName(token.tokenId());
            } else if (callback instanceof PasswordCallback password) {
                password.setPassword(token.hmac().toCharArray());
            } else if (callback instanceof ScramExtensionsCallback extensions) {
                extensions.extensions(TOKEN_EXTENSIONS);
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    private KtsToken tokenNow() throws IOException {
        try {
            KtsToken token = source.get();
            log.debug("Kafka login with kts token {}", token.tokenId());
            return token;
        } catch (RuntimeException ex) {
            // Kafka reports an IOException from here as an authentication failure with this message.
            throw new IOException("no kts token for the Kafka login: " + ex.getMessage(), ex);
        }
    }

    @Override
    public void close() {
        if (lease != null) {
            lease.release();
            lease = null;
        }
    }
}
