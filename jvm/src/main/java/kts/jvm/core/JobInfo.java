package kts.jvm.core;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Who a token is fetched for: the framework, the application or job id and name, the submitting user. kts keeps it
 * with the token in its audit trail so that a token can be traced to its job. Every field may be null.
 */
public final class JobInfo {
    private final String framework;
    private final String id;
    private final String name;
    private final String user;

    public JobInfo(String framework, String id, String name, String user) {
        this.framework = framework;
        this.id = id;
        this.name = name;
        this.user = user;
    }

    public String framework() {
        return framework;
    }

    public String id() {
        return id;
    }

    public String name() {
        return name;
    }

    public String user() {
        return user;
    }

    /** The {@code job} object of a create request, without the null fields. */
    Map<String, Object> toJson() {
        Map<String, Object> json = new LinkedHashMap<>();
        put(json, "framework", framework);
        put(json, "id", id);
        put(json, "name", name);
        put(json, "user", user);
        return json;
    }

    private static void put(Map<String, Object> json, String key, String value) {
        if (value != null) {
            json.put(key, value);
        }
    }

    @Override
    public String toString() {
        return "JobInfo{framework=" + framework + ", id=" + id + ", name=" + name + ", user=" + user + "}";
    }
}
