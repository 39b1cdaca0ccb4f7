package kts.jvm.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SparkClustersTest {
    @Test
    void theClustersAreThoseWithAKtsUrl() {
        Map<String, String> conf = Map.of(
                "spark.kafka.clusters.b.kts.url", "https://kts:8443",
                "spark.kafka.clusters.a.kts.url", "https://kts:8443",
                "spark.kafka.clusters.a.kts.jwt.file", "/jwt",
                "spark.kafka.clusters.c.auth.bootstrap.servers", "kafka:9093",
                "spark.kafka.clusters.d.kafka.kts.url", "not a cluster of kts: a Kafka client option",
                "spark.kafka.clusters..kts.url", "no id");
        assertEquals(Set.of("a", "b"), SparkClusters.ids(conf));
    }

    @Test
    void theAliasIsSparksOwn() {
        assertEquals("kafka.server.delegation.token.events", SparkClusters.alias("events"));
        assertEquals("spark.kafka.clusters.events.", SparkClusters.prefix("events"));
    }

    @Test
    void theReturnedTimeMakesSparkCallAtTheWantedOne() {
        long now = 1_000_000;
        long returned = SparkClusters.returnedTime(now, now + 7_500, 0.75);
        assertEquals(now + 10_000, returned);
        assertEquals(now + 7_500, now + (long) (0.75 * (returned - now))); // what Spark's manager computes
        assertEquals(now, SparkClusters.returnedTime(now, now - 5, 0.75)); // overdue: call again now
        assertEquals(Long.MAX_VALUE, SparkClusters.returnedTime(now, Long.MAX_VALUE, 0.5));
    }

    @Test
    void theRatioIsSparksOrItsDefault() {
        assertEquals(0.75, SparkClusters.ratio(Map.of()));
        assertEquals(0.5, SparkClusters.ratio(Map.of(SparkClusters.RENEWAL_RATIO, "0.5")));
        assertEquals(0.75, SparkClusters.ratio(Map.of(SparkClusters.RENEWAL_RATIO, "zero")));
        assertEquals(0.75, SparkClusters.ratio(Map.of(SparkClusters.RENEWAL_RATIO, "0")));
    }
}
