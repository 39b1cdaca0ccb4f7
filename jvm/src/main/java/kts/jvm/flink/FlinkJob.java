package kts.jvm.flink;

import java.util.Map;
import kts.jvm.core.JobInfo;

/**
 * Who the provider takes tokens for, as kts keeps it with each token in its audit trail: the Flink deployment's job
 * id where Flink knows it before the job runs (application mode's fixed job id; else the Kubernetes cluster id or
 * YARN application id the deployment runs under), its name ({@code pipeline.name}), and the user the JobManager
 * runs as.
 */
final class FlinkJob {
    private static final String[] ID_KEYS = {"$internal.pipeline.job-id", "kubernetes.cluster-id", "yarn.application.id"};

    private FlinkJob() {}

    static JobInfo of(Map<String, String> configuration) {
        String id = null;
        for (String key : ID_KEYS) {
            String value = configuration.get(key);
            if (value != null && !value.isBlank()) {
                id = value;
                break;
            }
        }
        return new JobInfo("flink", id, configuration.get("pipeline.name"), System.getProperty("user.name"));
    }

    static String describe(JobInfo job) {
        return "flink job " + job.id() + " (" + job.name() + ") of " + job.user();
    }
}
