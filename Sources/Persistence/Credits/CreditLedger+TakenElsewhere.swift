import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// Notes in `ledger` what claw-backs (prorated refunds) of `derivation`'s periods took from the top-ups of accounts
    /// that owned the subscription before, not given back since: the ledger read for a subscription holds its own
    /// buckets and its owner's, so once it changed hands those take-backs are out of sight, and the rules would claw
    /// back again from the new owner, and could not give them back when the refund is reversed (``SubscriptionCredits``,
    /// docs/credits.md). Without a prorated refund, now or once, it reads nothing, which is nearly every apply; with one
    /// (for as long as the subscription lives), one statement: the former owners' top-ups, and on them each take-back of
    /// those periods not reversed, whatever its refund's date, with its claim's rows.
    ///
    /// - Parameter storedOwner: the owner stored before this derivation: when it changes hands now, the move is not in
    ///   `account_transfers` yet (it is recorded after the rules ran).
    public func noteTakenElsewhere(
        for derivation: Lifecycle.Derivation, storedOwner: AccountID?, in ledger: inout LedgerSnapshot, on connection: PostgresConnection
    ) async throws {
        let prefixes = SubscriptionCredits.clawBackPrefixes(of: derivation)
        guard !prefixes.isEmpty else { return }
        // One statement, so an erasure of a former owner (which renames its buckets, its rows' keys and the transfers)
        // is seen whole or not at all. The `LIKE`s let the ledger's take-back and claim indexes (sql/0037, 0038)
        // serve it: the takes, and their claims' rows, which a reversal gives back with them. The prefixes may also
        // begin another period's keys (`<period>:…`): the rules count only a key that is exactly a take of the period
        // from its bucket (SubscriptionCredits.isClawBackTake), and its claim's rows.
        let rows = try await connection.query(
            """
            SELECT l.operation_key, l.bucket, l.delta, l.reason, b.meter
            FROM credit_buckets b JOIN credit_ledger l ON l.bucket = b.key
            WHERE b.kind = 'topup'
              AND b.account_id IN (
                  SELECT t.from_account FROM account_transfers t WHERE t.original_transaction_id = \(derivation.state.originalTransactionId)
                  UNION ALL SELECT \(storedOwner?.text))
              AND b.account_id IS DISTINCT FROM \(derivation.state.accountId?.text)
              AND (l.operation_key LIKE 'clawback:%' OR l.operation_key LIKE 'claim:clawback:%')
              AND EXISTS (
                  SELECT 1 FROM unnest(\(prefixes)::text[]) AS p (prefix)
                  WHERE starts_with(l.operation_key, p.prefix) OR starts_with(l.operation_key, 'claim:' || p.prefix))
              AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.operation_key = 'reversed:' || l.operation_key)
            """,
            logger: logger)
        var taken: [LedgerSnapshot.TakenElsewhere] = []
        for try await (key, bucket, delta, reason, meter) in rows.decode((String, String, Int64, String, String).self) {
            taken.append(.init(entry: LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason), meter: meter))
        }
        ledger.noteTakenElsewhere(taken)
    }
}
