import Foundation

/// Everything about one job, live or finished, for operators.
public struct JobRecord: Codable, Sendable, Equatable {
    /// One failed attempt.
    public struct AttemptError: Codable, Sendable, Equatable {
        public var attempt: Int
        public var at: String
        public var error: String
    }

    public var id: Int64
    public var kind: String
    public var state: JobState
    public var attempt: Int
    public var maxAttempts: Int?
    public var priority: Int?
    public var runAt: Date?
    public var createdAt: Date
    public var attemptedAt: Date?
    public var finishedAt: Date?
    public var uniqueKey: String?
    public var concurrencyKey: String?
    public var lockedBy: UUID?
    /// The arguments as JSON text.
    public var arguments: String
    public var errors: [AttemptError]

    public var lastError: String? { errors.last?.error }
}

/// Queue depth for operators and metrics.
public struct QueueStatistics: Codable, Sendable, Equatable {
    public struct Count: Codable, Sendable, Equatable {
        public var kind: String
        public var state: JobState
        public var count: Int
    }

    public var counts: [Count]
    /// Age in seconds of the oldest job that is runnable now (its `run_at` passed) but not running.
    public var oldestRunnableAgeSeconds: Double?
    /// Jobs finished in the last hour, by state.
    public var finishedLastHour: [Count]
}
