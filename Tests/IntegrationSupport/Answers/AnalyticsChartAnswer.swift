/// `GET /admin/analytics/{metric}` (JSON): one metric's series over a time range (openapi `AnalyticsChart`).
struct AnalyticsChartAnswer: Decodable, Sendable {
    var metric: String
    var from: String
    var to: String
    var interval: String
    var environment: String
    @RequiredNullable var store: String?
    @RequiredNullable var product: String?
    @RequiredNullable var tier: String?
    @RequiredNullable var reportingCurrency: String?
    var missingRates: [String]
    var series: [Series]

    /// One line of the chart (openapi `AnalyticsSeries`).
    struct Series: Decodable, Sendable {
        var name: String
        var unit: String
        @RequiredNullable var currency: String?
        @RequiredNullable var meter: String?
        @RequiredNullable var tier: String?
        var points: [Point]
    }

    /// One point of a series: `value` is null where there is no figure.
    struct Point: Decodable, Sendable {
        var date: String
        @RequiredNullable var value: Double?
    }
}
