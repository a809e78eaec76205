import Analytics
import Entitlements
import Foundation
import Logging
import PostgresNIO

/// The analytics rollups: each subscription's contribution, the differences appended as it changes, and the daily
/// sums they are folded into (`sql/0026_analytics.sql`).
public struct AnalyticsRollups: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Replaces `subscription`'s contribution with `contribution`, appending the difference from the stored one —
    /// nothing, and no write, when they are the same, as they are whenever the same facts are derived again. One call
    /// of `analytics_record` (sql/0026: the difference is taken in PostgreSQL), on the caller's transaction, which holds
    /// the subscription's lock.
    public func record(_ contribution: AnalyticsContribution, ofSubscription subscription: String, on connection: PostgresConnection) async throws {
        let columns = Columns(contribution)
        try await connection.query(
            """
            SELECT analytics_record(\(subscription), \(columns.days)::integer[], \(columns.measures)::text[], \(columns.stores)::text[],
                                    \(columns.environments)::text[], \(columns.products)::text[], \(columns.currencies)::text[],
                                    \(columns.amounts)::bigint[])
            """, logger: logger)
    }

    /// A contribution as the seven arrays `analytics_record` takes, in one order whatever the dictionary's.
    struct Columns {
        var days: [Int32] = []
        var measures: [String] = []
        var stores: [String] = []
        var environments: [String] = []
        var products: [String] = []
        var currencies: [String] = []
        var amounts: [Int64] = []

        init(_ contribution: AnalyticsContribution) {
            for (key, value) in contribution.values.sorted(by: {
                AnalyticsRollups.row($0.key).lexicographicallyPrecedes(AnalyticsRollups.row($1.key))
            }) {
                days.append(key.day.number)
                measures.append(key.measure.rawValue)
                stores.append(key.store.text)
                environments.append(key.environment?.rawValue ?? "")
                products.append(key.product)
                currencies.append(key.currency)
                amounts.append(value)
            }
        }
    }

    /// Appends `values` to the differences not yet folded in.
    public func append(_ values: AnalyticsContribution, on connection: PostgresConnection) async throws {
        let entries = values.values.sorted { Self.row($0.key).lexicographicallyPrecedes(Self.row($1.key)) }
        guard !entries.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO analytics_deltas (day, measure, store, environment, product, currency, value)
            SELECT * FROM unnest(\(entries.map { $0.key.day.number })::integer[], \(entries.map { $0.key.measure.rawValue })::text[],
                                 \(entries.map { $0.key.store.text })::text[], \(entries.map { $0.key.environment?.rawValue ?? "" })::text[],
                                 \(entries.map { $0.key.product })::text[], \(entries.map { $0.key.currency })::text[],
                                 \(entries.map(\.value))::bigint[])
            """, logger: logger)
    }

    /// Folds up to `limit` of the differences appended so far into the daily sums; returns how many it folded.
    /// Differences appended by transactions still open are not visible to it and wait for the next time. Folding adds,
    /// so folding in parts sums the same as at once.
    public func compact(limit: Int = 100_000, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            WITH moved AS (
                DELETE FROM analytics_deltas WHERE ctid = ANY(ARRAY(SELECT ctid FROM analytics_deltas LIMIT \(limit)))
                RETURNING day, measure, store, environment, product, currency, value),
            summed AS (
                SELECT environment, measure, day, store, product, currency, sum(value)::bigint AS value, count(*) AS rows
                FROM moved GROUP BY environment, measure, day, store, product, currency),
            folded AS (
                INSERT INTO analytics_daily AS daily (environment, measure, day, store, product, currency, value)
                SELECT environment, measure, day, store, product, currency, value FROM summed
                ON CONFLICT (environment, measure, day, store, product, currency) DO UPDATE SET value = daily.value + excluded.value)
            SELECT coalesce(sum(rows), 0)::bigint FROM summed
            """, logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// What a chart of `measures` reads: for level measures the sum of every day before `from`, and each measure's sum
    /// per day from `from` to `to`, in `environment`, for one store and one product (a tier, for credits) or all.
    /// Money and credits keep their currency (meter) and credits their tier. Credits belong to no store or
    /// environment (an account's credits may come from several): they are in every environment's and store's charts.
    public func sums(
        _ measures: [AnalyticsMeasure], from: AnalyticsDay, to: AnalyticsDay, environment: StoreEnvironment.Rollup, store: String?, product: String?,
        on connection: PostgresConnection
    ) async throws -> AnalyticsSums {
        let names = measures.map(\.rawValue)
        let levels = measures.filter(\.isLevel).map(\.rawValue)
        let usage = [AnalyticsMeasure.creditsSpent.rawValue, AnalyticsMeasure.creditsGranted.rawValue]
        let rows = try await connection.query(
            """
            SELECT measure, currency, CASE WHEN measure = ANY(\(usage)::text[]) THEN product ELSE '' END,
                   CASE WHEN day < \(from.number) THEN NULL ELSE day END, sum(value)::bigint
            FROM (SELECT environment, measure, day, store, product, currency, value FROM analytics_daily
                  UNION ALL
                  SELECT environment, measure, day, store, product, currency, value FROM analytics_deltas) AS facts
            WHERE environment IN (\(environment.rawValue), '') AND measure = ANY(\(names)::text[]) AND day <= \(to.number)
              AND (day >= \(from.number) OR measure = ANY(\(levels)::text[]))
              AND (\(store)::text IS NULL OR store IN (\(store), '')) AND (\(product)::text IS NULL OR product = \(product))
            GROUP BY 1, 2, 3, 4
            """, logger: logger)
        var sums = AnalyticsSums()
        for try await (measure, currency, tier, day, value) in rows.decode((String, String, String, Int32?, Int64).self) {
            guard let measure = AnalyticsMeasure(rawValue: measure) else { continue }
            let key = AnalyticsSeriesKey(measure: measure, currency: currency, tier: tier)
            if let day { sums.days[key, default: [:]][AnalyticsDay(number: day)] = value } else { sums.before[key, default: 0] += value }
        }
        return sums
    }

    /// An entry's key as text, for a stable order.
    static func row(_ key: AnalyticsKey) -> [String] {
        [String(key.day.number), key.measure.rawValue, key.store.text, key.environment?.rawValue ?? "", key.product, key.currency]
    }
}
