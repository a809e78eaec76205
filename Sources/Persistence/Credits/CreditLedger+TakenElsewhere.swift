import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// Notes in `ledger` what `derivation`'s claw-backs (prorated refunds) took from the top-ups of accounts that owned
    /// the subscription before: the ledger read for a subscription holds its own buckets and its owner's, so once it
    /// changed hands those take-backs are out of sight, and the rules would claw back again from the new owner
    /// (``SubscriptionCredits``, docs/credits.md). Without a prorated refund it reads nothing, which is nearly every
    /// apply; with one, the former owners and then their take-back rows, each by key.
    ///
    /// - Parameter storedOwner: the owner stored before this derivation: when it changes hands now, the move is not in
    ///   `account_transfers` yet (it is recorded after the rules ran).
    public func noteTakenElsewhere(
        for derivation: Lifecycle.Derivation, storedOwner: AccountID?, in ledger: inout LedgerSnapshot, on connection: PostgresConnection
    ) async throws {
        guard SubscriptionCredits.hasClawBacks(derivation) else { return }
        let owner = derivation.state.accountId
        let formerOwners = try await connection.query(
            "SELECT DISTINCT from_account FROM account_transfers WHERE original_transaction_id = \(derivation.state.originalTransactionId)",
            logger: logger)
        var owners = Set([storedOwner].compactMap { $0 })
        for try await account in formerOwners.decode(AccountID.self) { owners.insert(account) }
        if let owner { owners.remove(owner) }
        let keys = SubscriptionCredits.takeBackKeys(of: derivation, formerOwners: owners.sorted(), catalogue: catalogue)
        guard !keys.isEmpty else { return }
        let rows = try await connection.query(
            """
            SELECT l.operation_key, l.bucket, l.delta, l.reason, b.meter
            FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE l.operation_key = ANY(\(keys))
            """,
            logger: logger)
        var taken: [LedgerSnapshot.TakenElsewhere] = []
        for try await (key, bucket, delta, reason, meter) in rows.decode((String, String, Int64, String, String).self) {
            taken.append(.init(entry: LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason), meter: meter))
        }
        ledger.noteTakenElsewhere(taken)
    }
}
