import Credits
import Entitlements
import Foundation
import PostgresNIO
import StatementFencing
import Subscriptions

extension CreditLedger {
    /// What an account's status is computed from: its subscriptions (by originalTransactionId), its grants and
    /// one-time purchases that have not ended, and its buckets live at `now` — or later, with `orLater` — in spend
    /// order, with balances (``liveBuckets(of:at:orLater:on:)``).
    public struct StatusInputs: Sendable {
        public var subscriptions: [SubscriptionState]
        public var records: [EntitlementRecord]
        public var buckets: [AccountCredits.LiveBalance]
        /// What open holds (``CreditHoldStore``) took from buckets live at the read, already out of their balances,
        /// with those buckets' validity: what a status evaluated later (from the cache) counts as held depends on
        /// which of them are still live then (``held(at:)``).
        public var holds: [HeldCredits]

        public init(
            subscriptions: [SubscriptionState] = [], records: [EntitlementRecord] = [], buckets: [AccountCredits.LiveBalance] = [],
            holds: [HeldCredits] = []
        ) {
            self.subscriptions = subscriptions
            self.records = records
            self.buckets = buckets
            self.holds = holds
        }

        /// What holds keep out of each meter's `remaining` at `now` (docs/credits.md, "Status"): their credits in
        /// buckets live then. A hold of a bucket that closed since (yesterday's quota, a window reset) keeps nothing
        /// out of today's: its end lapses those credits.
        public func held(at now: Date) -> [String: Int64] {
            holds.reduce(into: [:]) { held, credits in
                guard !credits.ofUnlimitedMeter, credits.validFrom <= now, credits.validUntil.map({ $0 > now }) ?? true else { return }
                held[credits.meter, default: 0] += credits.amount
            }
        }

        /// What each meter's holds taken while it was unlimited hold: they took from no bucket, so they keep nothing
        /// out of `remaining`, and count as held only while the meter is unlimited (``AccountCredits/evaluate``).
        public var heldWithoutBuckets: [String: Int64] {
            holds.reduce(into: [:]) { held, credits in
                if credits.ofUnlimitedMeter { held[credits.meter, default: 0] += credits.amount }
            }
        }
    }

    /// Credits of one meter held out of buckets of one validity (sql/0068); or, ``ofUnlimitedMeter``, the holds of a
    /// meter taken while it was unlimited, which took from no bucket, with no end (sql/0077).
    public struct HeldCredits: Sendable, Equatable {
        public var meter: String
        public var amount: Int64
        public var validFrom: Date
        public var validUntil: Date?
        public var ofUnlimitedMeter = false

        /// The key of sql/0077's rows of an unlimited meter's holds; the held credits of buckets have `held:<meter>`.
        static let unlimitedKeyPrefix = "held-unlimited:"
    }

    /// The status inputs of `account`, in one read.
    public func statusInputs(of account: AccountID, at now: Date, orLater: Bool = false, on connection: PostgresConnection)
        async throws -> StatusInputs
    {
        try await statusInputs(of: [account], at: now, orLater: orLater, on: connection)[account] ?? StatusInputs()
    }

    /// The status inputs of each of `accounts`, in one read (accounts with neither subscriptions nor buckets are left
    /// out).
    public func statusInputs(of accounts: [AccountID], at now: Date, orLater: Bool = false, on connection: PostgresConnection)
        async throws -> [AccountID: StatusInputs]
    {
        let ids = Set(accounts).map(\.text)
        return try Self.statusInputs(from: try await connection.run(PreparedQuery<AccountsStatusInputs>(ids, now, orLater), logger: logger))
    }

    /// The status inputs a spend needs of each of `accounts` at `now`: those of ``statusInputs(of:at:orLater:on:)``
    /// but what the meters hold (`held` is empty). Holds are out of the balances already, and summing an account's
    /// open holds (a hundred expired ones waiting for their release, say) slowed every spend of it.
    public func spendInputs(of accounts: [AccountID], at now: Date, on connection: PostgresConnection) async throws -> [AccountID: StatusInputs] {
        let ids = Set(accounts).map(\.text)
        return try Self.statusInputs(from: try await connection.run(PreparedQuery<AccountsSpendInputs>(ids, now), logger: logger))
    }

    /// The status inputs in rows of ``AccountsStatusInputs``' columns, by account.
    static func statusInputs(from rows: [PostgresRow]) throws -> [AccountID: StatusInputs] {
        var inputs: [AccountID: StatusInputs] = [:]
        let sourceOffset = SubscriptionStore.columnCount + 11
        for row in rows {
            let cells = row.makeRandomAccess()
            if try cells["original_transaction_id"].decode(String?.self) != nil {
                let subscription = try SubscriptionStore.decode(row)
                guard let account = subscription.accountId else { continue }
                inputs[account, default: StatusInputs()].subscriptions.append(subscription)
            } else if try cells[sourceOffset].decode(String?.self) != nil {
                let (record, owner) = try EntitlementSources.decode(row, at: sourceOffset)
                guard let owner else { continue }
                inputs[owner, default: StatusInputs()].records.append(record)
            } else if try cells[SubscriptionStore.columnCount + 2].decode(String?.self) == "held" {
                // What a meter's open holds took from buckets of one validity (sql/0068), shaped as a bucket row: not a
                // bucket, nothing to spend from.
                let base = SubscriptionStore.columnCount
                let held = try HeldCredits(
                    meter: cells[base + 1].decode(String.self), amount: cells[base + 9].decode(Int64.self),
                    validFrom: cells[base + 6].decode(Date.self), validUntil: cells[base + 7].decode(Date?.self),
                    ofUnlimitedMeter: cells[base].decode(String.self).hasPrefix(HeldCredits.unlimitedKeyPrefix))
                inputs[try cells[base + 10].decode(AccountID.self), default: StatusInputs()].holds.append(held)
            } else {
                let (balance, owner) = try Self.liveBalance(row, at: SubscriptionStore.columnCount)
                inputs[owner, default: StatusInputs()].buckets.append(balance)
            }
        }
        return inputs
    }

    /// The subscriptions of accounts `$1`, their buckets live at `$2` (or later with `$3`) in spend order, and their
    /// grants and purchases not ended by `$2`, and what each meter holds: each row one of them, the others' columns NULL
    /// (`account_status_inputs_with_holds`, sql/0036 over sql/0022's `account_status_inputs`: functions, planned once
    /// per connection), in one round trip.
    enum AccountsStatusInputs: PreparedSQL {
        static let sql = """
            SELECT \(SubscriptionStore.columns(of: "subscription")), \(LiveBuckets.columns), \(EntitlementSources.columns(of: "source"))
            FROM account_status_inputs_with_holds($1::text[], $2, $3)
            ORDER BY (subscription).original_transaction_id, \(LiveBuckets.order)
            """
    }

    /// ``AccountsStatusInputs`` at `$2` without what each meter holds (`account_status_inputs`, sql/0022).
    enum AccountsSpendInputs: PreparedSQL {
        static let sql = """
            SELECT \(SubscriptionStore.columns(of: "subscription")), \(LiveBuckets.columns), \(EntitlementSources.columns(of: "source"))
            FROM account_status_inputs($1::text[], $2, false)
            ORDER BY (subscription).original_transaction_id, \(LiveBuckets.order)
            """
    }
}
