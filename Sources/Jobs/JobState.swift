/// Where a job is: live (`available`, `running`, `failed`, `cancelled`) or finished, in history (`completed`,
/// `discarded`). The raw value is the `state` column's and the operators' word.
public enum JobState: String, Codable, Sendable, CaseIterable {
    case available
    case running
    case failed
    case cancelled
    case completed
    case discarded

    /// The states of live jobs (the `jobs` table).
    public static let live: [JobState] = [.available, .running, .failed, .cancelled]
    /// The states an operator may requeue from.
    public static let requeueable: [JobState] = [.failed, .cancelled]

    /// Whether jobs in this state are in history (`job_history`).
    public var isFinished: Bool { self == .completed || self == .discarded }

    /// The states, for messages: `available, running, …`.
    public static func list(_ states: [JobState] = allCases) -> String { states.map(\.rawValue).joined(separator: ", ") }
}
