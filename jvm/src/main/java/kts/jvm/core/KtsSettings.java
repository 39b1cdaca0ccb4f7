package kts.jvm.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Where a plug-in gets its tokens and how it keeps them, from the keys {@code prefix + "kts.*"} of a JAAS entry
 * (prefix "") or a framework's configuration (Spark: {@code "spark.kafka.clusters.<id>."}).
 *
 * <p>Either {@code kts.url} with exactly one login ({@code kts.jwt.file}, or {@code kts.user} with
 * {@code kts.password.file}), or {@code kts.token.file} (the JSON file {@code kts sidecar --format json} keeps).
 * Secrets are never held here, only the files they are read from; error messages name keys, never values of
 * secret keys.
 */
public final class KtsSettings {
    public static final String URL = "kts.url";
    public static final String JWT_FILE = "kts.jwt.file";
    public static final String USER = "kts.user";
    public static final String PASSWORD_FILE = "kts.password.file";
    public static final String OWNER = "kts.owner";
    public static final String TOKEN_FILE = "kts.token.file";
    public static final String TRUSTSTORE_LOCATION = "kts.ssl.truststore.location";
    public static final String TRUSTSTORE_PASSWORD = "kts.ssl.truststore.password";
    public static final String TRUSTSTORE_TYPE = "kts.ssl.truststore.type";
    public static final String RENEWERS = "kts.renewers";
    public static final String MAX_LIFETIME_MS = "kts.max.lifetime.ms";
    public static final String REFRESH_WINDOW_FACTOR = "kts.refresh.window.factor";
    public static final String REPLACE_OVERLAP_MS = "kts.replace.overlap.ms";
    public static final String REFRESH_MIN_PERIOD_MS = "kts.refresh.min.period.ms";
    public static final String FIRST_TOKEN_TIMEOUT_MS = "kts.first.token.timeout.ms";
    public static final String HTTP_TIMEOUT_MS = "kts.http.timeout.ms";

    public static final double DEFAULT_REFRESH_WINDOW_FACTOR = 0.8;
    public static final long DEFAULT_REPLACE_OVERLAP_MS = 60_000;
    public static final long DEFAULT_REFRESH_MIN_PERIOD_MS = 1_000;
    public static final long DEFAULT_FIRST_TOKEN_TIMEOUT_MS = 30_000;
    public static final long DEFAULT_HTTP_TIMEOUT_MS = 10_000;

    private final String prefix;
    private final String url;
    private final String jwtFile;
    private final String user;
    private final String passwordFile;
    private final String owner;
    private final String tokenFile;
    private final String truststoreLocation;
    private final String truststorePassword;
    private final String truststoreType;
    private final List<String> renewers;
    private final long maxLifetimeMs;
    private final double refreshWindowFactor;
    private final long replaceOverlapMs;
    private final long refreshMinPeriodMs;
    private final long firstTokenTimeoutMs;
    private final long httpTimeoutMs;

    private KtsSettings(Map<String, ?> options, String prefix) {
        this.prefix = prefix;
        url = text(options, URL);
        jwtFile = text(options, JWT_FILE);
        user = text(options, USER);
        passwordFile = text(options, PASSWORD_FILE);
        owner = text(options, OWNER);
        tokenFile = text(options, TOKEN_FILE);
        truststoreLocation = text(options, TRUSTSTORE_LOCATION);
        truststorePassword = text(options, TRUSTSTORE_PASSWORD);
        truststoreType = text(options, TRUSTSTORE_TYPE);
        renewers = list(options, RENEWERS);
        maxLifetimeMs = number(options, MAX_LIFETIME_MS, -1, Long.MIN_VALUE);
        refreshWindowFactor = factor(options);
        replaceOverlapMs = number(options, REPLACE_OVERLAP_MS, DEFAULT_REPLACE_OVERLAP_MS, 0);
        refreshMinPeriodMs = number(options, REFRESH_MIN_PERIOD_MS, DEFAULT_REFRESH_MIN_PERIOD_MS, 0);
        firstTokenTimeoutMs = number(options, FIRST_TOKEN_TIMEOUT_MS, DEFAULT_FIRST_TOKEN_TIMEOUT_MS, 0);
        httpTimeoutMs = number(options, HTTP_TIMEOUT_MS, DEFAULT_HTTP_TIMEOUT_MS, 1);
        validate();
    }

    /** The settings under {@code prefix} (may be "" or null); IllegalArgumentException naming the key at fault. */
    public static KtsSettings from(Map<String, ?> options, String prefix) {
        return new KtsSettings(options, prefix == null ? "" : prefix);
    }

    private void validate() {
        if (url != null && tokenFile != null) {
            throw invalid(TOKEN_FILE, "cannot be set together with " + key(URL));
        }
        if (url == null && tokenFile == null) {
            throw invalid(URL, "is required (or " + key(TOKEN_FILE) + ")");
        }
        if (url != null) {
            String lower = url.toLowerCase(java.util.Locale.ROOT);
            if (!lower.startsWith("http://") && !lower.startsWith("https://")) {
                throw invalid(URL, "must be an http:// or https:// URL");
            }
            try {
                java.net.URI.create(url);
            } catch (IllegalArgumentException ex) {
                throw invalid(URL, "is not a URL");
            }
            boolean jwt = jwtFile != null;
            boolean basic = user != null || passwordFile != null;
            if (jwt && basic) {
                throw invalid(JWT_FILE, "cannot be set together with " + key(USER) + "/" + key(PASSWORD_FILE)
                        + ": choose one login");
            }
            if (!jwt && !basic) {
                throw invalid(JWT_FILE, "or " + key(USER) + " with " + key(PASSWORD_FILE) + " is required with "
                        + key(URL));
            }
            if (basic && user == null) {
                throw invalid(USER, "is required with " + key(PASSWORD_FILE));
            }
            if (basic && passwordFile == null) {
                throw invalid(PASSWORD_FILE, "is required with " + key(USER));
            }
        }
        if (truststorePassword != null && truststoreLocation == null) {
            throw invalid(TRUSTSTORE_LOCATION, "is required with " + key(TRUSTSTORE_PASSWORD));
        }
        if (owner != null && !owner.startsWith("User:")) {
            throw invalid(OWNER, "must be a principal such as User:alice");
        }
        for (String renewer : renewers) {
            if (!renewer.startsWith("User:")) {
                throw invalid(RENEWERS, "must list principals such as User:alice");
            }
        }
    }

    private String key(String name) {
        return prefix + name;
    }

    private IllegalArgumentException invalid(String name, String why) {
        return new IllegalArgumentException(key(name) + " " + why);
    }

    private String text(Map<String, ?> options, String name) {
        Object value = options.get(key(name));
        if (value == null) {
            return null;
        }
        String s = value.toString().trim();
        return s.isEmpty() ? null : s;
    }

    private List<String> list(Map<String, ?> options, String name) {
        String value = text(options, name);
        if (value == null) {
            return List.of();
        }
        List<String> items = new ArrayList<>();
        for (String item : value.split(",")) {
            if (!item.isBlank()) {
                items.add(item.trim());
            }
        }
        return Collections.unmodifiableList(items);
    }

    private long number(Map<String, ?> options, String name, long fallback, long minimum) {
        String value = text(options, name);
        if (value == null) {
            return fallback;
        }
        long parsed;
        try {
            parsed = Long.parseLong(value);
        } catch (NumberFormatException ex) {
            throw invalid(name, "must be an integer");
        }
        if (parsed < minimum) {
            throw invalid(name, "must be at least " + minimum);
        }
        return parsed;
    }

    private double factor(Map<String, ?> options) {
        String value = text(options, REFRESH_WINDOW_FACTOR);
        if (value == null) {
            return DEFAULT_REFRESH_WINDOW_FACTOR;
        }
        double parsed;
        try {
            parsed = Double.parseDouble(value);
        } catch (NumberFormatException ex) {
            throw invalid(REFRESH_WINDOW_FACTOR, "must be a number");
        }
        // Kafka's sasl.login.refresh.window.factor has the same bounds: below half leaves too little time for
        // refreshing, 1 or more would refresh at or after the expiry.
        if (!(parsed >= 0.5 && parsed <= 0.95)) {
            throw invalid(REFRESH_WINDOW_FACTOR, "must be between 0.5 and 0.95");
        }
        return parsed;
    }

    /** The prefix the keys were read under ("" for JAAS options). */
    public String prefix() {
        return prefix;
    }

    public String url() {
        return url;
    }

    public String jwtFile() {
        return jwtFile;
    }

    public String user() {
        return user;
    }

    public String passwordFile() {
        return passwordFile;
    }

    public String owner() {
        return owner;
    }

    public String tokenFile() {
        return tokenFile;
    }

    public String truststoreLocation() {
        return truststoreLocation;
    }

    public String truststorePassword() {
        return truststorePassword;
    }

    public String truststoreType() {
        return truststoreType;
    }

    public List<String> renewers() {
        return renewers;
    }

    /** The maxLifetimeMs of a create; -1 (the default) leaves it to kts's delegation.token.max.lifetime.ms. */
    public long maxLifetimeMs() {
        return maxLifetimeMs;
    }

    public double refreshWindowFactor() {
        return refreshWindowFactor;
    }

    public long replaceOverlapMs() {
        return replaceOverlapMs;
    }

    public long refreshMinPeriodMs() {
        return refreshMinPeriodMs;
    }

    public long firstTokenTimeoutMs() {
        return firstTokenTimeoutMs;
    }

    public long httpTimeoutMs() {
        return httpTimeoutMs;
    }

    /** Who logs in to kts: the JWT file or the user (never a secret), for log lines and for sharing keepers. */
    public String login() {
        return jwtFile != null ? "jwt:" + jwtFile : user != null ? "user:" + user : null;
    }

    @Override
    public String toString() {
        return "KtsSettings{url=" + url + ", login=" + login() + ", owner=" + owner + ", tokenFile=" + tokenFile
                + "}";
    }
}
