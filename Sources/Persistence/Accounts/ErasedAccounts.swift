import AppStoreModels
import Crypto
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// Erasure of an account's personal data (`sql/0029_erased_accounts.sql`): its id replaced by a pseudonym wherever
/// accounting needs the row, the rest deleted, and a digest of the id kept so facts Apple signs later with the old
/// id land under the pseudonym. Every statement runs on the caller's transaction, which holds the account's lock.
public struct ErasedAccounts: Sendable {
    /// How many rows each part of an erasure touched.
    public struct Counts: Sendable, Equatable, Encodable {
        public var subscriptions = 0
        public var signedFactsRewritten = 0
        public var claims = 0
        public var entitlementSources = 0
        public var creditBuckets = 0
        public var ledgerEntries = 0
        public var usageRequestsDeleted = 0
        public var purchaseTokensDeleted = 0
        public var consentDeleted = 0
        public var refundRequests = 0
        public var offerSignatures = 0
        public var stripeLinks = 0
        public var stripeObjects = 0
        public var eventsDeleted = 0
        public var renewalExtensions = 0
        public var jobs = 0
        public var auditEntries = 0

        public init() {}
    }

    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The hex SHA-256 of an account id: what is kept of an erased one.
    public static func digest(of account: AccountID) -> String {
        SHA256.hash(data: Data(account.text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The pseudonym of `account` when it was erased.
    public static func pseudonym(of account: AccountID, on connection: PostgresConnection, logger: Logger) async throws -> AccountID? {
        let rows = try await connection.query(
            "SELECT pseudonym FROM erased_accounts WHERE account_digest = \(digest(of: account))", logger: logger)
        for try await pseudonym in rows.decode(AccountID.self) { return pseudonym }
        return nil
    }

    /// Files `account` as erased under `pseudonym` (the one filed before, when it was erased already).
    public func tombstone(_ account: AccountID, pseudonym: AccountID, by operatorName: String, at now: Date, on connection: PostgresConnection)
        async throws -> AccountID
    {
        let rows = try await connection.query(
            """
            INSERT INTO erased_accounts (account_digest, pseudonym, erased_at, erased_by)
            VALUES (\(Self.digest(of: account)), \(pseudonym), \(now), \(operatorName))
            ON CONFLICT (account_digest) DO UPDATE SET account_digest = excluded.account_digest
            RETURNING pseudonym
            """, logger: logger)
        for try await filed in rows.decode(AccountID.self) { return filed }
        return pseudonym
    }

    /// Moves every row of `account` to `pseudonym`, deleting what only the account's own use needed.
    public func erase(_ account: AccountID, as pseudonym: AccountID, on connection: PostgresConnection) async throws -> Counts {
        var counts = Counts()
        let (from, to) = (account.text, pseudonym.text)
        // The subscriptions and one-time purchases whose signed facts name the account.
        var held: [String] = []
        for try await id in try await connection.query(
            """
            SELECT original_transaction_id FROM subscriptions WHERE account_id = \(from)
            UNION SELECT id FROM entitlement_sources WHERE account_id = \(from) AND kind = 'purchase'
            """, logger: logger
        ).decode(String.self) { held.append(id) }
        counts.subscriptions = try await count(connection, "UPDATE subscriptions SET account_id = \(to) WHERE account_id = \(from)")
        counts.signedFactsRewritten = try await rewriteSignedFacts(of: held, from: account, to: pseudonym, on: connection)
        counts.claims = try await count(
            connection,
            """
            UPDATE subscription_events SET account_id = CASE WHEN account_id = \(from) THEN \(to) ELSE account_id END,
                event_id = replace(event_id, \(from), \(to)),
                decoded = replace(replace(decoded::text, \(from), \(to)), upper(\(from)), \(to))::jsonb, signed_data = ''
            WHERE account_id = \(from) OR (original_transaction_id = ANY(\(held)) AND strpos(upper(decoded::text), upper(\(from))) > 0)
            """)
        _ = try await count(connection, "UPDATE subscription_archive SET account_id = \(to) WHERE account_id = \(from)")
        _ = try await count(
            connection,
            """
            UPDATE account_transfers SET from_account = CASE WHEN from_account = \(from) THEN \(to) ELSE from_account END,
                to_account = CASE WHEN to_account = \(from) THEN \(to) ELSE to_account END
            WHERE from_account = \(from) OR to_account = \(from)
            """)
        counts.entitlementSources = try await count(
            connection,
            """
            UPDATE entitlement_sources SET account_id = \(to), reason = CASE WHEN reason IS NULL THEN NULL ELSE '(erased)' END
            WHERE account_id = \(from)
            """)
        // Bucket keys name their account (topup:<account>:<meter>…): new keys, the ledger moved onto them, the old
        // ones dropped. Spend keys hold the app's idempotency keys, which are the app's words: hashed.
        counts.creditBuckets = try await count(
            connection, "UPDATE credit_buckets SET account_id = \(to) WHERE account_id = \(from) AND strpos(key, \(from)) = 0")
        counts.creditBuckets += try await count(
            connection,
            """
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until, price)
            SELECT replace(key, \(from), \(to)), meter, kind, original_transaction_id, billing_period, \(to), valid_from, valid_until, price
            FROM credit_buckets WHERE account_id = \(from) AND strpos(key, \(from)) > 0
            """)
        counts.ledgerEntries = try await count(
            connection,
            """
            UPDATE credit_ledger SET bucket = replace(bucket, \(from), \(to)),
                operation_key = CASE WHEN operation_key LIKE 'spend:%' THEN 'spend:' || \(to) || ':' || md5(operation_key)
                                     ELSE replace(operation_key, \(from), \(to)) END
            WHERE strpos(bucket, \(from)) > 0 OR strpos(operation_key, \(from)) > 0
            """)
        _ = try await count(connection, "DELETE FROM credit_buckets WHERE account_id = \(from)")
        counts.usageRequestsDeleted = try await count(connection, "DELETE FROM usage_requests WHERE account_id = \(from)")
        counts.purchaseTokensDeleted = try await count(connection, "DELETE FROM purchase_intents WHERE account_id = \(from)")
        counts.consentDeleted = try await count(connection, "DELETE FROM consumption_consents WHERE account_id = \(from)")
        counts.refundRequests = try await count(
            connection, "UPDATE refund_requests SET account_id = \(to), app_answer = NULL WHERE account_id = \(from)")
        counts.offerSignatures = try await count(connection, "UPDATE offer_signatures SET account_id = \(to) WHERE account_id = \(from)")
        counts.stripeLinks = try await count(connection, "UPDATE stripe_links SET account_id = \(to) WHERE account_id = \(from)")
        // Stripe's objects carry the customer's contact details and the app's metadata: both go; amounts stay. Those of
        // a one-time payment belong to no subscription: they are found by the id their session carries.
        counts.stripeObjects = try await count(
            connection,
            """
            UPDATE stripe_objects SET body = (replace(body::text, \(from), \(to))::jsonb
                - 'customer_email' - 'customer_name' - 'customer_phone' - 'customer_address' - 'customer_shipping'
                - 'customer_details' - 'billing_details' - 'receipt_email' - 'shipping' - 'shipping_details') || '{"metadata": {}}'::jsonb
            WHERE subscription_id IN (SELECT subscription_id FROM stripe_links WHERE account_id = \(to)) OR strpos(body::text, \(from)) > 0
            """)
        // Events were the app's to keep: its receivers have them. Their deliveries go with them.
        counts.eventsDeleted = try await count(connection, "DELETE FROM events WHERE account_id = \(from)")
        counts.renewalExtensions = try await count(connection, "UPDATE renewal_extensions SET account_id = \(to) WHERE account_id = \(from)")
        // Job arguments name accounts as the payloads did, a UUID sometimes in capitals.
        counts.jobs = try await count(
            connection,
            """
            UPDATE jobs SET args = replace(replace(args::text, \(from), \(to)), upper(\(from)), \(to))::jsonb,
                errors = replace(replace(errors::text, \(from), \(to)), upper(\(from)), \(to))::jsonb,
                unique_key = replace(replace(unique_key, \(from), \(to)), upper(\(from)), \(to)),
                concurrency_key = replace(replace(concurrency_key, \(from), \(to)), upper(\(from)), \(to))
            WHERE strpos(upper(jobs::text), upper(\(from))) > 0
            """)
        counts.jobs += try await count(
            connection,
            """
            UPDATE job_history SET args = replace(replace(args::text, \(from), \(to)), upper(\(from)), \(to))::jsonb,
                errors = replace(replace(errors::text, \(from), \(to)), upper(\(from)), \(to))::jsonb,
                unique_key = replace(replace(unique_key, \(from), \(to)), upper(\(from)), \(to))
            WHERE strpos(upper(job_history::text), upper(\(from))) > 0
            """)
        // The audit log's entries about the account: the pseudonym for the id, the operators' words about the customer
        // (a reason) gone; who did what and when stays (sql/0030).
        try await connection.query("SET LOCAL storekeeper.erasing = 'on'", logger: logger)
        counts.auditEntries = try await count(
            connection,
            """
            UPDATE operator_actions SET account_id = CASE WHEN account_id = \(from) THEN \(to) ELSE account_id END,
                target = replace(target, \(from), \(to)),
                before = CASE WHEN before IS NULL THEN NULL ELSE
                    (SELECT CASE WHEN b ? 'reason' THEN jsonb_set(b, '{reason}', '"(erased)"') ELSE b END
                     FROM (SELECT replace(before::text, \(from), \(to))::jsonb AS b) AS scrubbed) END,
                after = CASE WHEN after IS NULL THEN NULL ELSE
                    (SELECT CASE WHEN a ? 'reason' THEN jsonb_set(a, '{reason}', '"(erased)"') ELSE a END
                     FROM (SELECT replace(after::text, \(from), \(to))::jsonb AS a) AS scrubbed) END
            WHERE account_id = \(from) OR strpos(target, \(from)) > 0 OR strpos(before::text, \(from)) > 0 OR strpos(after::text, \(from)) > 0
            """)
        try await connection.query("SET LOCAL storekeeper.erasing = 'off'", logger: logger)
        return counts
    }

    /// Each stored notification of `held` that names the account: its facts kept with the pseudonym as the token,
    /// its signed form (which cannot be edited without breaking Apple's signature) dropped.
    public func rewriteSignedFacts(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws -> Int {
        guard !held.isEmpty else { return 0 }
        var rewritten: [(UUID, String)] = []
        for try await (uuid, decoded, parts) in try await connection.query(
            """
            SELECT notification_uuid, decoded::text, signed_parts FROM notifications WHERE original_transaction_id = ANY(\(held))
            """, logger: logger
        ).decode((UUID, String?, ByteBuffer?).self) {
            guard var facts = try StoredNotificationFacts.notification(decoded: decoded, parts: parts) else { continue }
            let names = { (token: String?) in token?.lowercased() == account.text.lowercased() }
            guard names(facts.transaction?.appAccountToken) || names(facts.renewalInfo?.appAccountToken) else { continue }
            if names(facts.transaction?.appAccountToken) { facts.transaction?.appAccountToken = pseudonym.text }
            if names(facts.renewalInfo?.appAccountToken) { facts.renewalInfo?.appAccountToken = pseudonym.text }
            rewritten.append((uuid, try StoredNotificationFacts.decodedText(of: facts)))
        }
        for (uuid, text) in rewritten {
            try await connection.query(
                """
                UPDATE notifications SET decoded = \(text)::jsonb, signed_parts = NULL, signed_payload = NULL WHERE notification_uuid = \(uuid)
                """, logger: logger)
        }
        return rewritten.count
    }

    /// Runs a data-changing statement and answers how many rows it changed.
    private func count(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> Int {
        let counted = PostgresQuery(unsafeSQL: "WITH changed AS (\(query.sql) RETURNING 1) SELECT count(*)::bigint FROM changed", binds: query.binds)
        for try await count in try await connection.query(counted, logger: logger).decode(Int.self) { return count }
        return 0
    }
}
