import Foundation
import PostgresNIO

// The idempotency window (issue 56 part 2, docs/credits.md "How long a key is kept"): usage answers and ended holds
// older than it are deleted a batch at a time, oldest first (sql/0050's indexes), so a spend's key lookup and a hold's
// probe stay on recent rows. Each batch is one statement that also keeps, per account, the time of the last spend or
// hold it deleted (`account_last_spends`): the retention rules' "days since the last spend" must not read "never" once
// they are gone. A batch skips rows another transaction holds (an erasure deleting the account's answers, a reversal,
// a second worker's batch) instead of waiting for them in its own order, and writes `account_last_spends` in account
// order after them, as an erasure does: neither waits for the other the other way round.
extension UsageRequests {
    /// Deletes up to `limit` answers given before `cutoff`; returns how many went.
    public func deleteAnswers(before cutoff: Date, limit: Int, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            WITH gone AS (
                DELETE FROM usage_requests WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM usage_requests WHERE created_at < \(cutoff) ORDER BY created_at LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                RETURNING account_id, created_at, outcome
            ), kept AS (
                INSERT INTO account_last_spends (account_id, spent_at)
                SELECT account_id, max(created_at) FROM gone WHERE outcome = 'spent' GROUP BY account_id ORDER BY account_id
                ON CONFLICT (account_id) DO UPDATE SET spent_at = greatest(account_last_spends.spent_at, EXCLUDED.spent_at)
            )
            SELECT count(*)::int FROM gone
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}

extension CreditHoldStore {
    /// Deletes up to `limit` ended holds taken before `cutoff` (a hold lasts at most a day, so none still held is that
    /// old); returns how many went. Their ledger rows stay: their keys name the hold's id, never its idempotency key.
    public func deleteEndedHolds(before cutoff: Date, limit: Int, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            WITH gone AS (
                DELETE FROM credit_holds WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM credit_holds WHERE created_at < \(cutoff) AND state <> 'held' ORDER BY created_at LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED))
                RETURNING account_id, created_at
            ), kept AS (
                INSERT INTO account_last_spends (account_id, spent_at)
                SELECT account_id, max(created_at) FROM gone GROUP BY account_id ORDER BY account_id
                ON CONFLICT (account_id) DO UPDATE SET spent_at = greatest(account_last_spends.spent_at, EXCLUDED.spent_at)
            )
            SELECT count(*)::int FROM gone
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}
