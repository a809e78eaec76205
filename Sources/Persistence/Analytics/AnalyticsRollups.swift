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

    /// Replaces `subscription`'s contribution with `contribution`, appending the difference — nothing when it is the
    /// same, as it is whenever the same facts are derived again. On the caller's transaction, which holds the
    /// subscription's lock.
    public func record(_ contribution: AnalyticsContribution, ofSubscription subscription: String, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            "SELECT entries::text FROM analytics_contributions WHERE subscription_id = \(subscription)", logger: logger)
        var old = AnalyticsContribution()
        for try await (text) in rows.decode(String.self) { old = Self.contribution(json: text) }
        let difference = contribution.difference(from: old)
        guard !difference.isEmpty else { return }
        try await append(difference, on: connection)
        try await connection.query(
            """
            INSERT INTO analytics_contributions (subscription_id, entries) VALUES (\(subscription), \(Self.json(contribution))::jsonb)
            ON CONFLICT (subscription_id) DO UPDATE SET entries = excluded.entries
            """, logger: logger)
    }

    /// Appends `values` to the differences not yet folded in.
    public func append(_ values: AnalyticsContribution, on connection: PostgresConnection) async throws {
        let entries = values.values.sorted { Self.row($0.key).lexicographicallyPrecedes(Self.row($1.key)) }
        guard !entries.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO analytics_deltas (day, measure, store, environment, product, currency, value)
            SELECT * FROM unnest(\(entries.map { $0.key.day.number })::integer[], \(entries.map { $0.key.measure.rawValue })::text[],
                                 \(entries.map { $0.key.store.text })::text[], \(entries.map { $0.key.environment })::text[],
                                 \(entries.map { $0.key.product })::text[], \(entries.map { $0.key.currency })::text[],
                                 \(entries.map(\.value))::bigint[])
            """, logger: logger)
    }

    /// Folds the differences appended so far into the daily sums; returns how many it folded. Differences appended by
    /// transactions still open are not visible to it and wait for the next time.
    public func compact(on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            WITH moved AS (DELETE FROM analytics_deltas RETURNING day, measure, store, environment, product, currency, value),
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
        _ measures: [AnalyticsMeasure], from: AnalyticsDay, to: AnalyticsDay, environment: String, store: String?, product: String?,
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
            WHERE environment IN (\(environment), '') AND measure = ANY(\(names)::text[]) AND day <= \(to.number)
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

    // MARK: The stored form of a contribution

    static func row(_ key: AnalyticsKey) -> [String] {
        [String(key.day.number), key.measure.rawValue, key.store.text, key.environment, key.product, key.currency]
    }

    static func json(_ contribution: AnalyticsContribution) -> String {
        let rows: [[Any]] = contribution.values.sorted { row($0.key).lexicographicallyPrecedes(row($1.key)) }.map { key, value in
            [Int(key.day.number), key.measure.rawValue, key.store.text, key.environment, key.product, key.currency, value]
        }
        let data = (try? JSONSerialization.data(withJSONObject: rows)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// A stored contribution; a row this version cannot read (a measure it does not know) is left out.
    static func contribution(json text: String) -> AnalyticsContribution {
        guard let rows = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[Any]] else { return AnalyticsContribution() }
        var contribution = AnalyticsContribution()
        for row in rows where row.count == 7 {
            guard let day = (row[0] as? NSNumber)?.int32Value, let measure = (row[1] as? String).flatMap(AnalyticsMeasure.init(rawValue:)),
                let store = row[2] as? String, let environment = row[3] as? String, let product = row[4] as? String, let currency = row[5] as? String,
                let value = (row[6] as? NSNumber)?.int64Value
            else { continue }
            contribution.add(
                value,
                at: AnalyticsKey(
                    day: AnalyticsDay(number: day), measure: measure, store: Store(store), environment: environment, product: product, currency: currency))
        }
        return contribution
    }
}
