import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

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
    private let appStore: AppStoreSubscriptions
    private let stripe: StripeSubscriptions?
    private let play: GooglePlaySubscriptions?
    private let clock: @Sendable () -> Date
    private let logger: Logger

    /// - Parameters:
    ///   - stripe: derives Stripe's subscriptions (from what is held of them); `nil` leaves them.
    ///   - play: derives Play's subscriptions (from the reads held); `nil` leaves them.
    public init(
        client: PostgresClient, writer: SubscriptionWriter, stripe: StripeSubscriptions? = nil, play: GooglePlaySubscriptions? = nil,
        clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.appStore = AppStoreSubscriptions(writer: writer, client: client, logger: logger)
        self.stripe = stripe
        self.play = play
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let reset = try execution.job.decodeArguments(as: Arguments.self)
        try await client.withFencedTransaction(logger: logger) { connection in
            let id = reset.originalTransactionId
            // Read before any lock (a subscription's store never changes): each store's derivation takes its locks in
            // its own order — Play's chain tokens before the subscription.
            let store = try await SubscriptionStore(client: client, logger: logger).lockedSubscription(id, on: connection, lockHeld: true)?.store
            switch store {
            case .stripe?:
                guard let stripe else { break }
                _ = try await stripe.derive(id, cause: EventCause(notificationType: "credit-reset", originalTransactionId: id), on: connection)
            case .googlePlay?:
                guard let play else { break }
                _ = try await play.derive(chainOf: id, cause: EventCause(notificationType: "credit-reset", originalTransactionId: id), on: connection)
            default:
                _ = try await appStore.rederive(id, now: clock(), on: connection)
            }
            try await execution.complete(on: connection)
        }
    }
}
