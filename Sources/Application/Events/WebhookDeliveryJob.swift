import Entitlements
import Events
import Foundation
import Jobs
import Logging
import Metrics
import Persistence
import PostgresNIO

/// Sends an account's pending events to one endpoint, oldest first, one at a time: a job per (endpoint, account) with
/// the pair as its concurrency key, so deliveries of an account never overtake each other. A failed attempt is logged
/// and the event waits its turn by ``WebhookRetrySchedule`` (later events of the account wait behind it); once the
/// schedule is spent it is `failed` and the next event goes. A `work` killed mid-send sends the event again: delivery
/// is at least once, and the `webhook-id` lets a receiver drop the second copy.
public struct WebhookDeliveryJob: JobHandler {
    public static let jobKind = "webhook-delivery"
    public let kind = jobKind
    /// A delivery changes no status.
    public let changesAccountStatus = false
    /// A run sends at most ``batch`` events, each within the 10 s request timeout.
    public let timeout: Duration = .seconds(300)
    static let batch = 20
    static let requestTimeout: Duration = .seconds(10)

    public struct Arguments: Codable, Sendable, Equatable {
        public var endpoint: String
        public var account: String
        /// Set on the job that waits for a retry (one per pair, by its unique key).
        public var retry: Bool?

        public init(endpoint: String, account: String, retry: Bool? = nil) {
            self.endpoint = endpoint
            self.account = account
            self.retry = retry
        }
    }

    /// The job that sends what is pending for `arguments`' pair, now (or at `runAt`, for a retry).
    public static func job(_ arguments: Arguments, runAt: Date? = nil) throws -> NewJob {
        try NewJob(
            kind: jobKind, arguments: arguments, runAt: runAt, maxAttempts: 100,
            uniqueKey: arguments.retry == true ? "webhook-retry:\(arguments.endpoint):\(arguments.account)" : nil,
            concurrencyKey: "webhook:\(arguments.endpoint):\(arguments.account)")
    }

    private let client: PostgresClient
    private let endpoints: [String: WebhookEndpoint]
    private let transport: any WebhookTransport
    private let schedule: WebhookRetrySchedule
    private let deliveries: WebhookDeliveries
    private let queue: any JobScheduling
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, endpoints: [WebhookEndpoint], transport: any WebhookTransport, queue: any JobScheduling,
        schedule: WebhookRetrySchedule = WebhookRetrySchedule(), clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger
    ) {
        self.client = client
        self.endpoints = Dictionary(endpoints.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.transport = transport
        self.schedule = schedule
        self.deliveries = WebhookDeliveries(logger: logger)
        self.queue = queue
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: Arguments.self)
        guard let endpoint = endpoints[arguments.endpoint] else {
            throw JobFailure.discard("webhook endpoint \(arguments.endpoint) is not configured")
        }
        for _ in 0..<Self.batch {
            guard
                let (event, delivery) = try await client.withFencedConnection({
                    try await deliveries.head(endpoint: endpoint.name, account: arguments.account, on: $0)
                })
            else { return }
            if let due = delivery.nextAttemptAt, due > clock() {
                try await waitForRetry(arguments, due: due)
                return
            }
            let attempt = await send(event, to: endpoint)
            let now = clock()
            let failures = delivery.attempts + 1
            let next = attempt.delivered ? nil : schedule.nextAttempt(afterFailedAttempts: failures, at: now)
            let state: WebhookDeliveries.State = attempt.delivered ? .delivered : next == nil ? .failed : .pending
            try await client.withFencedTransaction(logger: logger) { connection in
                try await deliveries.record(attempt.log, event: event.id, on: connection)
                try await deliveries.settle(endpoint: endpoint.name, event: event.id, state: state, nextAttemptAt: next, at: now, on: connection)
            }
            Counter(
                label: "storekeeper_webhook_deliveries_total",
                dimensions: [("endpoint", endpoint.name), ("outcome", state == .pending ? "retrying" : state.rawValue)]
            ).increment()
            if state == .failed {
                logger.warning(
                    "webhook delivery failed for good",
                    metadata: ["event.id": "\(event.id)", "webhook.endpoint": "\(endpoint.name)", "attempts": "\(failures)"])
            }
            if let next {
                try await waitForRetry(arguments, due: next)
                return
            }
        }
        // More than a batch is pending: the next run goes on after the jobs that were waiting meanwhile.
        _ = try await client.withFencedTransaction(logger: logger) { connection in
            try await queue.enqueue(try Self.job(Arguments(endpoint: arguments.endpoint, account: arguments.account)), on: connection)
        }
    }

    /// The head of the pair is not due: the pair's retry job waits for it (this one, or the one enqueued now — a
    /// single one per pair, however many events arrive meanwhile). `due` is on the injected clock; the queue runs on
    /// the database's, so the wait is the difference.
    private func waitForRetry(_ arguments: Arguments, due: Date) async throws {
        let runAt = Date().addingTimeInterval(max(0, due.timeIntervalSince(clock())))
        if arguments.retry == true { throw JobFailure.snooze(until: runAt) }
        try await client.withFencedTransaction(logger: logger) { connection in
            var retry = arguments
            retry.retry = true
            try await queue.enqueue(try Self.job(retry, runAt: runAt), on: connection)
        }
    }

    /// One attempt: the signed request and what came of it.
    private func send(_ event: EventLog.StoredEvent, to endpoint: WebhookEndpoint) async -> (delivered: Bool, log: WebhookDeliveries.Attempt) {
        let body = Data(EventEnvelope.json(event).utf8)
        let id = event.id.lowercasedText
        // The wall clock's, not the injected one: a receiver checks it against its own clock (Standard Webhooks'
        // libraries refuse more than 5 minutes either way), and dev's clock may be moved days ahead.
        let timestamp = Int64(Date().timeIntervalSince1970)
        let headers = [
            ("content-type", "application/json"), ("user-agent", "Storekeeper"),
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", endpoint.signature.header(id: id, timestamp: timestamp, body: body)),
        ]
        let started = ContinuousClock.now
        let attemptedAt = clock()
        var status: Int?
        var error: String?
        do {
            let response = try await transport.post(endpoint.url, headers: headers, body: body, timeout: Self.requestTimeout)
            status = response.status
            if (300..<400).contains(response.status) {
                // Following it would hand the signed event to whoever the redirect names.
                let location = response.location.map { String($0.prefix(300)) } ?? "none"
                error = "HTTP \(response.status) redirect to \(location), not followed"
                logger.warning(
                    "webhook endpoint answered a redirect; not followed",
                    metadata: ["endpoint": "\(endpoint.name)", "status": "\(response.status)", "location": "\(location)"])
            } else if !(200..<300).contains(response.status) {
                error = "HTTP \(response.status)"
            }
        } catch let failure {
            error = String(describing: failure).prefix(500).description
        }
        let elapsed = ContinuousClock.now - started
        let milliseconds = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        return (
            error == nil,
            WebhookDeliveries.Attempt(
                endpoint: endpoint.name, attemptedAt: attemptedAt, statusCode: status, latencyMilliseconds: milliseconds, error: error)
        )
    }
}
