import Analytics
import Entitlements
import Foundation
import PostgresNIO

extension AnalyticsRollups {
    /// Where an account's credits came from, for the usage rollups: a kind of bucket and what names its tier.
    public struct UsageSource: Hashable, Sendable {
        /// `cycle`, `daily`, `free`, `topup` or `entitlement`.
        public var kind: String
        /// A product (cycle buckets, purchases), a tier (daily buckets, grants) or nothing.
        public var name: String
    }

    /// Rolls the credit ledger's rows up into `credits_spent` and `credits_granted` per day, meter and tier: every row
    /// after the last one rolled up, up to (not including) the first written at or after `cutoff`, so a row is
    /// counted once even when the transactions writing them commit out of order — as long as none commits more than
    /// `now - cutoff` after it began. `tier` names the tier of a source (``UsageSource``). At most `limit` ledger ids
    /// at a time, so a backlog (a first run over a year of ledger, after an upgrade or a bulk load) is rolled up in
    /// short transactions, not in one statement that holds back vacuum and every concurrent index build for its whole
    /// length (the upgrade drill saw 12–17 s at 100,000 subscribers). Returns the rows rolled up and whether rows
    /// before `cutoff` are left for another call.
    public func rollUpUsage(before cutoff: Date, limit: Int64 = 50_000, tier: (UsageSource) -> String, on connection: PostgresConnection)
        async throws -> (rows: Int, more: Bool)
    {
        try await connection.query(
            "INSERT INTO analytics_progress (name, position) VALUES ('credit_ledger', 0) ON CONFLICT (name) DO NOTHING", logger: logger)
        // Another run holding the position rolls the backlog up; this one does not queue behind it.
        var found: Int64?
        for try await position in try await connection.query(
            "SELECT position FROM analytics_progress WHERE name = 'credit_ledger' FOR UPDATE SKIP LOCKED", logger: logger
        ).decode(Int64.self) { found = position }
        guard let last = found else { return (0, false) }
        // Within the next `limit` ids only (a range of the primary key): the first row too young ends the batch, else
        // the batch ends at the limit or the newest row.
        var upTo = last
        var more = false
        for try await (young, newest) in try await connection.query(
            """
            SELECT (SELECT min(id) FROM credit_ledger WHERE id > \(last) AND id <= \(last + limit) AND created_at >= \(cutoff)),
                   (SELECT max(id) FROM credit_ledger)
            """, logger: logger
        ).decode((Int64?, Int64?).self) {
            if let young {
                upTo = young - 1
            } else if let newest {
                upTo = min(newest, last + limit)
                more = newest > upTo
            }
        }
        guard upTo > last else { return (0, false) }
        let rows = try await connection.query(
            """
            SELECT floor(extract(epoch FROM l.created_at) / 86400)::integer, b.meter, b.kind,
                   CASE b.kind WHEN 'daily' THEN regexp_replace(b.key, '^.*:', '')
                               WHEN 'entitlement' THEN coalesce(e.tier, e.product_id, '')
                               WHEN 'cycle' THEN coalesce(s.product_id, '') ELSE '' END,
                   coalesce(sum(-l.delta) FILTER (WHERE l.reason IN ('usage', 'usage reversed')), 0)::bigint,
                   coalesce(sum(l.delta) FILTER (WHERE l.operation_key LIKE 'grant:%' AND b.kind <> 'topup' AND l.delta > 0), 0)::bigint,
                   count(*)
            FROM (SELECT l.created_at, l.delta, l.reason, l.operation_key,
                         -- A spend given back counts under the bucket it was spent from, whatever bucket the credits went
                         -- back to (an upgrade's carry-over, a top-up): its use is undone where it was counted. A
                         -- scalar look-up by the unique key, so only these rows read the ledger again.
                         CASE WHEN l.reason = 'usage reversed' AND l.operation_key LIKE '%:reversed'
                              THEN coalesce((SELECT d.bucket FROM credit_ledger d
                                             WHERE d.operation_key = left(l.operation_key, -length(':reversed'))), l.bucket)
                              ELSE l.bucket END AS bucket
                  FROM credit_ledger l WHERE l.id > \(last) AND l.id <= \(upTo)) AS l
            JOIN credit_buckets b ON b.key = l.bucket
            LEFT JOIN subscriptions s ON b.kind = 'cycle' AND s.original_transaction_id = b.original_transaction_id
            LEFT JOIN entitlement_sources e ON b.kind = 'entitlement' AND e.id = b.billing_period
            GROUP BY 1, 2, 3, 4
            """, logger: logger)
        var usage = AnalyticsContribution()
        var counted = 0
        for try await (day, meter, kind, name, spent, granted, rows) in rows.decode((Int32, String, String, String, Int64, Int64, Int64).self) {
            let tier = tier(UsageSource(kind: kind, name: name))
            for (measure, value) in [(AnalyticsMeasure.creditsSpent, spent), (.creditsGranted, granted)] {
                usage.add(
                    value,
                    at: AnalyticsKey(
                        day: AnalyticsDay(number: day), measure: measure, store: .unknown(""), environment: nil, product: tier, currency: meter))
            }
            counted += Int(rows)
        }
        try await append(usage, on: connection)
        try await connection.query("UPDATE analytics_progress SET position = \(upTo) WHERE name = 'credit_ledger'", logger: logger)
        return (counted, more)
    }
}
