import AppStoreModels
import Credits
import Crypto
import Entitlements
import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// Erasure of an account's personal data (`sql/0029`, `sql/0031`): its id replaced by a pseudonym wherever accounting
/// needs the row, the rest deleted, and a keyed digest of the id kept so facts Apple signs later with the old id land
/// under the pseudonym. Every statement runs on the caller's transaction, which holds the account's lock.
///
/// Rows are found **exactly**: by account columns, by the parsed parts of keys that embed an id (a bucket key
/// `<kind>:<account>:…` of a bucket whose account column is the id; a spend's or adjustment's operation key
/// `spend|adjust:<bytes>:<account>:…`), and by JSON values equal to the id — never by a substring of a whole text, which
/// rewrote `x2`'s rows when `x` was erased.
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
        public var retentionDecisions = 0
        public var consentRescissions = 0
        public var stripeLinks = 0
        public var stripeObjects = 0
        public var googleClaims = 0
        public var googleReads = 0
        public var eventsDeleted = 0
        /// Other accounts' transfer events that named it (``rewriteTransferEvents(of:from:to:on:)``).
        public var eventsRewritten = 0
        public var renewalExtensions = 0
        public var jobs = 0
        public var auditEntries = 0

        public init() {}
    }

    /// The deployment's secret (`STOREKEEPER_ERASURE_KEY`) that keys the digests; `nil`: erasure is not configured,
    /// and only erasures filed before keys (plain SHA-256) are recognised.
    let key: SymmetricKey?
    let logger: Logger

    /// - Parameter secret: `STOREKEEPER_ERASURE_KEY`; `nil` when it is not set.
    public init(secret: String?, logger: Logger) {
        self.key = secret.map { SymmetricKey(data: Data($0.utf8)) }
        self.logger = logger
    }

    /// Whether erasures can be filed: a deployment key is configured.
    public var isConfigured: Bool { key != nil }

    /// The digest an erasure files `account` under: hex HMAC-SHA256 with the deployment's key, which a reader of the
    /// log or the database cannot recompute for a guessed id; `nil` without a key.
    public func digest(of account: AccountID) -> String? {
        key.map { Self.hex(HMAC<SHA256>.authenticationCode(for: Data(account.text.utf8), using: $0)) }
    }

    /// Every digest an erased id may be filed under: the keyed one, and the plain SHA-256 that erasures before keys used.
    public func digests(of account: AccountID) -> [String] {
        [digest(of: account), Self.hex(SHA256.hash(data: Data(account.text.utf8)))].compactMap { $0 }
    }

    /// Lower-case hex; asked on every first apply of a subscription, where `String(format:)` per byte showed in profiles.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The pseudonym of `account` when it was erased.
    public func pseudonym(of account: AccountID, on connection: PostgresConnection) async throws -> AccountID? {
        try await connection.run(PreparedQuery<Pseudonym>(digests(of: account)), logger: logger).first?.decode(AccountID.self)
    }

    /// The pseudonym filed under any of the digests `$1`; asked on the apply path (a top-up, a purchase, an owner changing hands), so prepared.
    enum Pseudonym: PreparedSQL {
        static let sql = "SELECT pseudonym FROM erased_accounts WHERE account_digest = ANY($1::text[])"
    }

    /// Whether any row names `account` in a column that says whose it is: what an erasure would move or delete.
    public func holdsAnything(_ account: AccountID, on connection: PostgresConnection) async throws -> Bool {
        let id = account.text
        let rows = try await connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM subscriptions WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM subscription_events WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM subscription_archive WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM account_transfers WHERE from_account = \(id) OR to_account = \(id))
                OR EXISTS (SELECT 1 FROM entitlement_sources WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM credit_buckets WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM usage_requests WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM credit_holds WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM account_last_spends WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM purchase_intents WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM consumption_consents WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM refund_requests WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM offer_signatures WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM retention_decisions WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM stripe_links WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM google_purchase_claims WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM google_subscriptions WHERE account_token = \(id))
                OR EXISTS (SELECT 1 FROM google_products WHERE account_token = \(id) OR purchased_account_token = \(id))
                OR EXISTS (SELECT 1 FROM events WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM renewal_extensions WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM consent_rescissions WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM operator_actions WHERE account_id = \(id))
                OR EXISTS (SELECT 1 FROM stripe_objects WHERE object = 'checkout.session' AND body->>'client_reference_id' = \(id))
                OR EXISTS (SELECT 1 FROM stripe_objects WHERE object IN ('checkout.session', 'subscription')
                           AND body->'metadata'->>'storekeeper_account_id' = \(id))
            """, logger: logger)
        for try await held in rows.decode(Bool.self) { return held }
        return false
    }

    /// Files the erasure of `account` under `pseudonym` (the one it was filed under before, when it was erased
    /// already): its tombstone, once per id, and the erasure itself, whose row lets this transaction rewrite the audit
    /// log (`sql/0031`). Both tables are append-only. Needs a key.
    public func file(_ account: AccountID, pseudonym: AccountID, by operatorName: String, at now: Date, on connection: PostgresConnection)
        async throws
    {
        guard let digest = digest(of: account), let fingerprint = keyFingerprint else {
            throw PersistenceError(.notConfigured, "STOREKEEPER_ERASURE_KEY is not set")
        }
        // The first erasure records the key's fingerprint (sql/0067), which every process then checks at start.
        try await connection.query(
            """
            WITH key AS (
                INSERT INTO erasure_key_fingerprint (fingerprint, recorded_at) VALUES (\(fingerprint), \(now)) ON CONFLICT DO NOTHING
            ), tombstone AS (
                INSERT INTO erased_accounts (account_digest, pseudonym, erased_at, erased_by)
                VALUES (\(digest), \(pseudonym), \(now), \(operatorName)) ON CONFLICT DO NOTHING
            )
            INSERT INTO erasures (pseudonym, erased_at, erased_by) VALUES (\(pseudonym), \(now), \(operatorName))
            """, logger: logger)
    }

    /// Tells every process to drop what it cached about `account` (sql/0012's channel), when the transaction commits.
    public func announceChange(of account: AccountID, on connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_notify('storekeeper_account_changed', \(account.text))", logger: logger)
    }

    /// Moves every row of `account` to `pseudonym`, deleting what only the account's own use needed. The tombstone
    /// must have been filed in this transaction (the audit log checks it).
    public func erase(_ account: AccountID, as pseudonym: AccountID, on connection: PostgresConnection) async throws -> Counts {
        var counts = Counts()
        let (from, to) = (account.text, pseudonym.text)
        // The subscriptions and one-time purchases it holds, and those it held before a transfer (its spends of their
        // credits name it).
        var held: [String] = []
        for try await id in try await connection.query(
            """
            SELECT original_transaction_id FROM subscriptions WHERE account_id = \(from)
            UNION SELECT original_transaction_id FROM account_transfers WHERE from_account = \(from)
            UNION SELECT id FROM entitlement_sources WHERE account_id = \(from) AND kind = 'purchase'
            """, logger: logger
        ).decode(String.self) { held.append(id) }
        counts.subscriptions = try await count(connection, "UPDATE subscriptions SET account_id = \(to) WHERE account_id = \(from)")
        counts.signedFactsRewritten = try await rewriteSignedFacts(of: held, from: account, to: pseudonym, on: connection)
        counts.claims = try await rewriteClaims(of: held, from: account, to: pseudonym, on: connection)
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
        (counts.creditBuckets, counts.ledgerEntries) = try await moveCredits(held: held, from: account, to: pseudonym, on: connection)
        counts.usageRequestsDeleted = try await count(connection, "DELETE FROM usage_requests WHERE account_id = \(from)")
        // Holds keep their ledger rows (moved with the buckets) and their expiry; the app's keys may say who it was.
        _ = try await count(
            connection,
            // The buckets a hold took from are named by the account too (`topup:<account>:…`), renamed with the buckets
            // above: so are they in its debits, or its end would find them gone.
            """
            UPDATE credit_holds SET account_id = \(to), idempotency_key = 'erased:' || id::text,
                debits = (SELECT coalesce(jsonb_agg(CASE WHEN starts_with(d->>'bucket', split_part(d->>'bucket', ':', 1) || ':' || \(from) || ':')
                    THEN jsonb_set(d, '{bucket}', to_jsonb(split_part(d->>'bucket', ':', 1) || ':' || \(to) || ':'
                        || substr(d->>'bucket', char_length(split_part(d->>'bucket', ':', 1) || ':' || \(from) || ':') + 1)))
                    ELSE d END ORDER BY n), '[]'::jsonb) FROM jsonb_array_elements(debits) WITH ORDINALITY AS e(d, n))
            WHERE account_id = \(from)
            """)
        // When it last spent, kept for the retention rules after its answers went (sql/0049): gone with its answers —
        // after them and its holds, the order the idempotency window's job writes these tables in.
        _ = try await count(connection, "DELETE FROM account_last_spends WHERE account_id = \(from)")
        counts.purchaseTokensDeleted = try await count(connection, "DELETE FROM purchase_intents WHERE account_id = \(from)")
        counts.consentDeleted = try await count(connection, "DELETE FROM consumption_consents WHERE account_id = \(from)")
        counts.refundRequests = try await count(
            connection, "UPDATE refund_requests SET account_id = \(to), app_answer = NULL WHERE account_id = \(from)")
        counts.offerSignatures = try await count(connection, "UPDATE offer_signatures SET account_id = \(to) WHERE account_id = \(from)")
        counts.retentionDecisions = try await count(connection, "UPDATE retention_decisions SET account_id = \(to) WHERE account_id = \(from)")
        counts.consentRescissions = try await count(connection, "UPDATE consent_rescissions SET account_id = \(to) WHERE account_id = \(from)")
        counts.stripeLinks = try await count(connection, "UPDATE stripe_links SET account_id = \(to) WHERE account_id = \(from)")
        counts.stripeObjects = try await scrubStripeObjects(of: held, from: account, to: pseudonym, on: connection)
        (counts.googleClaims, counts.googleReads) = try await moveGooglePlay(held: held, from: account, to: pseudonym, on: connection)
        // Events were the app's to keep: its receivers have them. Their deliveries go with them.
        counts.eventsDeleted = try await count(connection, "DELETE FROM events WHERE account_id = \(from)")
        counts.eventsRewritten = try await rewriteTransferEvents(of: held, from: account, to: pseudonym, on: connection)
        counts.renewalExtensions = try await count(connection, "UPDATE renewal_extensions SET account_id = \(to) WHERE account_id = \(from)")
        counts.jobs = try await moveJobs(from: account, to: pseudonym, on: connection)
        // The audit log's entries about the account, through the one function the log lets change it (sql/0031).
        for try await changed in try await connection.query("SELECT erase_operator_actions(\(from), \(to))", logger: logger).decode(Int.self) {
            counts.auditEntries = changed
        }
        return counts
    }

    /// Each stored notification of `held` that names the account: its facts kept with the pseudonym as the token,
    /// its signed form (which cannot be edited without breaking Apple's signature) dropped. A token names the account
    /// as an ``AccountID`` does (a UUID whatever its case; any other id exactly).
    public func rewriteSignedFacts(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection)
        async throws -> Int
    {
        guard !held.isEmpty else { return 0 }
        var rewritten: [(UUID, String)] = []
        for try await (uuid, decoded, parts) in try await connection.query(
            """
            SELECT notification_uuid, decoded::text, signed_parts FROM notifications WHERE original_transaction_id = ANY(\(held))
            """, logger: logger
        ).decode((UUID, String?, ByteBuffer?).self) {
            guard var facts = try StoredNotificationFacts.notification(decoded: decoded, parts: parts) else { continue }
            let names = { (token: String?) in token.flatMap(AccountID.init) == account }
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

    /// Claims the account posted and server snapshots of its subscriptions that carry its token: the claimant, the
    /// token and a claim's id (`client:<transaction>:<signedDate>:<account>`) name the pseudonym; the signed data goes.
    func rewriteClaims(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws -> Int {
        var rewritten: [(old: String, event: SubscriptionEvent)] = []
        for try await (id, decoded) in try await connection.query(
            """
            SELECT event_id, decoded::text FROM subscription_events WHERE account_id = \(account.text) OR original_transaction_id = ANY(\(held))
            """, logger: logger
        ).decode((String, String).self) {
            var event = try JSONDecoder().decode(SubscriptionEvent.self, from: Data(decoded.utf8))
            let names = { (token: String?) in token.flatMap(AccountID.init) == account }
            guard event.claimant == account || names(event.transaction.appAccountToken) || names(event.renewalInfo?.appAccountToken) else { continue }
            if event.claimant == account {
                event.claimant = pseudonym
                let suffix = ":" + account.text
                if event.id.hasPrefix("client:"), event.id.hasSuffix(suffix) {
                    event.id = String(event.id.dropLast(suffix.count)) + ":" + pseudonym.text
                }
            }
            if names(event.transaction.appAccountToken) { event.transaction.appAccountToken = pseudonym.text }
            if names(event.renewalInfo?.appAccountToken) { event.renewalInfo?.appAccountToken = pseudonym.text }
            rewritten.append((id, event))
        }
        for (old, event) in rewritten {
            let decoded = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
            try await connection.query(
                """
                UPDATE subscription_events SET event_id = \(event.id), account_id = \(event.claimant?.text), decoded = \(decoded)::jsonb, signed_data = ''
                WHERE event_id = \(old)
                """, logger: logger)
        }
        return rewritten.count
    }

    /// Jobs whose arguments name the account (`account`: webhook deliveries; `accountTokens`: an apply's tokens, UUIDs
    /// as Swift encodes them, in capitals) or whose keys are its own (`account:<account>` runs a grant's end after its
    /// account's other work): the pseudonym in the same places.
    func moveJobs(from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws -> Int {
        let (from, to) = (account.text, pseudonym.text)
        var moved = 0
        if UUID(text: from) != nil {
            let (token, replacement) = (from.uppercased(), to.uppercased())
            for table in ["jobs", "job_history"] {
                moved += try await count(
                    connection,
                    PostgresQuery(
                        unsafeSQL: """
                            UPDATE \(table) SET args = jsonb_set(args, '{accountTokens}', (
                                SELECT jsonb_agg(CASE WHEN t = to_jsonb($1::text) THEN to_jsonb($2::text) ELSE t END ORDER BY i)
                                FROM jsonb_array_elements(args->'accountTokens') WITH ORDINALITY AS a(t, i)))
                            WHERE jsonb_typeof(args->'accountTokens') = 'array' AND args->'accountTokens' ? $1
                            """, binds: try Self.binds(token, replacement)))
            }
        }
        moved += try await count(
            connection,
            """
            UPDATE jobs SET
                args = CASE WHEN args->>'account' = \(from) THEN jsonb_set(args, '{account}', to_jsonb(\(to)::text)) ELSE args END,
                unique_key = CASE WHEN args->>'account' = \(from) AND unique_key = 'webhook-retry:' || (args->>'endpoint') || ':' || \(from)
                                  THEN 'webhook-retry:' || (args->>'endpoint') || ':' || \(to) ELSE unique_key END,
                concurrency_key = CASE WHEN concurrency_key = 'account:' || \(from) THEN 'account:' || \(to)
                                       WHEN args->>'account' = \(from) AND concurrency_key = 'webhook:' || (args->>'endpoint') || ':' || \(from)
                                       THEN 'webhook:' || (args->>'endpoint') || ':' || \(to) ELSE concurrency_key END
            WHERE args->>'account' = \(from) OR concurrency_key = 'account:' || \(from)
            """)
        moved += try await count(
            connection,
            """
            UPDATE job_history SET args = jsonb_set(args, '{account}', to_jsonb(\(to)::text)),
                unique_key = CASE WHEN unique_key = 'webhook-retry:' || (args->>'endpoint') || ':' || \(from)
                                  THEN 'webhook-retry:' || (args->>'endpoint') || ':' || \(to) ELSE unique_key END
            WHERE args->>'account' = \(from)
            """)
        return moved
    }

    private static func binds(_ values: String...) throws -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values { binds.append(value) }
        return binds
    }

    /// Runs a data-changing statement and answers how many rows it changed.
    func count(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> Int {
        let counted = PostgresQuery(unsafeSQL: "WITH changed AS (\(query.sql) RETURNING 1) SELECT count(*)::bigint FROM changed", binds: query.binds)
        for try await count in try await connection.query(counted, logger: logger).decode(Int.self) { return count }
        return 0
    }
}

extension ErasedAccounts {
    /// The account's Play claims, and the reads that name it as `obfuscatedExternalAccountId` (the app passed its own
    /// id) with what was derived from them, under the pseudonym. Only the reads of the chains it holds or named are
    /// decoded: the others cannot name it. A UUID id is matched in any case, as the app may have sent it
    /// (`account_named`, sql/0073).
    public func moveGooglePlay(held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws
        -> (claims: Int, reads: Int)
    {
        let (from, to) = (account.text, pseudonym.text)
        let claims = try await count(connection, "UPDATE google_purchase_claims SET account_id = \(to) WHERE account_id = \(from)")
        let reads = try await count(
            connection,
            """
            WITH chains AS (
                SELECT unnest(tokens) AS token FROM google_subscriptions WHERE id = ANY(\(held)) OR account_named(account_token, \(from))
            )
            UPDATE google_subscription_reads r
            SET body = convert_to(
                jsonb_set(convert_from(r.body, 'UTF8')::jsonb, '{externalAccountIdentifiers,obfuscatedExternalAccountId}', to_jsonb(\(to)::text))::text,
                'UTF8')
            WHERE r.purchase_token IN (SELECT token FROM chains)
              AND account_named(convert_from(r.body, 'UTF8')::jsonb->'externalAccountIdentifiers'->>'obfuscatedExternalAccountId', \(from))
            """)
        _ = try await count(connection, "UPDATE google_subscriptions SET account_token = \(to) WHERE account_named(account_token, \(from))")
        // One-time products name the account at the top level of their read.
        let products = try await count(
            connection,
            """
            UPDATE google_products SET account_token = CASE WHEN account_named(account_token, \(from)) THEN \(to) ELSE account_token END,
                body = CASE WHEN account_named(account_token, \(from)) THEN convert_to(jsonb_set(
                    convert_from(body, 'UTF8')::jsonb, '{obfuscatedExternalAccountId}', to_jsonb(\(to)::text))::text, 'UTF8') ELSE body END,
                purchased_body = CASE WHEN account_named(purchased_account_token, \(from)) THEN convert_to(jsonb_set(
                    convert_from(purchased_body, 'UTF8')::jsonb, '{obfuscatedExternalAccountId}', to_jsonb(\(to)::text))::text, 'UTF8')
                    ELSE purchased_body END,
                purchased_account_token = CASE WHEN account_named(purchased_account_token, \(from)) THEN \(to) ELSE purchased_account_token END
            -- The newest read names the account, or the granted read does (the app's id changed between them).
            WHERE account_named(account_token, \(from)) OR account_named(purchased_account_token, \(from))
            """)
        return (claims, reads + products)
    }
}
