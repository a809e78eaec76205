import Analytics
import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// What saving one subscription's derivation writes before its credit rules run: its state when it changed, the
    /// transaction ids a new period names for the support search (``AccountSearch``), and its contribution to the
    /// analytics rollups (``AnalyticsRollups/record(_:ofSubscription:on:)``).
    public struct DerivationWrites: Sendable {
        /// The subscription whose derivation this is.
        public var originalTransactionId: String
        /// The owner the derivation names, whose lock is taken and whose live buckets are read.
        public var account: AccountID?
        /// The state to save; `nil` when it is the stored one.
        public var state: SubscriptionState?
        /// Filed for the support search; ids filed before stay as they are.
        public var transactionIds: [String]
        /// Replaces the subscription's contribution; `nil` records none (analytics off).
        public var contribution: AnalyticsContribution?
        /// A new owner's digests (``ErasedAccounts/digests(of:)``) to look up first: when one is filed as erased,
        /// nothing is written or locked, and ``DerivationSnapshot/erasedAs`` answers its pseudonym. Empty looks up
        /// nothing.
        public var erasedDigests: [String]

        public init(
            originalTransactionId: String, account: AccountID?, state: SubscriptionState?, transactionIds: [String],
            contribution: AnalyticsContribution?, erasedDigests: [String] = []
        ) {
            self.originalTransactionId = originalTransactionId
            self.account = account
            self.state = state
            self.transactionIds = transactionIds
            self.contribution = contribution
            self.erasedDigests = erasedDigests
        }
    }

    /// What a derivation's save read: the ledger its credit rules need, and whether the owner has more than that
    /// ledger and the subscription show.
    public struct DerivationSnapshot: Sendable {
        public var ledger: LedgerSnapshot
        /// The owner (when there is one) has another subscription, a grant or purchase in force, or a bucket of its own
        /// that opens later; `false` means its status is the subscription and the ledger's live buckets
        /// (``StatusInputs/after(_:of:in:posting:posted:at:)``).
        public var ownerHasMore: Bool
        /// The pseudonym the owner was filed under when ``DerivationWrites/erasedDigests`` found its erasure: then
        /// nothing was written, no lock taken, and ``ledger`` is empty.
        public var erasedAs: AccountID?
    }

    /// Takes the owner's lock, reads the ledger the credit rules of the subscription need (as
    /// ``snapshot(ofSubscription:account:now:on:)``, under its lock) and whether the owner has more, and makes `writes`,
    /// in one round trip: every apply that changes something makes them, and each was a round trip of its own. Unless
    /// ``DerivationWrites/erasedDigests`` finds the owner erased: then it only answers the pseudonym.
    public func snapshot(savingDerivation writes: DerivationWrites, now: Date, on connection: PostgresConnection) async throws
        -> DerivationSnapshot
    {
        let rows =
            if writes.state != nil {
                try await connection.run(SnapshotSavingDerivation(writes: writes, now: now), logger: logger)
            } else {
                try await connection.run(SnapshotRecordingDerivation(writes: writes, now: now), logger: logger)
            }
        // Every row carries the answer (sql/0054); no row at all only if the function did not run, which says nothing.
        let first = rows.first?.makeRandomAccess()
        let more = try first?[Self.ownerExtentColumn].decode(Bool?.self) ?? true
        let pseudonym = try first?[Self.erasedAsColumn].decode(AccountID?.self)
        return DerivationSnapshot(ledger: try Self.snapshot(from: rows), ownerHasMore: more, erasedAs: pseudonym)
    }

    /// Where ``SnapshotRecordingDerivation``'s rows carry `owner_has_more`: after ``Snapshot``'s twelve columns.
    static let ownerExtentColumn = 12
    /// Where they carry the owner's pseudonym, when ``DerivationWrites/erasedDigests`` found it erased.
    static let erasedAsColumn = 13

    /// ``Snapshot``'s read with whether the owner has more (sql/0054), with the filing (`$5`) and the analytics
    /// contribution (`$6`–`$13`, when `$6`) of a derivation whose state is the stored one.
    ///
    /// How it runs: PostgreSQL runs a data-modifying `WITH` (the filing; the save of ``SnapshotSavingDerivation``)
    /// once, after the query, whether or not the query reads it; a `SELECT` in a `WITH` only when read. The
    /// contribution's call is read as the left side of a `LEFT JOIN`, which is read whole whatever the right side
    /// holds, so it runs once; the right side, the ledger read, answers one row of NULLs when it finds nothing.
    ///
    /// The erased-owner lookup (`$14`, ``DerivationWrites/erasedDigests``) rides the same round trip: each write and
    /// the ledger read (which takes the owner's lock) are made only where it found nothing, so an owner found erased
    /// gets one row of NULLs with its pseudonym, and the caller files the derivation under that and saves again.
    /// `erased_accounts` is read as the statement starts, before the owner's lock: a first purchase saved while an
    /// erasure of its owner is under way is filed under the id, as with a lookup of its own before the save; erasing
    /// again moves it.
    struct SnapshotRecordingDerivation: PostgresPreparedStatement {
        static let sql = text(firstStateBind: nil)
        static let bindingDataTypes: [PostgresDataType] = [
            .text, .text, .text, .timestamptz, .textArray, .bool, .int4Array, .textArray, .textArray, .textArray, .textArray, .textArray,
            .int8Array, .textArray,
        ]
        var writes: DerivationWrites
        var now: Date

        /// The statement, saving the state bound from `$firstStateBind` on when it is given.
        static func text(firstStateBind: Int?) -> String {
            let notErased = "NOT EXISTS (SELECT FROM erased)"
            let saved = firstStateBind.map { "saved AS (\(SubscriptionStore.SaveSubscription.upsert(firstBind: $0, where: notErased)))," } ?? ""
            return """
                WITH erased AS (SELECT pseudonym FROM erased_accounts WHERE account_digest = ANY($14::text[]) LIMIT 1),
                \(saved)
                filed AS (
                    INSERT INTO subscription_transactions (transaction_id, original_transaction_id)
                    SELECT id, $2 FROM unnest($5::text[]) AS id WHERE \(notErased) ON CONFLICT (transaction_id) DO NOTHING),
                recorded AS (
                    SELECT count(*) AS calls FROM (
                        SELECT analytics_record($2, $7::integer[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bigint[])
                        WHERE $6::boolean AND \(notErased)) AS call)
                SELECT snapshot.*, (SELECT pseudonym FROM erased) FROM recorded
                LEFT JOIN LATERAL (
                    SELECT \(Snapshot.columns), owner_has_more FROM credit_ledger_snapshot_with_owner_extent($1, $2, $3, $4)
                    WHERE \(notErased)
                ) AS snapshot ON true
                """
        }

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
            Self.append(writes, now: now, to: &bindings)
            return bindings
        }

        static func append(_ writes: DerivationWrites, now: Date, to bindings: inout PostgresBindings) {
            bindings.append(writes.account.map(CreditLedger.lockKey))
            bindings.append(writes.originalTransactionId)
            bindings.append(writes.account?.text)
            bindings.append(now)
            bindings.append(writes.transactionIds)
            let columns = AnalyticsRollups.Columns(writes.contribution ?? AnalyticsContribution())
            bindings.append(writes.contribution != nil)
            bindings.append(columns.days)
            bindings.append(columns.measures)
            bindings.append(columns.stores)
            bindings.append(columns.environments)
            bindings.append(columns.products)
            bindings.append(columns.currencies)
            bindings.append(columns.amounts)
            bindings.append(writes.erasedDigests)
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// ``SnapshotRecordingDerivation`` with the derivation's state saved from `$15` on (``SubscriptionStore``'s
    /// upsert): the read is of the ledger and subscriptions as they were, like a snapshot taken before the save.
    struct SnapshotSavingDerivation: PostgresPreparedStatement {
        static let sql = SnapshotRecordingDerivation.text(firstStateBind: SnapshotRecordingDerivation.bindingDataTypes.count + 1)
        static let bindingDataTypes = SnapshotRecordingDerivation.bindingDataTypes + SubscriptionStore.SaveSubscription.bindingDataTypes
        var writes: DerivationWrites
        var now: Date

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
            SnapshotRecordingDerivation.append(writes, now: now, to: &bindings)
            if let state = writes.state { SubscriptionStore.SaveSubscription.append(state, to: &bindings) }
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }
}
