import Metrics
import StatementFencing

/// What a named ``CommitGroup`` records (swift-metrics; exported by whichever backend the process bootstraps):
/// `storekeeper_commit_group_wait_seconds{group}`, each caller's wait from its submit to the start of the commit that
/// takes it; `storekeeper_commit_group_duration_seconds{group}`, each commit (its transaction to its answer, the one
/// by one retries of a failed group included); `storekeeper_commit_group_size{group}`, the callers each takes.
public struct CommitGroupMetrics: Sendable {
    /// The label of each caller's wait; the process's metrics factory keys its buckets by it.
    public static let waitLabel = "storekeeper_commit_group_wait_seconds"
    /// The label of each commit's duration; the process's metrics factory keys its buckets by it.
    public static let durationLabel = "storekeeper_commit_group_duration_seconds"
    /// The label of the callers each commit takes; the process's metrics factory keys its buckets by it.
    public static let sizeLabel = "storekeeper_commit_group_size"

    private let wait: Timer
    private let duration: Timer
    private let size: Recorder

    init(group: String) {
        let dimensions = [("group", group)]
        wait = Timer(label: Self.waitLabel, dimensions: dimensions, preferredDisplayUnit: .seconds)
        duration = Timer(label: Self.durationLabel, dimensions: dimensions, preferredDisplayUnit: .seconds)
        size = Recorder(label: Self.sizeLabel, dimensions: dimensions, aggregate: true)
    }

    /// A commit starts at `start` with callers that submitted at `submitted`.
    func started(at start: ContinuousClock.Instant, submitted: some Sequence<ContinuousClock.Instant>) {
        var callers = 0
        for instant in submitted {
            wait.recordNanoseconds((start - instant).nanoseconds)
            callers += 1
        }
        size.record(callers)
    }

    func committed(in elapsed: Duration) { duration.recordNanoseconds(elapsed.nanoseconds) }
}
