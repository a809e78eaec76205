import Analytics
import Application
import Entitlements
import Foundation
import Hummingbird

/// `GET /admin/overview`: the business at a glance — MRR, actives and trials, trial starts and conversions,
/// revenue, churn and credit usage — as SVG charts drawn on the server from the analytics rollups, with a date range,
/// interval, store, product and environment filter and each chart's CSV. No script; it reads the same charts
/// `GET /admin/analytics/{metric}` answers.
struct OverviewPage: Sendable {
    let charts: AnalyticsCharts
    /// Retention answers by rule, when `STOREKEEPER_RETENTION` is set.
    let retention: RetentionMessaging?
    let defaultEnvironment: StoreEnvironment.Rollup
    let clock: @Sendable () -> Date

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("overview") { request, context -> HTMLPage in
            let today = AnalyticsDay(clock())
            var problem: String?
            var asked: AnalyticsCharts.Request
            do {
                // Read as the usage chart's filters, the widest: a `tier` applies to usage only, below.
                asked = try AnalyticsController.request(
                    metric: AnalyticsMetric.usage.rawValue, parameters: request.formParameters, defaultEnvironment: defaultEnvironment, today: today,
                    blankIsDefault: true)
            } catch let error as APIError {
                problem = error.message
                asked = AnalyticsCharts.Request(
                    metric: .mrr, from: today.adding(days: -29), to: today, interval: .day, environment: defaultEnvironment)
            }
            let viewer = context.operatorIdentity ?? OperatorIdentity(name: "—", role: .viewer)
            let (request, refused) = (asked, problem)
            // A filter that cannot be read shows the last 30 days and says why, answered 400 (it was not what was asked).
            var answer = try await withDatabase { try await page(request, problem: refused, viewer: viewer) }
            if refused != nil { answer.status = .badRequest }
            return answer
        }
    }

    func page(_ asked: AnalyticsCharts.Request, problem: String?, viewer: OperatorIdentity) async throws -> HTMLPage {
        func chart(_ metric: AnalyticsMetric) async throws -> AnalyticsChart {
            var request = asked
            request.metric = metric
            if metric != .usage { request.tier = nil }
            return try await charts.chart(request)
        }
        var body = "<header><h1>Storekeeper</h1><nav><a href=\"/admin\">Operations</a> · <b>Overview</b></nav>"
        body += "<span>signed in as \(HTMLPage.escape(viewer.name)) (\(viewer.role.rawValue))</span></header><main>"
        body += "<section class=\"wide\">" + Self.filterForm(asked)
        if let problem { body += "<p class=\"bad\">\(HTMLPage.escape(problem)); showing the last 30 days</p>" }
        body += "</section>"

        let mrr = try await chart(.mrr)
        let (actives, trials, revenue) = (try await chart(.actives), try await chart(.trials), try await chart(.revenue))
        let (churn, usage) = (try await chart(.churn), try await chart(.usage))
        let dates =
            mrr.series.first?.points.map(\.date) ?? AnalyticsChart.buckets(from: asked.from, to: asked.to, interval: asked.interval).map(\.first)
        func lines(
            _ chart: AnalyticsChart, _ names: [String],
            label: (AnalyticsChart.Series) -> String = { $0.name.replacingOccurrences(of: "_", with: " ") }
        )
            -> [SVGChart.Line]
        {
            chart.series.filter { names.contains($0.name) }.map { SVGChart.Line(label: label($0), values: $0.points.map(\.value)) }
        }
        let totals = mrr.reportingCurrency != nil
        let money: (AnalyticsChart.Series) -> String = {
            "\($0.name.replacingOccurrences(of: "_total", with: "").replacingOccurrences(of: "_", with: " ")) \($0.currency ?? "")"
        }
        var sections: [(String, AnalyticsMetric, SVGChart, String?)] = [
            (
                "MRR", .mrr,
                SVGChart(
                    title: "MRR", style: .line, dates: dates, lines: lines(mrr, [totals ? "mrr_total" : "mrr"], label: money), format: SVGChart.money),
                mrr.missingRates.isEmpty ? nil : "left out of the total, no rate: \(mrr.missingRates.joined(separator: ", "))"
            ),
            (
                "Active subscriptions and trials", .actives,
                SVGChart(
                    title: "Actives", style: .line, dates: dates, lines: lines(actives, ["active_subscriptions", "active_trials"]),
                    format: SVGChart.count, wholeNumbers: true), nil
            ),
            (
                "Trials started and converted", .trials,
                SVGChart(
                    title: "Trials", style: .bars, dates: dates, lines: lines(trials, ["new_trials", "trial_conversions"]), format: SVGChart.count,
                    wholeNumbers: true), nil
            ),
            (
                "Revenue", .revenue,
                SVGChart(
                    title: "Revenue", style: .bars, dates: dates,
                    lines: lines(revenue, totals ? ["gross_total", "refunds_total"] : ["gross", "refunds"], label: money), format: SVGChart.money),
                revenue.missingRates.isEmpty ? nil : "left out of the totals, no rate: \(revenue.missingRates.joined(separator: ", "))"
            ),
            (
                "Churn", .churn,
                SVGChart(
                    title: "Churn", style: .bars, dates: dates, lines: lines(churn, ["churned", "resubscriptions"]), format: SVGChart.count,
                    wholeNumbers: true),
                Self.churnRate(churn)
            ),
        ]
        // Only the meters and tiers something was spent from.
        let spent = usage.series.filter { $0.name == "credits_spent" && $0.points.contains { ($0.value ?? 0) != 0 } }
        sections.append(
            (
                "Credits spent", .usage,
                SVGChart(
                    title: "Credits spent", style: .bars, dates: dates,
                    lines: spent.map { SVGChart.Line(label: "\($0.tier ?? "") \($0.meter ?? "")", values: $0.points.map(\.value)) },
                    format: SVGChart.count, wholeNumbers: true),
                Self.allowanceUsed(usage)
            ))
        for (title, metric, svg, note) in sections {
            body += "<section><h2>\(HTMLPage.escape(title))</h2>\(svg.svg)"
            if let note { body += "<p class=\"muted\">\(HTMLPage.escape(note))</p>" }
            body += "<p><a href=\"\(HTMLPage.escape(Self.link(metric, asked)))\">Download CSV</a></p></section>"
        }
        if let retention {
            body += RetentionReport.section(try await retention.ruleCounts(since: clock().addingTimeInterval(-30 * 86_400)))
        }
        return HTMLPage(title: "Storekeeper overview", body: body + "</main>")
    }

    /// Churned over active at the start, over the whole range.
    static func churnRate(_ chart: AnalyticsChart) -> String? {
        let churned = chart.series.first { $0.name == "churned" }?.points.compactMap(\.value).reduce(0, +) ?? 0
        guard let start = chart.series.first(where: { $0.name == "active_at_start" })?.points.first?.value, start > 0 else { return nil }
        return "churned over the range: \(SVGChart.percent(churned / start)) of the \(SVGChart.count(start)) active when it began"
    }

    /// Each tier's share of its allowance used over the range.
    static func allowanceUsed(_ chart: AnalyticsChart) -> String? {
        var shares: [String] = []
        for spent in chart.series where spent.name == "credits_spent" {
            guard let granted = chart.series.first(where: { $0.name == "credits_granted" && $0.tier == spent.tier && $0.meter == spent.meter }) else {
                continue
            }
            let (used, given) = (spent.points.compactMap(\.value).reduce(0, +), granted.points.compactMap(\.value).reduce(0, +))
            guard given > 0 else { continue }
            shares.append("\(spent.tier ?? "") \(spent.meter ?? ""): \(SVGChart.percent(used / given))")
        }
        return shares.isEmpty ? nil : "allowance used: " + shares.joined(separator: " · ")
    }

    static func link(_ metric: AnalyticsMetric, _ asked: AnalyticsCharts.Request) -> String {
        var query = "from=\(asked.from)&to=\(asked.to)&interval=\(asked.interval.rawValue)&environment=\(asked.environment.rawValue)&format=csv"
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        if let store = asked.store { query += "&store=\(store)" }
        if let product = asked.product { query += "&product=\(product.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
        return "/admin/analytics/\(metric.rawValue)?\(query)"
    }

    static func filterForm(_ asked: AnalyticsCharts.Request) -> String {
        func option(_ value: String, _ label: String, selected: Bool) -> String {
            "<option value=\"\(value)\"\(selected ? " selected" : "")>\(label)</option>"
        }
        var html = "<form method=\"get\" action=\"/admin/overview\" class=\"filters\">"
        html += "<label>from <input type=\"date\" name=\"from\" value=\"\(asked.from)\"></label> "
        html += "<label>to <input type=\"date\" name=\"to\" value=\"\(asked.to)\"></label> "
        html +=
            "<label>by <select name=\"interval\">"
            + AnalyticsInterval.allCases.map { option($0.rawValue, $0.rawValue, selected: $0 == asked.interval) }.joined() + "</select></label> "
        html += "<label>store <select name=\"store\">" + option("", "all", selected: asked.store == nil)
        html +=
            option("app_store", "App Store", selected: asked.store == "app_store") + option("stripe", "Stripe", selected: asked.store == "stripe")
            + "</select></label> "
        html +=
            "<label>product <input type=\"text\" name=\"product\" value=\"\(HTMLPage.escape(asked.product ?? ""))\" placeholder=\"all\" style=\"width:160px\"></label> "
        html += "<label>environment <select name=\"environment\">" + option("production", "production", selected: asked.environment == .production)
        html +=
            option("sandbox", "sandbox", selected: asked.environment == .sandbox) + "</select></label> <button type=\"submit\">Show</button></form>"
        return html
    }
}
