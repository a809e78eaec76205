import Credits
import Entitlements
import Events
import Foundation
import Persistence
import PostgresNIO
import Subscriptions

/// What one account has to spend, for a spend or a hold: its subscriptions, its credits, its live buckets in spend
/// order, and the grants due by the clock that were written for it first (their events are the spend's to send).
/// Which grants are due is the credit rules' (``AccountCredits/grantsDue(account:subscriptions:records:catalogue:live:now:)``);
/// the ledger only reads and writes.
struct Spendable: Sendable {
    var subscriptions: [SubscriptionState]
    var credits: AccountCredits
    var live: [AccountCredits.LiveBalance]
    var granted: [LedgerOperation]

    /// What each of `accounts` has to spend at `now` (the accounts locked), in one read; an account with grants due by
    /// the clock has them written first and its buckets read again.
    static func read(of accounts: [AccountID], now: Date, ledger: CreditLedger, on connection: PostgresConnection) async throws
        -> [AccountID: Spendable]
    {
        try await read(
            of: accounts, inputs: try await ledger.spendInputs(of: accounts, at: now, on: connection), now: now, ledger: ledger, on: connection)
    }

    /// What each of `accounts` has to spend at `now`, from status inputs read already under their locks (a hold
    /// group's first statement reads them with the locks, sql/0040); grants due are written first, as above.
    static func read(
        of accounts: [AccountID], inputs: [AccountID: CreditLedger.StatusInputs], now: Date, ledger: CreditLedger, on connection: PostgresConnection
    ) async throws -> [AccountID: Spendable] {
        let catalogue = ledger.catalogue
        var result: [AccountID: Spendable] = [:]
        for account in Set(accounts) {
            let states = inputs[account]?.subscriptions ?? []
            var live = inputs[account]?.buckets ?? []
            let records = inputs[account]?.records ?? []
            let due = AccountCredits.grantsDue(account: account, subscriptions: states, records: records, catalogue: catalogue, live: live, now: now)
            if !due.isEmpty {
                try await ledger.apply(due, at: now, on: connection)
                live = try await ledger.liveBuckets(of: [account], at: now, on: connection)[account] ?? []
            }
            let credits = AccountCredits.evaluate(subscriptions: states, records: records, catalogue: catalogue, live: live, now: now)
            result[account] = Spendable(subscriptions: states, credits: credits, live: live, granted: due)
        }
        return result
    }
}

extension Spendable {
    /// The events of credit windows the clock opened and a spend or a hold wrote first, announced there as their job
    /// would have (the job then finds them posted); daily quotas and the free month are no events.
    func openedWindows(account: AccountID) -> [EventDraft] {
        let windows = granted.filter { operation in
            guard case .post(_, let bucket?) = operation else { return false }
            return bucket.kind == .cycle || bucket.kind == .entitlement
        }
        return CreditChanges.granted(windows, account: account, subscription: nil, environment: environment, cause: EventCause())
    }

    /// The `warn_at` events of `meter` whose thresholds a spend or a hold took the remaining balance across; a share
    /// is of the allowance of the tier that decides now.
    func warnings(_ meter: String, from before: Int64, to after: Int64, account: AccountID, catalogue: TierCatalogue) -> [EventDraft] {
        guard let thresholds = catalogue.meters.first(where: { $0.id == meter })?.warnAt, !thresholds.isEmpty else { return [] }
        let allowance = credits.tier.flatMap { catalogue.allowances(ofTier: $0)[meter] }
        // A free trial's window grants `trial_cap`: a share is of that.
        let isTrial = subscriptions.contains { state in
            state.offer?.discountType == .freeTrial && catalogue.tier(ofProduct: state.productId)?.tier.id == credits.tier
        }
        let crossings = CreditWarnings.crossed(thresholds, allowance: allowance, isTrial: isTrial, before: before, after: after)
        guard !crossings.isEmpty else { return [] }
        return CreditChanges.warnings(
            crossings, meter: meter, remaining: after, window: credits.meters[meter]?.resetsAt, account: account, environment: environment)
    }

    /// The environment events of the account are sent in: its first subscription's.
    var environment: StoreEnvironment { subscriptions.first?.environment ?? .production }
}
