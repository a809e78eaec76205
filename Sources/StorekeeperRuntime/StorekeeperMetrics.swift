import Jobs
import Metrics
import Prometheus

/// The process's metrics: one Prometheus registry behind swift-metrics, bootstrapped once per process.
public enum StorekeeperMetrics {
    /// Everything recorded through swift-metrics lands here; `GET /metrics` emits it.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
        ]
        // A commit group's waits and commits take a fraction of a millisecond on a fast disk: finer buckets below 1 ms.
        let commitBuckets: [Duration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(20), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(5),
        ]
        factory.durationHistogramBuckets = [
            CommitGroupMetrics.waitLabel: commitBuckets, CommitGroupMetrics.durationLabel: commitBuckets,
        ]
        factory.valueHistogramBuckets = [CommitGroupMetrics.sizeLabel: [1, 2, 4, 8, 16, 32, 64]]
        MetricsSystem.bootstrap(factory)
        return registry
    }()
}
