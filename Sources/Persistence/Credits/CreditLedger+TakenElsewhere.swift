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
    /// those periods, whatever its refund's date, with its claim's rows, each marked when it was reversed.
    ///
    /// - Parameter storedOwner: the owner stored before this derivation: when it changes hands now, the move is not in
    ///   `account_transfers` yet (it is recorded after the rules ran).
    public func noteTakenElsewhere(
        for derivation: Lifecycle.Derivation, storedOwner: AccountID?, in ledger: inout LedgerSnapshot, on connection: PostgresConnection
    ) async throws {
        let prefixes = SubscriptionCredits.clawBackPrefixes(of: derivation)
        guard !prefixes.isEmpty else { return }
        // One statement, so an erasure of a former owner (which renames its buckets, its rows' keys and the transfers)
        // is seen whole or not at all. Two branches, each with the literal `LIKE` of a partial index of the ledger
        // (sql/0037's take-backs, sql/0038's claims), so each is an index scan on the top-up's rows of its kind (an OR
        // of the two implies neither index's predicate, and the plan then filters every row of the top-up). The
        // prefixes may also begin another period's keys (`<period>:…`): the rules count only a key that is exactly a
        // take of the period from its bucket (SubscriptionCredits.isClawBackTake), and its claim's rows. Takes reversed
        // are read too, marked: a claim's payment written after the reversal (a hold of that owner's ending meanwhile,
        // under its own lock, not this apply's) is then still found under its take, and given back.
        let rows = try await connection.query(
            Self.takenElsewhereQuery(
                of: derivation.state.originalTransactionId, owner: derivation.state.accountId, storedOwner: storedOwner, prefixes: prefixes),
            logger: logger)
        var taken: [LedgerSnapshot.TakenElsewhere] = []
        for try await (key, bucket, delta, reason, meter, reversed) in rows.decode((String, String, Int64, String, String, Bool).self) {
            taken.append(.init(entry: LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason), meter: meter, reversed: reversed))
        }
        ledger.noteTakenElsewhere(taken)
    }

    /// The statement of ``noteTakenElsewhere(for:storedOwner:in:on:)``: the take-backs under `prefixes` (and their claims'
    /// rows) on the top-ups of the accounts that owned `originalTransactionId` before — `storedOwner` and
    /// `account_transfers` — other than `owner`, each with whether it was reversed.
    static func takenElsewhereQuery(of originalTransactionId: String, owner: AccountID?, storedOwner: AccountID?, prefixes: [String]) -> PostgresQuery
    {
        """
        WITH former AS (
            SELECT b.key, b.meter FROM credit_buckets b
            WHERE b.kind = 'topup'
              AND b.account_id IN (
                  SELECT t.from_account FROM account_transfers t WHERE t.original_transaction_id = \(originalTransactionId)
                  UNION ALL SELECT \(storedOwner?.text))
              AND b.account_id IS DISTINCT FROM \(owner?.text)),
        prefixes AS (SELECT p.prefix FROM unnest(\(prefixes)::text[]) AS p (prefix))
        SELECT l.operation_key, l.bucket, l.delta, l.reason, f.meter,
               EXISTS (SELECT 1 FROM credit_ledger r WHERE r.operation_key = 'reversed:' || l.operation_key)
        FROM former f JOIN credit_ledger l ON l.bucket = f.key
        WHERE l.operation_key LIKE 'clawback:%'
          AND EXISTS (SELECT 1 FROM prefixes p WHERE starts_with(l.operation_key, p.prefix))
        UNION ALL
        SELECT l.operation_key, l.bucket, l.delta, l.reason, f.meter,
               EXISTS (SELECT 1 FROM credit_ledger r WHERE r.operation_key = 'reversed:' || l.operation_key)
        FROM former f JOIN credit_ledger l ON l.bucket = f.key
        WHERE l.operation_key LIKE 'claim:%'
          AND EXISTS (SELECT 1 FROM prefixes p WHERE starts_with(l.operation_key, 'claim:' || p.prefix))
        """
    }
}
