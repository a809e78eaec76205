import AppStoreModels
import Credits
import Foundation
import Subscriptions

/// Storekeeper's rules without storage: every delivered fact is merged, the subscription derived again and the credit
/// operations due posted to an in-memory ledger — what the worker does, minus PostgreSQL.
struct ScenarioWorld {
    /// One verified delivery.
    enum Delivery {
        case subscription(SubscriptionEvent)
        /// A consumable: the transaction and the account its token (or claim) names.
        case consumable(TransactionPayload, account: AccountID?)
    }

    let catalogue: TierCatalogue
    var facts: [String: SubscriptionFacts] = [:]
    /// Each consumable at its newest signed version, with the account a token or claim named.
    var consumables: [String: (transaction: TransactionPayload, account: AccountID?)] = [:]
    var ledger = LedgerSnapshot()

    init(catalogue: TierCatalogue) { self.catalogue = catalogue }

    mutating func deliver(_ delivery: Delivery, now: Date) {
        switch delivery {
        case .subscription(let event):
            let id = event.transaction.originalTransactionId
            facts[id, default: SubscriptionFacts(originalTransactionId: id)].merge(event)
            settle(id, now: now)
        case .consumable(let delivered, let named):
            let id = delivered.transactionId
            let held = consumables[id]
            let transaction = held.map { ($0.transaction.signedDate ?? 0) >= (delivered.signedDate ?? 0) ? $0.transaction : delivered } ?? delivered
            consumables[id] = (transaction, named ?? held?.account)
            let credited = ledger.entries.first { $0.operationKey == "topup:\(id)" }.flatMap { ledger.buckets[$0.bucket]?.accountId }
            guard let account = credited ?? named ?? held?.account else { return }
            for operation in TopUpCredits.operationsDue(transaction, account: account, catalogue: catalogue, ledger: ledger) {
                ledger.apply(operation)
            }
        }
    }

    /// Derives a subscription and posts what its credit rules say is due at `now`.
    mutating func settle(_ id: String, now: Date) {
        guard let facts = facts[id], let derivation = Lifecycle.derive(facts) else { return }
        for operation in SubscriptionCredits.operationsDue(derivation, catalogue: catalogue, ledger: ledger, now: now) {
            ledger.apply(operation)
        }
    }

    func derivations() -> [Lifecycle.Derivation] {
        facts.keys.sorted().compactMap { facts[$0].flatMap { Lifecycle.derive($0) } }
    }

    /// What the status endpoint answers for `account` at `now` (reads count due grants without writing them).
    func status(of account: AccountID, now: Date) -> (status: AccountStatus, credits: AccountCredits, subscriptions: [SubscriptionState]) {
        let subscriptions = derivations().map(\.state).filter { $0.accountId == account }
        let owned = Set(subscriptions.map(\.originalTransactionId))
        let live = ledger.liveBuckets(account: account, cycleOf: owned, meter: nil, at: now).map {
            AccountCredits.LiveBalance(bucket: $0, balance: ledger.balance(of: $0.key))
        }
        let due = AccountCredits.grantsDue(account: account, subscriptions: subscriptions, catalogue: catalogue, live: live, now: now)
        let credits = AccountCredits.evaluate(subscriptions: subscriptions, catalogue: catalogue, live: live, pending: due, now: now)
        return (AccountStatus.evaluate(subscriptions: subscriptions, hasFreeCredits: credits.hasCredits, now: now), credits, subscriptions)
    }

    /// Each bucket's balance: the ledger as a customer's money sees it, whatever rows led there.
    var balances: [String: Int64] {
        Dictionary(uniqueKeysWithValues: ledger.buckets.keys.map { ($0, ledger.balance(of: $0)) }).filter { $0.value != 0 }
    }

    static let catalogue = TierCatalogue(
        meters: [.init(id: "ai", displayName: "AI requests")],
        free: .init(displayName: "Free", allowances: ["ai": Allowance(perCycle: 50)]),
        tiers: [
            .init(
                id: "max", level: 1, displayName: "Max",
                products: [.init(id: "max.monthly", period: "P1M", price: 19_990, currency: "USD")],
                allowances: ["ai": Allowance(perCycle: 3000, trialCap: 300)]),
            .init(
                id: "pro", level: 2, displayName: "Pro",
                products: [
                    .init(id: "pro.monthly", period: "P1M", price: 9_990, currency: "USD"),
                    .init(id: "pro.quarterly", period: "P3M", price: 27_990, currency: "USD"),
                    .init(id: "pro.annual", period: "P1Y", price: 99_990, currency: "USD"),
                ],
                allowances: ["ai": Allowance(perCycle: 1000, trialCap: 100)]),
            .init(
                id: "reader", level: 3, displayName: "Reader",
                products: [.init(id: "reader.monthly", period: "P1M", price: 4_990, currency: "USD")],
                allowances: ["ai": Allowance(perCycle: 200)]),
        ],
        topUps: [.init(id: "credits.500", meter: "ai", credits: 500, price: 4_990, currency: "USD")])
}
