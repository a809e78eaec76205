import Credits
import Entitlements
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Runs when the clock changes a grant or a one-time purchase — it starts, ends, or opens its next credit window:
/// settles it again (``SourceSettlement``), which posts the window's grant and emits `grant.ended` for a grant that
/// ran out. A late or lost job is harmless: reads count a due window lazily and expiry needs no write.
public struct SourceChangeJob: JobHandler {
    public static let jobKind = "source-change"

    public struct Arguments: Codable, Sendable {
        public var sourceId: String
    }

    public let kind = Self.jobKind
    public let timeout: Duration = .seconds(30)
    private let client: PostgresClient
    private let sources: EntitlementSources
    private let credits: CreditLedger
    private let settlement: SourceSettlement
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, credits: CreditLedger, settlement: SourceSettlement, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.sources = EntitlementSources(logger: logger)
        self.credits = credits
        self.settlement = settlement
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: Arguments.self)
        try await client.withFencedTransaction(logger: logger) { connection in
            if let account = try await sources.source(arguments.sourceId, on: connection)?.account {
                try await credits.lockAccount(account, on: connection)
                // Read again under the lock: an operator may have ended it meanwhile.
                if let (record, _) = try await sources.source(arguments.sourceId, on: connection) {
                    try await settlement.settle(
                        record, account: account, now: clock(), cause: EventCause(eventId: "source:\(record.id)", notificationType: "SOURCE_CHANGE"),
                        on: connection)
                }
            }
            try await execution.complete(on: connection)
        }
    }
}
