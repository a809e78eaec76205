import Credits
import Events
import Foundation
import PostgresNIO
import StatementFencing
import Subscriptions

extension CreditLedger {
    /// The ledger rows the credit rules of one subscription need: its cycle buckets, and — when it has an owner — the
    /// owner's live buckets (a prorated refund claws back from them), with every entry of those buckets, in one round
    /// trip (`credit_ledger_snapshot`, sql/0016_credit_ledger_snapshot.sql). A subscription's derivation reads it under
    /// the owner's lock, with its writes: ``snapshot(savingDerivation:now:on:)``.
    public func snapshot(ofSubscription originalTransactionId: String, account: AccountID?, now: Date, on connection: PostgresConnection)
        async throws -> LedgerSnapshot
    {
        let rows = try await connection.run(
            PreparedQuery<Snapshot>(nil as String?, originalTransactionId, account?.text, now), logger: logger)
        return try Self.snapshot(from: rows)
    }

    /// The account a top-up purchase was credited to, if it was.
    public func creditedAccount(ofTopUp transactionId: String, on connection: PostgresConnection) async throws -> AccountID? {
        let rows = try await connection.query(
            """
            SELECT b.account_id FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE l.operation_key = \("topup:" + transactionId)
            """,
            logger: logger)
        for try await account in rows.decode(AccountID?.self) { return account }
        return nil
    }

    /// Posts what the credit rules decided, in order, inside the caller's transaction, and reads the status inputs of
    /// `accounts` (``statusInputs(of:at:orLater:on:)`` with `orLater`; every one has an entry, empty for an account
    /// with nothing) at `now` as the posts leave them: one round trip
    /// (`post_credit_operations`, sql/0021 and sql/0022; the buckets and the ledger rows each in one statement since
    /// sql/0061, but where the list ends a window), none when there is neither anything to post nor to read.
    @discardableResult
    public func apply(
        _ operations: [LedgerOperation], readingStatusOf accounts: [AccountID] = [], at now: Date,
        on connection: PostgresConnection
    ) async throws -> [AccountID: StatusInputs] {
        try await post(operations, readingStatusOf: accounts, at: now, on: connection).statuses
    }

    /// What ``post(_:readingStatusOf:at:on:)`` did.
    public struct Posting: Sendable {
        /// The status inputs of the accounts asked for, as the posts leave them.
        public var statuses: [AccountID: StatusInputs]
        /// The operation keys of the rows written: a key posted already was skipped.
        public var posted: Set<String>
    }

    /// ``apply(_:readingStatusOf:at:on:)``, answering also which rows it wrote.
    public func post(
        _ operations: [LedgerOperation], readingStatusOf accounts: [AccountID] = [], at now: Date, on connection: PostgresConnection
    ) async throws -> Posting {
        guard !operations.isEmpty || !accounts.isEmpty else { return Posting(statuses: [:], posted: []) }
        let json = PostedOperation.json(of: operations)
        let rows = try await connection.run(
            PreparedQuery<PostOperations>(json, Set(accounts).map(\.text), now), logger: logger)
        var statusRows: [PostgresRow] = []
        var posted: Set<String> = []
        for row in rows {
            if let key = try row.makeRandomAccess()["posted_key"].decode(String?.self) {
                Self.countPosted(key)
                posted.insert(key)
            } else {
                statusRows.append(row)
            }
        }
        var statuses = try Self.statusInputs(from: statusRows)
        for account in accounts where statuses[account] == nil { statuses[account] = StatusInputs() }
        return Posting(statuses: statuses, posted: posted)
    }

    /// Posts the operations of `$1` (JSON, ``PostedOperation``) and reads the status inputs of accounts `$2` at `$3`:
    /// a row per posted operation key (`posted_key`), then ``AccountsStatusInputs``' columns.
    enum PostOperations: PreparedSQL {
        static let sql = """
            SELECT \(SubscriptionStore.columns(of: "subscription")), \(LiveBuckets.columns), \(EntitlementSources.columns(of: "source")),
                posted_key
            FROM post_credit_operations($1::jsonb, $2::text[], $3::timestamptz)
            ORDER BY (subscription).original_transaction_id, \(LiveBuckets.order)
            """
    }

    /// One operation as `post_credit_operations` reads it; times in microseconds since 2000-01-01 UTC, as PostgresNIO
    /// binds a `Date`. (`Encodable` as `JSONEncoder` with snake-case keys writes it: a test holds ``json(of:)`` to that.)
    struct PostedOperation: Encodable {
        var kind: String
        var bucket: String
        var operationKey: String?
        var delta: Int64?
        var reason: String?
        var meter: String?
        var bucketKind: String?
        var subscription: String?
        var billingPeriod: String?
        var account: String?
        var validFrom: Int64?
        var validUntil: Int64?
        var price: Int64?

        init(_ operation: LedgerOperation) {
            switch operation {
            case .post(let entry, let opening):
                self.init(kind: "post", bucket: entry.bucket)
                (operationKey, delta, reason) = (entry.operationKey, entry.delta, entry.reason)
                if let opening {
                    (bucket, meter, bucketKind, subscription) = (opening.key, opening.meter, opening.kind.text, opening.originalTransactionId)
                    (billingPeriod, account, price) = (opening.billingPeriod, opening.accountId?.text, opening.price)
                    (validFrom, validUntil) = (Self.microseconds(opening.validFrom), opening.validUntil.map(Self.microseconds))
                }
            case .setWindowEnd(let bucket, let end):
                self.init(kind: "window_end", bucket: bucket)
                validUntil = end.map(Self.microseconds)
            }
        }

        private init(kind: String, bucket: String) {
            self.kind = kind
            self.bucket = bucket
        }

        /// The operations as a JSON array of objects with snake-case keys, members that are `nil` left out, keys sorted
        /// (jsonb keeps no order; sorted, the bytes are `JSONEncoder`'s with `.sortedKeys`, which a test compares). Written
        /// by hand: `JSONEncoder` with its key conversion was 3.3 % of `work`'s samples applying first purchases.
        static func json(of operations: [LedgerOperation]) -> String {
            var writer = JSONWriter(capacity: 256 * operations.count + 2)
            writer.beginArray()
            for operation in operations {
                writer.element()
                PostedOperation(operation).write(to: &writer)
            }
            writer.endArray()
            return String(decoding: writer.bytes, as: UTF8.self)
        }

        /// Writes this operation as one object of ``json(of:)``.
        func write(to writer: inout JSONWriter) {
            writer.beginObject()
            if let account { writer.member("account", account) }
            if let billingPeriod { writer.member("billing_period", billingPeriod) }
            writer.member("bucket", bucket)
            if let bucketKind { writer.member("bucket_kind", bucketKind) }
            if let delta { writer.member("delta", delta) }
            writer.member("kind", kind)
            if let meter { writer.member("meter", meter) }
            if let operationKey { writer.member("operation_key", operationKey) }
            if let price { writer.member("price", price) }
            if let reason { writer.member("reason", reason) }
            if let subscription { writer.member("subscription", subscription) }
            if let validFrom { writer.member("valid_from", validFrom) }
            if let validUntil { writer.member("valid_until", validUntil) }
            writer.endObject()
        }

        static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

        static func microseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince(postgresEpoch) * 1_000_000) }
    }

    /// A bucket from the nine columns of `row` that start at `offset` (key, meter, kind, subscription, billing period,
    /// account, valid from, valid until, price).
    static func bucket(_ row: PostgresRow, at offset: Int = 0) throws -> CreditBucket {
        let cells = row.makeRandomAccess()
        return CreditBucket(
            key: try cells[offset].decode(String.self), meter: try cells[offset + 1].decode(String.self),
            kind: CreditBucket.Kind(try cells[offset + 2].decode(String.self)),
            originalTransactionId: try cells[offset + 3].decode(String?.self), billingPeriod: try cells[offset + 4].decode(String?.self),
            accountId: try cells[offset + 5].decode(AccountID?.self), validFrom: try cells[offset + 6].decode(Date.self).wholeMilliseconds,
            validUntil: try cells[offset + 7].decode(Date?.self)?.wholeMilliseconds, price: try cells[offset + 8].decode(Int64?.self))
    }

    /// Takes lock `$1` unless NULL, then reads the buckets of subscription `$2` and the buckets of account `$3` live at
    /// `$4`, with their ledger entries, ordered by bucket.
    enum Snapshot: PreparedSQL {
        static let columns = """
            bucket_key, bucket_meter, bucket_kind, bucket_subscription, bucket_billing_period, bucket_account,
                bucket_valid_from, bucket_valid_until, bucket_price, entry_operation_key, entry_delta, entry_reason
            """
        static let sql = "SELECT \(columns) FROM credit_ledger_snapshot($1::text, $2::text, $3::text, $4::timestamptz)"
    }
}

extension CreditLedger {
    /// Every bucket a grant or one-time purchase opened (`billing_period` = its id), live or closed, with their
    /// entries: what ``SourceCredits/operationsDue(_:account:catalogue:ledger:now:)`` reads.
    public func snapshot(ofSource id: String, on connection: PostgresConnection) async throws -> LedgerSnapshot {
        let rows = try await connection.run(PreparedQuery<SourceSnapshot>(id), logger: logger)
        return try Self.snapshot(from: rows)
    }

    /// A snapshot from rows of ``Snapshot``'s columns: one per bucket and entry, by bucket.
    static func snapshot(from rows: [PostgresRow]) throws -> LedgerSnapshot {
        var buckets: [CreditBucket] = []
        var entries: [LedgerEntry] = []
        // A statement that writes before it reads (``snapshot(savingDerivation:on:)``) answers one row of NULLs when
        // there is nothing to read.
        for row in rows where try row.makeRandomAccess()[0].decode(String?.self) != nil {
            let bucket = try bucket(row)
            if buckets.last?.key != bucket.key { buckets.append(bucket) }
            let columns = row.makeRandomAccess()
            guard let operationKey = try columns[9].decode(String?.self) else { continue }
            entries.append(
                LedgerEntry(
                    operationKey: operationKey, bucket: bucket.key, delta: try columns[10].decode(Int64.self),
                    reason: try columns[11].decode(String.self)))
        }
        return LedgerSnapshot(buckets: buckets, entries: entries)
    }

    /// The buckets of source `$1` with their entries, in ``Snapshot``'s columns.
    enum SourceSnapshot: PreparedSQL {
        static let sql = """
            SELECT b.key, b.meter, b.kind, b.original_transaction_id, b.billing_period, b.account_id, b.valid_from, b.valid_until,
                b.price, l.operation_key, l.delta, l.reason
            FROM credit_buckets b LEFT JOIN credit_ledger l ON l.bucket = b.key
            WHERE b.billing_period = $1 AND b.kind = 'entitlement'
            ORDER BY b.key, l.id
            """
    }
}
