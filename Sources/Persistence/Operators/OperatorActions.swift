import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// One change an operator made, as the audit log keeps it.
public struct OperatorAction: Sendable, Equatable {
    /// Assigned when appended; `0` before.
    public var id: Int64
    public var at: Date
    public var operatorName: String
    public var role: String
    public var action: String
    public var request: String
    public var status: Int
    public var accountId: String?
    public var target: String?
    /// The state before and after, as JSON text; `nil` where there was none (a grant before it was created).
    public var before: String?
    public var after: String?

    public init(
        id: Int64 = 0, at: Date, operatorName: String, role: String, action: String, request: String, status: Int, accountId: String? = nil,
        target: String? = nil, before: String? = nil, after: String? = nil
    ) {
        self.id = id
        self.at = at
        self.operatorName = operatorName
        self.role = role
        self.action = action
        self.request = request
        self.status = status
        self.accountId = accountId
        self.target = target
        self.before = before
        self.after = after
    }
}

/// The audit log (`operator_actions`): appended to, read, never changed (the table's triggers refuse it).
public struct OperatorActions: Sendable {
    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// What the log is read by: a time range, an operator, an account; newest first.
    public struct Filter: Sendable {
        public var from: Date?
        public var to: Date?
        public var operatorName: String?
        public var account: AccountID?
        /// Entries appended before this id: the next page after one that ended at it.
        public var before: Int64?
        public var limit: Int

        public init(from: Date? = nil, to: Date? = nil, operatorName: String? = nil, account: AccountID? = nil, before: Int64? = nil, limit: Int) {
            self.from = from
            self.to = to
            self.operatorName = operatorName
            self.account = account
            self.before = before
            self.limit = limit
        }
    }

    /// Appends `actions` in one transaction: all or none.
    public func append(_ actions: [OperatorAction]) async throws {
        guard !actions.isEmpty else { return }
        try await client.withFencedTransaction(logger: logger) { connection in
            for action in actions {
                try await connection.query(
                    """
                    INSERT INTO operator_actions (at, operator, role, action, request, status, account_id, target, before, after)
                    VALUES (\(action.at), \(action.operatorName), \(action.role), \(action.action), \(action.request), \(Int16(clamping: action.status)),
                            \(action.accountId), \(action.target), \(action.before)::jsonb, \(action.after)::jsonb)
                    """, logger: logger)
            }
        }
    }

    /// The actions `filter` selects, newest first.
    public func actions(_ filter: Filter) async throws -> [OperatorAction] {
        let rows = try await client.fencedQuery(
            """
            SELECT id, at, operator, role, action, request, status, account_id, target, before::text, after::text
            FROM operator_actions
            WHERE (\(filter.from)::timestamptz IS NULL OR at >= \(filter.from))
              AND (\(filter.to)::timestamptz IS NULL OR at < \(filter.to))
              AND (\(filter.operatorName)::text IS NULL OR operator = \(filter.operatorName))
              AND (\(filter.account?.text)::text IS NULL OR account_id = \(filter.account?.text))
              AND (\(filter.before)::bigint IS NULL OR id < \(filter.before))
            ORDER BY id DESC
            LIMIT \(filter.limit)
            """, logger: logger)
        var actions: [OperatorAction] = []
        for try await row in rows {
            let (id, at, name, role, action, request, status, account, target, before, after) = try row.decode(
                (Int64, Date, String, String, String, String, Int16, String?, String?, String?, String?).self)
            actions.append(
                OperatorAction(
                    id: id, at: at, operatorName: name, role: role, action: action, request: request, status: Int(status), accountId: account,
                    target: target, before: before, after: after))
        }
        return actions
    }
}
