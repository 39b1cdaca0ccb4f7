package kts.jvm.kafka;

import java.util.HashMap;
import java.util.Map;
import kts.jvm.core.KtsClient;
import kts.jvm.core.KtsSettings;
import kts.jvm.core.TokenKeeper;

/**
 * The one holder of the JVM's token keepers for callback handlers: every Kafka client (a producer, a consumer, an
 * admin client, Connect's tasks) with the same kts, login and owner shares one keeper, and so one token, instead of
 * creating a token each. The keeper is closed, and its token ended, when the last of its clients closes.
 */
final class SharedKeepers {
    private static final Map<String, Entry> KEEPERS = new HashMap<>();

    private SharedKeepers() {
    }

    private static final class Entry {
        final TokenKeeper keeper;
        int users;

        Entry(TokenKeeper keeper) {
            this.keeper = keeper;
        }
    }

    /** A hold on the keeper of {@code settings}; release it when the client closes. */
    static final class Lease {
        private final String key;
        private final TokenKeeper keeper;
        private boolean released;

        private Lease(String key, TokenKeeper keeper) {
            this.key = key;
            this.keeper = keeper;
        }

        TokenKeeper keeper() {
            return keeper;
        }

        void release() {
            TokenKeeper closing = null;
            synchronized (SharedKeepers.class) {
                if (released) {
                    return;
                }
                released = true;
                Entry entry = KEEPERS.get(key);
                if (entry != null && entry.keeper == keeper && --entry.users == 0) {
                    KEEPERS.remove(key);
                    closing = keeper;
                }
            }
            if (closing != null) {
                closing.close();
            }
        }
    }

    static Lease acquire(KtsSettings settings) {
        String key = String.join("\n", settings.url(), settings.login(), String.valueOf(settings.owner()),
                String.valueOf(settings.truststoreLocation()), String.join(",", settings.renewers()),
                Long.toString(settings.maxLifetimeMs()));
        synchronized (SharedKeepers.class) {
            Entry entry = KEEPERS.get(key);
            if (entry == null) {
                TokenKeeper keeper = new TokenKeeper(new KtsClient(settings), settings.owner(), null, settings);
                entry = new Entry(keeper);
                KEEPERS.put(key, entry);
            }
            entry.users++;
            return new Lease(key, entry.keeper);
        }
    }
}
