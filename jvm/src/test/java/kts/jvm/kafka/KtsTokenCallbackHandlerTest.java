package kts.jvm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag;
import kts.jvm.core.KtsToken;
import kts.jvm.core.TokenRegistry;
import org.apache.kafka.common.security.scram.ScramExtensionsCallback;
import org.apache.kafka.common.security.scram.ScramLoginModule;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KtsTokenCallbackHandlerTest {
    private static List<AppConfigurationEntry> jaas(Map<String, String> options) {
        return List.of(new AppConfigurationEntry(ScramLoginModule.class.getName(), LoginModuleControlFlag.REQUIRED,
                options));
    }

    private static Callback[] login(KtsTokenCallbackHandler handler) throws Exception {
        Callback[] callbacks = {new NameCallback("user"), new PasswordCallback("password", false),
            new ScramExtensionsCallback()};
        handler.handle(callbacks);
        return callbacks;
    }

    @Test
    void handsOutTheTokenTheRegistryHoldsAtEachLogin() throws Exception {
        KtsTokenCallbackHandler handler = new KtsTokenCallbackHandler();
        handler.configure(Map.of(), "SCRAM-SHA-512", jaas(Map.of("tokenauth", "true", "kts.registry.key", "c1")));
        TokenRegistry.publish("c1", new KtsToken("first", "QUFBQQ==", null, 0, 0, 0));
        Callback[] callbacks = login(handler);
        assertEquals("first", ((NameCallback) callbacks[0]).getName());
        assertArrayEquals("QUFBQQ==".toCharArray(), ((PasswordCallback) callbacks[1]).getPassword());
        assertEquals(Map.of("tokenauth", "true"), ((ScramExtensionsCallback) callbacks[2]).extensions());
        TokenRegistry.publish("c1", new KtsToken("second", "QkJCQg==", null, 0, 0, 0));
        assertEquals("second", ((NameCallback) login(handler)[0]).getName());
        TokenRegistry.remove("c1");
        handler.close();
    }

    @Test
    void readsTheSidecarsFile(@TempDir Path directory) throws Exception {
        Path file = Files.writeString(directory.resolve("token.json"),
                "{\"tokenId\": \"from-file\", \"hmac\": \"QUFBQQ==\", \"expiryTimestamp\": 1, \"maxTimestamp\": 2}");
        KtsTokenCallbackHandler handler = new KtsTokenCallbackHandler();
        handler.configure(Map.of(), "SCRAM-SHA-256", jaas(Map.of("tokenauth", "true", "kts.token.file",
                file.toString())));
        assertEquals("from-file", ((NameCallback) login(handler)[0]).getName());
        handler.close();
    }

    @Test
    void noTokenIsAnIOExceptionKafkaReportsAsAFailedLogin(@TempDir Path directory) {
        KtsTokenCallbackHandler handler = new KtsTokenCallbackHandler();
        handler.configure(Map.of(), "SCRAM-SHA-512", jaas(Map.of("kts.token.file",
                directory.resolve("absent.json").toString(), "kts.first.token.timeout.ms", "0")));
        IOException error = assertThrows(IOException.class, () -> login(handler));
        assertTrue(error.getMessage().startsWith("no kts token for the Kafka login: no token in "), error.getMessage());
    }

    @Test
    void withoutItsOwnTrustStoreKtsIsTrustedAsTheClientTrustsItsBrokers(@TempDir Path directory) {
        KtsTokenCallbackHandler handler = new KtsTokenCallbackHandler();
        Path absent = directory.resolve("broker-ca.p12");
        Map<String, Object> client = Map.of("ssl.truststore.location", absent.toString(), "ssl.truststore.password",
                new org.apache.kafka.common.config.types.Password("store-secret"), "ssl.truststore.type", "PKCS12");
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
                () -> handler.configure(client, "SCRAM-SHA-512", jaas(Map.of("kts.url", "https://kts.example",
                        "kts.jwt.file", directory.resolve("jwt").toString(), "kts.owner", "User:trust-test"))));
        assertEquals("kts.ssl.truststore.location (" + absent + ") cannot be loaded as PKCS12: NoSuchFileException",
                error.getMessage());
    }

    @Test
    void refusesWhatCannotWork() {
        KtsTokenCallbackHandler handler = new KtsTokenCallbackHandler();
        assertThrows(IllegalArgumentException.class,
                () -> handler.configure(Map.of(), "PLAIN", jaas(Map.of("kts.token.file", "/t.json"))));
        assertThrows(IllegalArgumentException.class, () -> handler.configure(Map.of(), "SCRAM-SHA-512", List.of()));
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> handler.configure(Map.of(), "SCRAM-SHA-512", jaas(Map.of("tokenauth", "true"))));
        assertTrue(missing.getMessage().startsWith("kts.url "), missing.getMessage());
    }
}
