import Foundation

/// A job to enqueue.
public struct NewJob: Sendable {
    public var kind: String
    /// JSON text of the arguments.
    public var arguments: String
    /// Lower runs first.
    public var priority: Int16
    /// Not before this instant; `nil` means now.
    public var runAt: Date?
    public var maxAttempts: Int
    /// At most one live job per unique key; enqueuing a second one reports ``EnqueueResult/duplicate``.
    public var uniqueKey: String?
    /// Jobs sharing a concurrency key never run at the same time and start in enqueue order.
    public var concurrencyKey: String?

    public init(
        kind: String, arguments: some Encodable, priority: Int16 = 0, runAt: Date? = nil, maxAttempts: Int = 25,
        uniqueKey: String? = nil, concurrencyKey: String? = nil
    ) throws(JobQueueError) {
        guard let data = try? JSONEncoder().encode(arguments), let text = String(data: data, encoding: .utf8) else {
            throw JobQueueError(.invalidArguments, "arguments of \(kind) are not encodable as JSON")
        }
        self.init(
            kind: kind, argumentsJSON: text, priority: priority, runAt: runAt, maxAttempts: maxAttempts, uniqueKey: uniqueKey,
            concurrencyKey: concurrencyKey)
    }

    /// A job whose arguments are JSON text already: for the job enqueued with every notification received, whose
    /// arguments its type writes by hand (``JSONEncoder`` cost more than the rest of the job).
    public init(
        kind: String, argumentsJSON: String, priority: Int16 = 0, runAt: Date? = nil, maxAttempts: Int = 25, uniqueKey: String? = nil,
        concurrencyKey: String? = nil
    ) {
        self.kind = kind
        self.arguments = argumentsJSON
        self.priority = priority
        self.runAt = runAt
        self.maxAttempts = maxAttempts
        self.uniqueKey = uniqueKey
        self.concurrencyKey = concurrencyKey
    }
}

/// What an enqueue did.
public enum EnqueueResult: Sendable, Equatable {
    case enqueued(id: Int64)
    /// A live job with the same unique key already exists; nothing was inserted.
    case duplicate
}
