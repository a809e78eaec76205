import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// The credit window reset, scheduled at the start of each credit window of a period in force: derives the
/// subscription again, which posts the window's grant and schedules the next window. A late or lost job is harmless —
/// reads count a due window's grant lazily — and a period replaced since (renewal, upgrade, refund) simply has no
/// window then.
public struct CreditWindowResetJob: JobHandler {
    /// Job kind of the credit window reset.
    public static let jobKind = "credit-reset"

    /// Arguments of the credit window reset.
    public struct Arguments: Codable, Sendable {
        public var originalTransactionId: String
        /// Written by earlier versions (the reset of one transaction's month); unused now.
        public var transactionId: String?
        public var month: Int?

        public init(originalTransactionId: String) { self.originalTransactionId = originalTransactionId }
    }

    public let kind = Self.jobKind
    /// Database work only: an attempt stuck on a connection the database dropped is given up quickly.
    public let timeout: Duration = .seconds(30)
    private let client: PostgresClient
    private let writer: SubscriptionWriter
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, writer: SubscriptionWriter, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.writer = writer
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let reset = try execution.job.decodeArguments(as: Arguments.self)
        try await client.withTransaction(logger: logger) { connection in
            _ = try await writer.derive(reset.originalTransactionId, now: clock(), write: true, on: connection)
            try await execution.complete(on: connection)
        }
    }
}
