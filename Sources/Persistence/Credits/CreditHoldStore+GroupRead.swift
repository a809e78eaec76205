import Credits
import Foundation
import PayloadDecoding
import PostgresNIO
import StatementFencing
import Subscriptions

extension CreditHoldStore {
    /// What a group's first statement read: the holds it names, each with what became of its buckets since while it is
    /// held (whether each is open to the hold's account included), and the status inputs of the accounts taking a hold
    /// (an account with nothing has no entry).
    public struct GroupRead: Sendable {
        public var holds: [ReadHold]
        public var inputs: [AccountID: CreditLedger.StatusInputs]
    }

    /// Locks the accounts of a group of holds — `accounts`, and those of the holds `ids` — reads the holds named by id
    /// or by (account, idempotency key), and reads at `now` the status inputs of the accounts `taking` a hold (without
    /// what they hold, as a spend's, sql/0042), in one round trip (`lock_accounts_read_hold_group`, sql/0040). An account that only ends holds needs no more: where its
    /// credits go back is in each hold's read.
    public func lockAccountsReadHoldsAndStatus(
        accounts: [AccountID], ids: [UUID], keys: [(account: AccountID, key: String)], taking: [AccountID], at now: Date,
        on connection: PostgresConnection
    ) async throws -> GroupRead {
        let rows = try await connection.run(
            PreparedQuery<LockReadHoldsAndStatus>(
                accounts.map(\.text), ids, keys.map(\.account.text), keys.map(\.key), taking.map(\.text), now),
            logger: logger)
        var holds: [ReadHold] = []
        var statusRows: [PostgresRow] = []
        let offset = LockReadHoldsAndStatus.holdOffset
        for row in rows {
            let cells = row.makeRandomAccess()
            guard try cells[offset].decode(UUID?.self) != nil else {
                statusRows.append(row)
                continue
            }
            let hold = try Self.decode(row, at: offset)
            let text = try cells[offset + 13].decode(String?.self)
            let since = try text.map { try PayloadDecoder().decode([CreditHold.BucketSince].self, from: Array($0.utf8)) } ?? []
            holds.append(ReadHold(hold: hold, since: since))
        }
        return GroupRead(holds: holds, inputs: try CreditLedger.statusInputs(from: statusRows))
    }

    /// The status columns (as ``CreditLedger/AccountsStatusInputs`` reads them, in spend order), then a hold's columns
    /// (``CreditHoldStore/columns``' order) and what its buckets became since, of `$1`…`$6` (sql/0040).
    enum LockReadHoldsAndStatus: PreparedSQL {
        static let holdOffset = SubscriptionStore.columnCount + 11 + EntitlementSources.columnCount
        static let sql = """
            SELECT \(SubscriptionStore.columns(of: "subscription")), \(CreditLedger.LiveBuckets.columns), \(EntitlementSources.columns(of: "source")),
                (hold).id, (hold).account_id AS hold_account_id, (hold).idempotency_key, (hold).meter AS hold_meter, (hold).amount,
                (hold).debits::text, (hold).created_at AS hold_created_at, (hold).expires_at, (hold).state AS hold_state, (hold).charged,
                (hold).returned, (hold).lapsed, (hold).ended_at, since_hold::text
            FROM lock_accounts_read_hold_group($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz)
            ORDER BY (subscription).original_transaction_id, \(CreditLedger.LiveBuckets.order)
            """
    }
}
