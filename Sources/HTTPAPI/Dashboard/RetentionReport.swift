import Application
import Foundation
import Hummingbird
import Persistence

/// `GET /admin/retention?days=30`: each retention rule's answers over the last days and how many of those
/// subscriptions stayed (still renewing, with access) — the figures the overview shows (docs/retention.md).
struct RetentionReport: Sendable {
    let retention: RetentionMessaging
    let clock: @Sendable () -> Date

    struct Rule: Encodable {
        var rule: String
        var answer: String?
        /// Why the default was given: `no_rule`, `unknown_subscription`, `late`, `failed`.
        var fallbackReason: String?
        var answers: Int
        var subscriptions: Int
        var stayed: Int
    }

    struct Body: ResponseEncodable {
        var since: Date
        var rules: [Rule]
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("retention") { request, _ -> Body in
            let text = request.uri.queryParameters.get("days") ?? "30"
            guard let days = Int(text), (1...366).contains(days) else { throw APIError.badRequest("days must be 1–366") }
            let since = clock().addingTimeInterval(-Double(days) * 86_400)
            let counts = try await withDatabase { try await retention.ruleCounts(since: since) }
            return Body(since: since, rules: counts.map(Self.rule))
        }
    }

    static func rule(_ count: RetentionDecisions.RuleCount) -> Rule {
        Rule(
            rule: count.rule, answer: count.answerKind, fallbackReason: count.fallbackReason, answers: count.answers,
            subscriptions: count.subscriptions, stayed: count.stayed)
    }

    /// The overview's section: one row a rule.
    static func section(_ counts: [RetentionDecisions.RuleCount]) -> String {
        var html = "<section><h2>Retention answers, last 30 days</h2>"
        guard !counts.isEmpty else { return html + "<p class=\"muted\">Apple asked for no retention message.</p></section>" }
        html += "<table><tr><th>rule</th><th>answer</th><th>answers</th><th>subscriptions</th><th>stayed</th></tr>"
        for count in counts {
            let share = count.subscriptions > 0 ? " (\(count.stayed * 100 / count.subscriptions) %)" : ""
            let rule = count.fallbackReason.map { "\(count.rule) (\($0.replacingOccurrences(of: "_", with: " ")))" } ?? count.rule
            html += "<tr><td>\(HTMLPage.escape(rule))</td><td>\(HTMLPage.escape(count.answerKind ?? "none"))</td><td>\(count.answers)</td>"
            html += "<td>\(count.subscriptions)</td><td>\(count.stayed)\(share)</td></tr>"
        }
        return html + "</table><p class=\"muted\">subscriptions: those Storekeeper knows; stayed: still renewing, with access now.</p></section>"
    }
}
