import Credits
import Foundation
import Persistence
import PostgresNIO
import Subscriptions

extension CreditHolds {
    /// How long after a spend it can be given back (docs/credits.md, "Giving a spend back"): long enough for a failure
    /// found after the fact (a job that reports hours later), short enough that a customer's spends of a day cannot
    /// be given back a week on.
    public static let reversalWindow: TimeInterval = 86_400

    /// What giving a spend back came to.
    public enum ReversalAnswer: Sendable {
        /// Given back now, or before (the first reversal's answer).
        case reversed(UsageRequests.Reversal, meter: String, amount: Int64)
        /// No spend under that key.
        case notFound
        /// The spend was refused (402): nothing was taken.
        case notSpent(meter: String, amount: Int64)
        /// The spend was of an unlimited meter: it took nothing from any bucket.
        case unlimited(meter: String, amount: Int64)
        /// Asked more than ``reversalWindow`` after the spend.
        case windowPassed(spentAt: Date)
    }

    /// Gives a plain spend's credits back once, by the rule a released hold follows (``HoldSettlement``): each debit
    /// to its bucket while it stands, the carry-over an upgrade moved it to, or nowhere. Under the account's lock, in one
    /// transaction.
    public func reverseSpend(of account: AccountID, idempotencyKey: String, now: Date) async throws -> ReversalAnswer {
        defer { cache?.invalidate(account) }
        return try await client.withFencedTransaction(logger: logger) { connection in
            try await ledger.lockAccount(account, on: connection)
            guard let spend = try await usageRequests.spendToReverse(of: account, idempotencyKey: idempotencyKey, on: connection) else {
                return .notFound
            }
            if let done = spend.reversal { return .reversed(done, meter: spend.meter, amount: spend.amount) }
            guard spend.spent else { return .notSpent(meter: spend.meter, amount: spend.amount) }
            // Its answer had no `remaining`: nothing was deducted, so nothing is given back (README's `not_spent`).
            guard spend.counted else { return .unlimited(meter: spend.meter, amount: spend.amount) }
            guard now.timeIntervalSince(spend.spentAt) <= Self.reversalWindow else { return .windowPassed(spentAt: spend.spentAt) }
            // A counted spend without its debits would be "given back" nothing, for good: refuse instead (its debits
            // are found by the keys its answer names; see UsageRequests.debitKeyPrefix).
            guard !spend.counted || !spend.debits.isEmpty else {
                throw PersistenceError(.corruptRecord, "the spend's ledger rows are not under the keys its answer names")
            }
            var reversal = UsageRequests.Reversal(reversedAt: now, returned: 0, lapsed: 0)
            var postings: [LedgerEntry] = []
            if !spend.debits.isEmpty {
                let open = Set((try await ledger.liveBuckets(of: [account], at: now, on: connection)[account] ?? []).map(\.bucket.key))
                let destinations = CreditHold.destinations(spend.since, open: open, account: account)
                let claims = CreditHold.claims(spend.since)
                guard let outcome = HoldSettlement.settle(spend.debits, charge: 0, destination: { destinations[$0] }, claims: { claims[$0] ?? [] })
                else {
                    throw PersistenceError(.corruptRecord, "a stored spend's debits are not a spend")
                }
                // Each return under the key of the debit it gives back (a spend takes from a bucket once); a claim's
                // payment names the reversal without the account or the app's key.
                let payer = { UsageRequests.reversalPayer(idempotencyKey: idempotencyKey, micros: spend.micros, index: $0) }
                postings = CreditHold.returnEntries(
                    of: outcome, debits: spend.debits, reason: "usage reversed",
                    key: { UsageRequests.reversalKey(debitKeyPrefix: spend.debitKeyPrefix, index: $0) }, payer: payer)
                // What comes back to a window a standing refund took from (or found empty), or through a carry a
                // standing refund of the upgrade took, the refund takes, as for a hold's end: named as a claim's
                // payment is, without the account or the app's key (an erasure does not rewrite a refund's rows).
                let takes = CreditHold.refundTakes(of: outcome, debits: spend.debits, since: spend.since, account: account, key: payer)
                postings += takes
                let taken = takes.reduce(0) { $0 - $1.delta }
                (reversal.returned, reversal.lapsed) = (outcome.returned - taken, outcome.lapsed + taken)
            }
            try await usageRequests.recordReversal(reversal, of: account, idempotencyKey: idempotencyKey, posting: postings, on: connection)
            return .reversed(reversal, meter: spend.meter, amount: spend.amount)
        }
    }
}
