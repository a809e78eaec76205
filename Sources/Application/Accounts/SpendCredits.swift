import Credits
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Spending credits (`POST /v1/accounts/{id}/usage`): in one transaction holding the account's lock, the first answer
/// to an idempotency key is returned again; otherwise the grants due are written and the amount is taken in spend order
/// (``SpendPlan``), all or nothing, and the answer stored.
public struct SpendCredits: Sendable {
    private let client: PostgresClient
    private let ledger: CreditLedger
    private let subscriptions: SubscriptionStore
    private let usageRequests: UsageRequests
    private let events: EventRecorder?
    private let cache: AccountStatusCache?
    private let logger: Logger

    public init(client: PostgresClient, ledger: CreditLedger, events: EventRecorder?, cache: AccountStatusCache? = nil, logger: Logger) {
        self.events = events
        self.cache = cache
        self.client = client
        self.ledger = ledger
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.usageRequests = UsageRequests(logger: logger)
        self.logger = logger
    }

    /// Spends `amount` of a meter: cycle credits first, then top-ups; all or nothing.
    public func spend(_ request: UsageRequests.Request, now: Date) async throws -> UsageRequests.Answer {
        // After the commit (or the rollback): the next status read of this process sees the spend.
        defer { cache?.invalidate(request.account) }
        return try await client.withTransaction(logger: logger) { connection in
            try await ledger.lockAccount(request.account, on: connection)
            if let stored = try await usageRequests.storedAnswer(request, on: connection) { return stored }
            let states = try await subscriptions.subscriptions(forAccount: request.account, on: connection)
            let (credits, live) = try await ledger.spendableCredits(of: request.account, subscriptions: states, now: now, on: connection)
            let answer: UsageRequests.Answer
            if credits.meters[request.meter]?.unlimited == true {
                answer = UsageRequests.Answer(outcome: .spent, meter: request.meter, remaining: nil)
            } else {
                let buckets = live.filter { $0.bucket.meter == request.meter }
                let total = buckets.reduce(0) { $0 + max($1.balance, 0) }
                if let plan = SpendPlan.plan(amount: request.amount, from: buckets.map { ($0.bucket.key, $0.balance) }) {
                    let prefix = "spend:\(request.account.text):\(request.idempotencyKey)"
                    for (index, debit) in plan.debits.enumerated() {
                        try await ledger.post("\(prefix):\(index)", bucket: debit.bucket, delta: -debit.amount, reason: "usage", on: connection)
                    }
                    answer = UsageRequests.Answer(outcome: .spent, meter: request.meter, remaining: total - request.amount)
                    try await events?.record(
                        CreditChanges.depleted(
                            meter: request.meter, remaining: answer.remaining, account: request.account, spendKey: prefix,
                            environment: states.first?.environment ?? "Production"),
                        now: now, on: connection)
                } else {
                    answer = UsageRequests.Answer(
                        outcome: .insufficientCredits, meter: request.meter, remaining: total, error: "insufficient_credits",
                        message: "\(request.amount) \(request.meter) requested, \(total) left; nothing was deducted")
                }
            }
            try await usageRequests.store(answer, for: request, on: connection)
            return answer
        }
    }
}
