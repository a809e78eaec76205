import Metrics
import StatementFencing

/// The queue's metrics (swift-metrics; exported by whichever backend the process bootstraps):
/// `storekeeper_jobs_total{kind,outcome}`, `storekeeper_job_duration_seconds{kind,outcome}`,
/// `storekeeper_job_rescues_total`.
enum JobMetrics {
    /// How one attempt ended.
    enum Outcome: String {
        case completed, retried, failed, snoozed, discarded
    }

    static let rescues = Counter(label: "storekeeper_job_rescues_total")

    static func record(kind: String, outcome: Outcome, duration: Duration) {
        let dimensions = [("kind", kind), ("outcome", outcome.rawValue)]
        Counter(label: "storekeeper_jobs_total", dimensions: dimensions).increment()
        Timer(label: "storekeeper_job_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
            .recordNanoseconds(duration.nanoseconds)
    }
}
