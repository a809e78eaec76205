import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Files the transaction ids of the App Store subscriptions stored before the support search had its table (sql/0027
/// made it empty; sql/0048 enqueues the first of these jobs): a walk over every App Store subscription in key order,
/// one batch per job, each batch filed and the next job enqueued in one transaction — so the walk resumes where it
/// stopped after a crash or a deploy, and runs beside live traffic a batch at a time. Filing is idempotent.
public struct TransactionFilingJob: JobHandler {
    /// Job kind of the transaction filing.
    public static let jobKind = "file-transactions"

    /// Where the walk goes on: after this original transaction id (`""`: from the first).
    public struct Arguments: Codable, Sendable {
        public var after: String

        public init(after: String) { self.after = after }
    }

    public let kind = Self.jobKind
    public let timeout: Duration = .seconds(60)
    private let client: PostgresClient
    private let appStore: AppStoreSubscriptions
    private let subscriptions: SubscriptionStore
    private let batch: Int
    private let logger: Logger

    public init(client: PostgresClient, writer: SubscriptionWriter, batch: Int = 200, logger: Logger) {
        self.client = client
        self.appStore = AppStoreSubscriptions(writer: writer, client: client, logger: logger)
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.batch = batch
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: Arguments.self)
        try await client.withFencedTransaction(logger: logger) { connection in
            let ids = try await subscriptions.ids(of: .appStore, after: arguments.after, limit: batch, on: connection)
            for id in ids { try await appStore.fileTransactions(of: id, on: connection) }
            if ids.count == batch, let last = ids.last {
                let next = try NewJob(kind: Self.jobKind, arguments: Arguments(after: last), priority: 10, uniqueKey: "file-transactions:\(last)")
                _ = try await execution.queue.enqueue(next, on: connection)
            } else {
                logger.notice("every App Store subscription's transactions are filed for the search")
            }
            try await execution.complete(on: connection)
        }
    }
}
