import AppStoreModels
import Credits
import Entitlements
import Foundation
import Subscriptions
import TestSupport

/// Storekeeper's rules without storage: every delivered fact is merged, the subscription derived again and the credit
/// operations due posted to an in-memory ledger — what the worker does, minus PostgreSQL.
struct ScenarioWorld {
    /// One verified delivery.
    enum Delivery {
        case subscription(SubscriptionEvent)
        /// A purchase that is not a subscription (a consumable, a lifetime unlock, a pass): the transaction, the
        /// account its token (or claim) names, and the notification that carried it (`nil` for a claim).
        case oneTime(TransactionPayload, account: AccountID?, notificationType: String?, signedDate: Int64?)
    }

    let catalogue: TierCatalogue
    var facts: [String: SubscriptionFacts] = [:]
    /// Each consumable at its newest signed version, with the account a token or claim named.
    var consumables: [String: (transaction: TransactionPayload, account: AccountID?)] = [:]
    /// Each lifetime or non-renewing purchase at its newest version, with the first account named (as
    /// `entitlement_sources` keeps it).
    var purchases: [String: (record: EntitlementRecord, account: AccountID?)] = [:]
    var ledger = LedgerSnapshot()

    init(catalogue: TierCatalogue) { self.catalogue = catalogue }

    mutating func deliver(_ delivery: Delivery, now: Date) {
        switch delivery {
        case .subscription(let event):
            let id = event.transaction.originalTransactionId
            facts[id, default: SubscriptionFacts(originalTransactionId: id)].merge(event)
            settle(id, now: now)
        case .oneTime(let delivered, let named, let notificationType, let signedDate):
            switch catalogue.tier(ofProduct: delivered.productId)?.product.type {
            case .lifetime?, .nonRenewing?:
                return purchase(delivered, account: named, notificationType: notificationType, signedDate: signedDate, now: now)
            default: break
            }
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

    /// A one-time purchase: its newest version kept, the first account named kept, then settled.
    mutating func purchase(_ transaction: TransactionPayload, account named: AccountID?, notificationType: String?, signedDate: Int64?, now: Date) {
        let version = EntitlementRecord(appStorePurchase: transaction, notificationType: notificationType, signedDate: signedDate)
        let held = purchases[version.id]
        purchases[version.id] = (held.map { EntitlementRecord.newest($0.record, version) } ?? version, held?.account ?? named)
        settlePurchase(version.id, now: now)
    }

    /// Posts what a purchase's credit rules say is due at `now` (what `SourceSettlement` and its jobs do).
    mutating func settlePurchase(_ id: String, now: Date) {
        guard let (record, account) = purchases[id], let account else { return }
        for operation in SourceCredits.operationsDue(record, account: account, catalogue: catalogue, ledger: ledger, now: now) {
            ledger.apply(operation)
        }
    }

    /// Derives a subscription and posts what its credit rules say is due at `now`.
    mutating func settle(_ id: String, now: Date) {
        guard let facts = facts[id], let derivation = Lifecycle.derive(facts) else { return }
        for operation in SubscriptionCredits.operationsDue(derivation, catalogue: catalogue, ledger: ledger, now: now) {
            ledger.apply(operation)
        }
    }

    /// Settles every subscription and purchase at `now` (the jobs that run by the clock).
    mutating func settleAll(now: Date) {
        for id in facts.keys.sorted() { settle(id, now: now) }
        for id in purchases.keys.sorted() { settlePurchase(id, now: now) }
    }

    func derivations() -> [Lifecycle.Derivation] {
        facts.keys.sorted().compactMap { facts[$0].flatMap { Lifecycle.derive($0) } }
    }

    /// What the status endpoint answers for `account` at `now` (reads count due grants without writing them).
    func status(of account: AccountID, now: Date) -> (status: AccountStatus, credits: AccountCredits, subscriptions: [SubscriptionState]) {
        let standing = standing(of: account, now: now)
        return (standing.status, standing.credits, standing.subscriptions)
    }

    /// The account's whole standing at `now`, as `AccountStatusQuery` computes it.
    func standing(of account: AccountID, now: Date) -> AccountStanding {
        let subscriptions = derivations().map(\.state).filter { $0.accountId == account }
        let owned = Set(subscriptions.map(\.originalTransactionId))
        let live = ledger.liveBuckets(account: account, cycleOf: owned, meter: nil, at: now).map {
            AccountCredits.LiveBalance(bucket: $0, balance: ledger.balance(of: $0.key))
        }
        let records = purchases.values.filter { $0.account == account }.map(\.record).sorted { $0.id < $1.id }
        return AccountStanding.evaluate(
            account: account, subscriptions: subscriptions, records: records, live: live, catalogue: catalogue, now: now)
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
                products: [
                    .init(id: "reader.monthly", period: "P1M", price: 4_990, currency: "USD"),
                    .init(id: "reader.lifetime", type: .lifetime, price: 49_990, currency: "USD"),
                    .init(id: "reader.pass30", type: .nonRenewing, duration: "P30D", price: 5_990, currency: "USD"),
                ],
                allowances: ["ai": Allowance(perCycle: 200)]),
        ],
        topUps: [.init(id: "credits.500", meter: "ai", credits: 500, price: 4_990, currency: "USD")])
}

extension Scenario {
    /// The scenario's catalogue: `base` with the scenario's `upgradeCredits`.
    func catalogue(_ base: TierCatalogue) -> TierCatalogue {
        var catalogue = base
        if let policy = upgradeCredits.map(TierCatalogue.UpgradeCredits.init) { catalogue.upgradeCredits = policy }
        return catalogue
    }
}
