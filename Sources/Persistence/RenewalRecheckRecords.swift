import Foundation
import Logging
import PostgresNIO
import StatementFencing

/// The late-renewal rechecks Storekeeper has scheduled, and what each check found (`renewal_rechecks`).
public struct RenewalRecheckRecords: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Records that a period is to be rechecked at `dueAt`, unless it is already; returns whether it was recorded.
    public func record(_ originalTransactionId: String, transactionId: String, dueAt: Date, on connection: PostgresConnection)
        async throws -> Bool
    {
        !(try await connection.run(
            InsertRecheck(originalTransactionId: originalTransactionId, transactionId: transactionId, dueAt: dueAt), logger: logger)).isEmpty
    }

    /// Records one check and Apple's status; returns how many checks there have been.
    public func recordCheck(
        _ originalTransactionId: String, transactionId: String, appleStatus: Int32?, resolved: Bool, on connection: PostgresConnection
    ) async throws -> Int {
        let rows = try await connection.query(
            """
            UPDATE renewal_rechecks SET checks = checks + 1, last_status = \(appleStatus.map(Int.init)), last_checked_at = now(),
                resolved_at = CASE WHEN \(resolved) THEN now() ELSE resolved_at END
            WHERE original_transaction_id = \(originalTransactionId) AND transaction_id = \(transactionId)
            RETURNING checks
            """,
            logger: logger)
        for try await checks in rows.decode(Int.self) { return checks }
        return 0
    }

    /// Records that a period is to be rechecked, unless it is already; a row comes back when it was recorded.
    struct InsertRecheck: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO renewal_rechecks (original_transaction_id, transaction_id, due_at) VALUES ($1, $2, $3)
            ON CONFLICT (original_transaction_id, transaction_id) DO NOTHING RETURNING due_at
            """
        static let bindingDataTypes: [PostgresDataType] = [.text, .text, .timestamptz]
        var originalTransactionId: String
        var transactionId: String
        var dueAt: Date

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(originalTransactionId)
            bindings.append(transactionId)
            bindings.append(dueAt)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Date { try row.decode(Date.self) }
    }
}
