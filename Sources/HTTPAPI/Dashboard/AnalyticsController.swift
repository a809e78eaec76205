import Analytics
import Application
import Entitlements
import Foundation
import Hummingbird

/// `GET /admin/analytics/{metric}?from=&to=&interval=day|week|month&store=&product=&tier=&environment=&format=json|csv`: a
/// chart from the rollups (`docs/analytics.md`). On the dashboard's routes, so its CSV links work in a signed-in
/// browser; any role may read it.
struct AnalyticsController: Sendable {
    let charts: AnalyticsCharts
    /// The environment charted when none is asked for: production where the server accepts it, sandbox otherwise.
    let defaultEnvironment: StoreEnvironment.Rollup
    let clock: @Sendable () -> Date

    /// The longest range a chart spans: ten years of days.
    static let maximumDays: Int32 = 3_660

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("analytics/{metric}") { request, context -> Response in
            let asked = try Self.request(
                metric: try context.parameters.require("metric"), parameters: request.formParameters, defaultEnvironment: defaultEnvironment,
                today: AnalyticsDay(clock()))
            let csv = try AuditController.wantsCSV(request.formParameters.get("format"))
            let chart = try await withDatabase { try await charts.chart(asked) }
            if csv { return try Self.csv(chart).response(from: request, context: context) }
            let body = try StorekeeperRequestContext.jsonEncoder.encode(ChartDocument(chart, request: asked))
            return EventsController.json(String(decoding: body, as: UTF8.self))
        }
    }

    /// The chart a request asks for, checked: the last 30 days by day unless it says otherwise.
    /// - Parameter blankIsDefault: a parameter given empty (a form's blank field) means its default, as if absent.
    static func request(
        metric text: String, parameters: Parameters, defaultEnvironment: StoreEnvironment.Rollup, today: AnalyticsDay, blankIsDefault: Bool = false
    ) throws -> AnalyticsCharts.Request {
        guard let metric = AnalyticsMetric(rawValue: text) else {
            throw APIError(.notFound, code: .notFound, message: "no metric \(text.prefix(64)); metrics: \(AnalyticsMetric.list)")
        }
        // Each filter once: a second value would be silently ignored.
        for name in ["from", "to", "interval", "environment", "store", "product", "tier", "format"] where parameters.getAll(name).count > 1 {
            throw APIError.badRequest("\(name) is given more than once")
        }
        let parameters = blankIsDefault ? Parameters(parameters.filter { !$0.value.isEmpty }) : parameters
        func day(_ name: String) throws -> AnalyticsDay? {
            guard let text = parameters.get(name) else { return nil }
            guard let day = AnalyticsDay(text) else { throw APIError.badRequest("\(name) must be a date, yyyy-mm-dd") }
            return day
        }
        let to = try day("to") ?? today
        let from = try day("from") ?? to.adding(days: -29)
        guard from <= to else { throw APIError.badRequest("from must not be after to") }
        guard to <= today else { throw APIError.badRequest("to must not be after today (\(today), UTC): days to come have no figures yet") }
        guard to.number - from.number < maximumDays else { throw APIError.badRequest("a chart spans at most \(maximumDays) days") }
        let intervalText = parameters.get("interval") ?? "day"
        guard let interval = AnalyticsInterval(rawValue: intervalText) else { throw APIError.badRequest("interval must be day, week or month") }
        let environmentText = parameters.get("environment") ?? defaultEnvironment.rawValue
        guard let environment = StoreEnvironment.Rollup(rawValue: environmentText) else {
            throw APIError.badRequest("environment must be production or sandbox")
        }
        let store = parameters.get("store")
        if let store, !["app_store", "stripe", "google_play"].contains(store) {
            throw APIError.badRequest("store must be app_store, stripe or google_play")
        }
        let product = parameters.get("product")
        if let product, !product.isKey(maximumBytes: 256) { throw APIError.badRequest("product must be 1–256 printable characters") }
        let tier = parameters.get("tier")
        if let tier, !tier.isKey(maximumBytes: 256) { throw APIError.badRequest("tier must be 1–256 printable characters") }
        if tier != nil, metric != .usage { throw APIError.badRequest("tier filters usage only; the other charts take product") }
        return AnalyticsCharts.Request(
            metric: metric, from: from, to: to, interval: interval, environment: environment, store: store, product: product, tier: tier)
    }

    static func csv(_ chart: AnalyticsChart) -> CSVTable {
        var rows: [[String]] = []
        for series in chart.series {
            for point in series.points {
                rows.append([
                    point.date.description, series.name, series.unit, series.currency ?? "", series.meter ?? "", series.tier ?? "",
                    point.value.map(ChartDocument.text) ?? "",
                ])
            }
        }
        return CSVTable(
            header: ["date", "series", "unit", "currency", "meter", "tier", "value"], rows: rows,
            filename: "storekeeper-\(chart.metric.rawValue)-\(chart.from)-\(chart.to).csv")
    }
}

/// A chart as JSON: every field present, `null` where it does not apply.
struct ChartDocument: Encodable {
    var metric: String
    var from: String
    var to: String
    var interval: String
    var environment: String
    @Nullable var store: String?
    @Nullable var product: String?
    @Nullable var tier: String?
    @Nullable var reportingCurrency: String?
    var missingRates: [String]
    var series: [SeriesDocument]

    struct SeriesDocument: Encodable, Sendable {
        var name: String
        var unit: String
        @Nullable var currency: String?
        @Nullable var meter: String?
        @Nullable var tier: String?
        var points: [PointDocument]
    }

    struct PointDocument: Encodable, Sendable {
        var date: String
        var value: Double?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(date, forKey: .date)
            // Counts and milliunits are whole numbers: written without a fraction.
            if let value, value == value.rounded(), abs(value) < 9e15 {
                try container.encode(Int64(value), forKey: .value)
            } else {
                try container.encode(value, forKey: .value)
            }
        }

        enum CodingKeys: String, CodingKey { case date, value }
    }

    init(_ chart: AnalyticsChart, request: AnalyticsCharts.Request) {
        metric = chart.metric.rawValue
        from = chart.from.description
        to = chart.to.description
        interval = chart.interval.rawValue
        environment = request.environment.rawValue
        store = request.store
        product = request.product
        tier = request.tier
        reportingCurrency = chart.reportingCurrency
        missingRates = chart.missingRates
        series = chart.series.map { series in
            SeriesDocument(
                name: series.name, unit: series.unit, currency: series.currency, meter: series.meter, tier: series.tier,
                points: series.points.map { PointDocument(date: $0.date.description, value: $0.value) })
        }
    }

    /// A value as CSV writes it: whole numbers without a fraction, ratios to six decimals.
    static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 9e15 ? String(Int64(value)) : String(format: "%.6f", value)
    }
}
