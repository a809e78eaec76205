import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StripeStore

/// Accepts a verified Stripe event: stores it and enqueues its processing in one committed transaction — a 200 is
/// only ever answered after it — deduplicated by its `evt_…` id. An event of the other livemode is stored and
/// ignored (a test-mode event reaching a live endpoint, or the other way round).
public struct StripeInbox: Sendable {
    /// What accepting an event did.
    public enum Outcome: String, Sendable {
        case accepted
        case duplicate
        case ignored
    }

    /// Job kind of processing a Stripe event.
    public static let jobKind = "stripe-event"

    public struct JobArguments: Codable, Sendable {
        public var eventId: String
    }

    private let client: PostgresClient
    private let queue: any JobScheduling
    private let events: StripeEventStore
    /// `STOREKEEPER_STRIPE_LIVEMODE`.
    private let livemode: Bool
    private let logger: Logger

    public init(client: PostgresClient, queue: any JobScheduling, livemode: Bool, logger: Logger) {
        self.client = client
        self.queue = queue
        self.events = StripeEventStore(logger: logger)
        self.livemode = livemode
        self.logger = logger
    }

    public func accept(_ event: StripeEventEnvelope, body: [UInt8], signedAt: Date) async throws -> Outcome {
        let ignored = event.livemode != livemode
        return try await client.withFencedTransaction(logger: logger) { connection in
            guard try await events.insert(event, body: body, signedAt: signedAt, ignored: ignored, on: connection) else { return .duplicate }
            if ignored { return .ignored }
            let job = try NewJob(
                kind: Self.jobKind, arguments: JobArguments(eventId: event.id), uniqueKey: "stripe-event:\(event.id)",
                concurrencyKey: event.data.object.id.map { "stripe:\($0)" })
            try await queue.enqueue(job, on: connection)
            return .accepted
        }
    }
}
