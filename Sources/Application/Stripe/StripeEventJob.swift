import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Processes a stored Stripe event. Reading the objects again from Stripe and deriving the Stripe source are the next
/// step of the issue "Web purchases through Stripe"; until then every event is acknowledged as `recorded`, so none
/// waits in the queue and none is lost: `stripe_events` keeps each one to process again.
public struct StripeEventJob: JobHandler {
    public let kind = StripeInbox.jobKind
    public let timeout: Duration = .seconds(30)
    /// Recording changes no account (yet).
    public let changesAccountStatus = false
    private let client: PostgresClient
    private let events: StripeEventStore
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.events = StripeEventStore(logger: logger)
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: StripeInbox.JobArguments.self)
        try await client.withTransaction(logger: logger) { connection in
            try await events.markProcessed(arguments.eventId, outcome: "recorded", on: connection)
            try await execution.complete(on: connection)
        }
    }
}
