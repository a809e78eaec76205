import Analytics
import Credits
import Entitlements
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
        public var environment: StoreEnvironment.Rollup
        public var store: String?
        /// A product. Usage is held by tier: there a product stands for the tier it belongs to.
        public var product: String?
        /// A tier: usage only.
        public var tier: String?

        public init(
            metric: AnalyticsMetric, from: AnalyticsDay, to: AnalyticsDay, interval: AnalyticsInterval, environment: StoreEnvironment.Rollup,
            store: String? = nil,
            product: String? = nil, tier: String? = nil
        ) {
            self.metric = metric
            self.from = from
            self.to = to
            self.interval = interval
            self.environment = environment
            self.store = store
            self.product = product
            self.tier = tier
        }
    }

    private let client: PostgresClient
    private let rollups: AnalyticsRollups
    private let rates: CurrencyRates?
    private let catalogue: TierCatalogue

    public init(client: PostgresClient, rates: CurrencyRates?, catalogue: TierCatalogue, logger: Logger) {
        self.client = client
        self.rollups = AnalyticsRollups(logger: logger)
        self.rates = rates
        self.catalogue = catalogue
    }

    public func chart(_ request: Request) async throws -> AnalyticsChart {
        let sums = try await client.withFencedConnection { connection in
            try await rollups.sums(
                request.metric.measures, from: request.from, to: request.to, environment: request.environment, store: request.store,
                product: filter(request), on: connection)
        }
        return AnalyticsChart.draw(request.metric, from: request.from, to: request.to, interval: request.interval, sums: sums, rates: rates)
    }

    /// The rollups' `product` column holds the tier for usage: a product asked for there is read as its tier.
    func filter(_ request: Request) -> String? {
        guard request.metric == .usage else { return request.product }
        return request.tier ?? request.product.map { catalogue.tier(ofProduct: $0)?.tier.id ?? $0 }
    }
}
