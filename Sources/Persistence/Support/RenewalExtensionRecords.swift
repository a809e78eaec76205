import Entitlements
import Foundation
import Logging
import PostgresNIO

/// The renewal-date extensions asked of Apple (`sql/0028_renewal_extensions.sql`), one statement per intent.
public struct RenewalExtensionRecords: Sendable {
    /// One extension request and what Apple answered.
    public struct Record: Sendable, Equatable {
        public enum Kind: String, Sendable { case single, mass, unknown }

        public var requestIdentifier: String
        public var kind: Kind
        public var environment: StoreEnvironment
        public var subscription: String?
        public var accountId: String?
        public var productId: String?
        public var storefronts: [String]?
        public var days: Int
        public var reasonCode: Int
        public var requestedBy: String
        public var requestedAt: Date
        public var answeredAt: Date?
        public var succeeded: Bool?
        public var effectiveDate: Date?
        public var error: String?
        public var complete: Bool
        public var completeDate: Date?
        public var succeededCount: Int64?
        public var failedCount: Int64?

        public init(
            requestIdentifier: String, kind: Kind, environment: StoreEnvironment, subscription: String? = nil, accountId: String? = nil,
            productId: String? = nil, storefronts: [String]? = nil, days: Int, reasonCode: Int, requestedBy: String, requestedAt: Date
        ) {
            self.requestIdentifier = requestIdentifier
            self.kind = kind
            self.environment = environment
            self.subscription = subscription
            self.accountId = accountId
            self.productId = productId
            self.storefronts = storefronts
            self.days = days
            self.reasonCode = reasonCode
            self.requestedBy = requestedBy
            self.requestedAt = requestedAt
            self.complete = false
        }
    }

    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Files a request before Apple is asked, so an answer lost on the way is still on record; `false` when the
    /// identifier was used before (nothing is filed).
    public func file(_ record: Record) async throws -> Bool {
        let rows = try await client.fencedQuery(
            """
            INSERT INTO renewal_extensions (request_identifier, kind, environment, original_transaction_id, account_id, product_id, storefronts,
                                            days, reason_code, requested_by, requested_at)
            VALUES (\(record.requestIdentifier), \(record.kind.rawValue), \(record.environment), \(record.subscription), \(record.accountId),
                    \(record.productId), \(record.storefronts), \(record.days), \(Int16(clamping: record.reasonCode)), \(record.requestedBy), \(record.requestedAt))
            ON CONFLICT (request_identifier) DO NOTHING
            RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Apple's answer to a single extension, or why it could not be had.
    public func answer(_ requestIdentifier: String, succeeded: Bool?, effectiveDate: Date?, error: String?, at now: Date) async throws {
        try await client.fencedQuery(
            """
            UPDATE renewal_extensions SET answered_at = \(now), succeeded = \(succeeded), effective_date = \(effectiveDate), error = \(error),
                complete = \(succeeded != nil), complete_date = CASE WHEN \(succeeded != nil) THEN \(now) END
            WHERE request_identifier = \(requestIdentifier)
            """, logger: logger)
    }

    /// A mass extension's progress, from its status endpoint or its summary notification; a finished one stays finished.
    public func progress(
        _ requestIdentifier: String, complete: Bool, completeDate: Date?, succeededCount: Int64?, failedCount: Int64?, error: String?, at now: Date
    ) async throws {
        try await client.fencedQuery(
            """
            UPDATE renewal_extensions SET answered_at = \(now), error = \(error),
                complete = complete OR \(complete), complete_date = coalesce(\(completeDate), complete_date),
                succeeded_count = coalesce(\(succeededCount), succeeded_count), failed_count = coalesce(\(failedCount), failed_count)
            WHERE request_identifier = \(requestIdentifier) AND kind = 'mass'
            """, logger: logger)
    }

    /// A RENEWAL_EXTENSION/SUMMARY notification: Apple finished the mass extension filed as `requestIdentifier`. On
    /// the applying job's transaction; a summary of a request not filed here changes nothing.
    public static func noteSummary(
        _ requestIdentifier: String, succeededCount: Int64?, failedCount: Int64?, at now: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE renewal_extensions SET complete = true, complete_date = coalesce(complete_date, \(now)), answered_at = \(now),
                succeeded_count = coalesce(\(succeededCount), succeeded_count), failed_count = coalesce(\(failedCount), failed_count)
            WHERE request_identifier = \(requestIdentifier) AND kind = 'mass'
            """, logger: logger)
    }

    /// One request by its identifier.
    public func record(_ requestIdentifier: String) async throws -> Record? {
        try await records(
            """
            SELECT \(unescaped: Self.columns) FROM renewal_extensions WHERE request_identifier = \(requestIdentifier)
            """
        ).first
    }

    /// An account's single extensions, newest first.
    public func ofAccount(_ account: String, limit: Int = 50) async throws -> [Record] {
        try await records(
            """
            SELECT \(unescaped: Self.columns) FROM renewal_extensions WHERE account_id = \(account) ORDER BY requested_at DESC LIMIT \(limit)
            """)
    }

    /// The latest mass extensions, newest first.
    public func mass(limit: Int = 20) async throws -> [Record] {
        try await records(
            """
            SELECT \(unescaped: Self.columns) FROM renewal_extensions WHERE kind = 'mass' ORDER BY requested_at DESC LIMIT \(limit)
            """)
    }

    /// How many of a product's App Store subscriptions in `environment` are paid and active at `now` — those a mass
    /// extension may reach (Apple decides; trials and billing trouble are not extended).
    public func activePaidSubscriptions(ofProduct product: String, environment: StoreEnvironment, now: Date) async throws -> Int {
        let rows = try await client.fencedQuery(
            """
            SELECT count(*) FROM subscriptions
            WHERE product_id = \(product) AND environment = \(environment) AND coalesce(store, subscription_store_before_0033(original_transaction_id)) = 'app_store'
              AND status = 'active' AND NOT is_trial AND expires_at > \(now)
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    private static let columns = """
        request_identifier, kind, environment, original_transaction_id, account_id, product_id, storefronts, days, reason_code::integer,
        requested_by, requested_at, answered_at, succeeded, effective_date, error, complete, complete_date, succeeded_count, failed_count
        """

    private func records(_ query: PostgresQuery) async throws -> [Record] {
        var records: [Record] = []
        for try await row in try await client.fencedQuery(query, logger: logger) {
            let columns = row.makeRandomAccess()
            var record = Record(
                requestIdentifier: try columns[0].decode(String.self), kind: Record.Kind(rawValue: try columns[1].decode(String.self)) ?? .unknown,
                environment: try columns[2].decode(StoreEnvironment.self), subscription: try columns[3].decode(String?.self),
                accountId: try columns[4].decode(String?.self), productId: try columns[5].decode(String?.self),
                storefronts: try columns[6].decode([String]?.self), days: try columns[7].decode(Int.self),
                reasonCode: try columns[8].decode(Int.self),
                requestedBy: try columns[9].decode(String.self), requestedAt: try columns[10].decode(Date.self))
            record.answeredAt = try columns[11].decode(Date?.self)
            record.succeeded = try columns[12].decode(Bool?.self)
            record.effectiveDate = try columns[13].decode(Date?.self)
            record.error = try columns[14].decode(String?.self)
            record.complete = try columns[15].decode(Bool.self)
            record.completeDate = try columns[16].decode(Date?.self)
            record.succeededCount = try columns[17].decode(Int64?.self)
            record.failedCount = try columns[18].decode(Int64?.self)
            records.append(record)
        }
        return records
    }
}
