import Analytics
import Foundation
import Logging
import Persistence
import PostgresNIO

/// Draws a chart from the analytics rollups (the one use case behind `GET /admin/analytics/{metric}` and the
/// dashboard's overview).
public struct AnalyticsCharts: Sendable {
    /// What a chart is asked for.
    public struct Request: Sendable, Equatable {
        public var metric: AnalyticsMetric
        public var from: AnalyticsDay
        public var to: AnalyticsDay
        public var interval: AnalyticsInterval
        /// `production` or `sandbox`.
        public var environment: String
        public var store: String?
        /// A product; a tier for usage.
        public var product: String?

        public init(
            metric: AnalyticsMetric, from: AnalyticsDay, to: AnalyticsDay, interval: AnalyticsInterval, environment: String, store: String? = nil,
            product: String? = nil
        ) {
            self.metric = metric
            self.from = from
            self.to = to
            self.interval = interval
            self.environment = environment
            self.store = store
            self.product = product
        }
    }

    private let client: PostgresClient
    private let rollups: AnalyticsRollups
    private let rates: CurrencyRates?

    public init(client: PostgresClient, rates: CurrencyRates?, logger: Logger) {
        self.client = client
        self.rollups = AnalyticsRollups(logger: logger)
        self.rates = rates
    }

    public func chart(_ request: Request) async throws -> AnalyticsChart {
        let sums = try await client.withConnection { connection in
            try await rollups.sums(
                request.metric.measures, from: request.from, to: request.to, environment: request.environment, store: request.store,
                product: request.product, on: connection)
        }
        return AnalyticsChart.draw(request.metric, from: request.from, to: request.to, interval: request.interval, sums: sums, rates: rates)
    }
}
