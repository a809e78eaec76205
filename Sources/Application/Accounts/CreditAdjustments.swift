import Credits
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Operators' credit adjustments (`POST /admin/accounts/{id}/credits`): one transaction holding the account's lock —
/// the rule (``CreditAdjustment``), the post, and the events its webhooks carry.
public struct CreditAdjustments: Sendable {
    private let client: PostgresClient
    private let credits: CreditLedger
    private let events: EventRecorder?
    private let cache: AccountStatusCache?
    private let logger: Logger

    public init(client: PostgresClient, credits: CreditLedger, events: EventRecorder?, cache: AccountStatusCache? = nil, logger: Logger) {
        self.client = client
        self.credits = credits
        self.events = events
        self.cache = cache
        self.logger = logger
    }

    /// What an adjustment did: whether it posted (`false`: its key had posted it before) and the account's top-up
    /// credits of the meter afterwards.
    public struct Outcome: Sendable, Equatable {
        public var posted: Bool
        public var topUpBalance: Int64
    }

    /// Adjusts `account`'s credits; throws ``CreditAdjustment/Refusal`` for what the rule refuses.
    public func adjust(_ request: CreditAdjustment.Request, account: AccountID, now: Date) async throws -> Outcome {
        // After the commit, in this process: its NOTIFY reaches the listener a moment later, and a status read in that
        // moment (one cached by a claim's answer just before, say) would show the credits before the adjustment.
        defer { cache?.invalidate(account) }
        // The transaction wraps what its body throws: a refusal comes out of it as a value.
        let result = try await client.withFencedTransaction(logger: logger) { connection -> Result<Outcome, CreditAdjustment.Refusal> in
            try await credits.lockAccount(account, on: connection)
            let ledger = try await credits.snapshot(ofSubscription: "adjust:\(account.text)", account: account, now: now, on: connection)
            let operations: [LedgerOperation]
            do throws(CreditAdjustment.Refusal) {
                operations = try CreditAdjustment.operations(request, account: account, catalogue: credits.catalogue, ledger: ledger)
            } catch {
                return .failure(error)
            }
            let bucket = CreditBucket.topUp(account: account, meter: request.meter).key
            guard !operations.isEmpty else { return .success(Outcome(posted: false, topUpBalance: ledger.balance(of: bucket))) }
            let cause = EventCause(
                eventId: CreditAdjustment.operationKey(account: account, key: request.key), notificationType: "OPERATOR_ADJUSTMENT")
            let statuses = try await credits.apply(operations, readingStatusOf: [account], at: now, on: connection)
            if let events {
                let drafts = CreditChanges.granted(
                    operations, account: account, subscription: nil, environment: SourceChanges.environment, cause: cause)
                try await events.record(drafts, now: now, statuses: statuses, on: connection)
            }
            return .success(Outcome(posted: true, topUpBalance: ledger.balance(of: bucket) + request.amount))
        }
        let outcome = try result.get()
        if outcome.posted {
            logger.notice("credits adjusted", metadata: ["account.id": "\(account)", "meter": "\(request.meter)", "amount": "\(request.amount)"])
        }
        return outcome
    }
}
