import Foundation
import Persistence
import Subscriptions

extension AdminDashboardController {
    /// The account lookup: a form, and for a valid id its status, subscriptions, credits, events, archive and ledger.
    func accountSection(_ text: String?, grantError: String? = nil, viewer: OperatorIdentity, now: Date) async throws -> String {
        var html = """
            <section><h2>Account</h2><form method="get" action="/admin"><input type="text" name="account" \
            placeholder="account id" value="\(HTMLPage.escape(text ?? ""))"> \
            <button type="submit">Look up</button></form>
            """
        guard let text, !text.isEmpty else { return html + "</section>" }
        guard let account = AccountID(text) else {
            return html + "<p class=\"bad\">\(HTMLPage.escape(text)) is not an account id (\(AccountID.rule))</p></section>"
        }
        let standing = try await accounts.status(of: account, now: now)
        let (status, credits, subscriptions) = (standing.status, standing.credits, standing.subscriptions)
        let entitled = status.entitled ? "<span class=\"good\">entitled</span>" : "<span class=\"muted\">not entitled</span>"
        html += "<p><b>\(HTMLPage.escape(status.state.rawValue))</b> · \(entitled) · tier \(HTMLPage.escape(credits.tier ?? "—"))"
        html += " · next change \(HTMLPage.escape(HTMLPage.time(status.nextChangeAt)))</p>"
        html += HTMLPage.table(
            ["subscription", "store", "product", "status", "renews", "expires", "ended"],
            subscriptions.map { state in
                [
                    .raw(Self.sourceId(state.originalTransactionId, store: state.store, live: state.environment == .production)),
                    HTMLPage.Cell(state.store.text), HTMLPage.Cell(state.productId),
                    HTMLPage.Cell(state.effectiveStatus(at: now).rawValue), HTMLPage.Cell(state.willRenew ? "yes" : "no"),
                    HTMLPage.Cell(HTMLPage.time(state.expiresAt)), HTMLPage.Cell(state.endReason?.text ?? "—"),
                ]
            }, empty: "no subscriptions")
        html += try await entitlementsSection(standing, account: account, grantError: grantError, canGrant: viewer.role >= .support, now: now)
        html += HTMLPage.table(
            ["meter", "remaining", "cycle", "top-up", "today", "resets"],
            credits.meters.sorted { $0.key < $1.key }.map { meter, value in
                [
                    HTMLPage.Cell(meter), HTMLPage.Cell(value.unlimited ? "unlimited" : value.remaining.map(String.init) ?? "—"),
                    HTMLPage.Cell(value.cycle.map(String.init) ?? "—"), HTMLPage.Cell(String(value.topUp)),
                    HTMLPage.Cell(value.dailyRemaining.map(String.init) ?? "—"), HTMLPage.Cell(HTMLPage.time(value.resetsAt)),
                ]
            })
        html += "</section><section class=\"wide\"><h2>History of \(HTMLPage.escape(account.text))</h2>"
        let events = try await records.events(ofSubscriptions: subscriptions.map(\.originalTransactionId), account: account, limit: 50)
        html += HTMLPage.table(
            ["signed", "event", "subscription", "outcome"],
            events.map { event in
                [
                    HTMLPage.Cell(HTMLPage.time(event.signedDate)), HTMLPage.Cell(event.type + (event.subtype.map { "/\($0)" } ?? "")),
                    .raw("<code>\(HTMLPage.escape(event.originalTransactionId))</code>"), HTMLPage.Cell(event.outcomeText),
                ]
            }, empty: "no events")
        let archive = try await records.archive(ofAccount: account)
        if !archive.isEmpty {
            html += "<h2>Archive</h2>" + HTMLPage.table(
                ["subscription", "reason", "product", "ended", "reinstated"],
                archive.map {
                    [HTMLPage.Cell($0.originalTransactionId), HTMLPage.Cell($0.reason), HTMLPage.Cell($0.productId),
                     HTMLPage.Cell(HTMLPage.time($0.endedAt)), HTMLPage.Cell(HTMLPage.time($0.reinstatedAt))]
                })
        }
        let refunds = try await records.refundRequests(ofAccount: account, limit: 20)
        if !refunds.isEmpty {
            html += "<h2>Refund requests</h2>" + HTMLPage.table(
                ["requested", "transaction", "product", "reason", "state", "answered", "Apple decided"],
                refunds.map { request in
                    [
                        HTMLPage.Cell(HTMLPage.time(request.requestedAt)), .raw("<code>\(HTMLPage.escape(request.transactionId))</code>"),
                        HTMLPage.Cell(request.productId), HTMLPage.Cell(request.reason ?? "—"), HTMLPage.Cell(request.state.rawValue),
                        HTMLPage.Cell(request.sentAnswer?.summary ?? request.lastError ?? "—"),
                        HTMLPage.Cell(request.outcome ?? "—"),
                    ]
                })
        }
        html += "<h2>Ledger</h2>" + HTMLPage.table(
            ["at", "meter", "delta", "reason", "operation"],
            try await records.ledger(ofAccount: account, limit: 100).map { entry in
                [
                    HTMLPage.Cell(HTMLPage.time(entry.at)), HTMLPage.Cell(entry.meter),
                    .raw("<span class=\"\(entry.delta < 0 ? "bad" : "good")\">\(entry.delta > 0 ? "+" : "")\(entry.delta)</span>"),
                    HTMLPage.Cell(entry.reason), .raw("<code>\(HTMLPage.escape(entry.operationKey))</code>"),
                ]
            }, empty: "no credit operations")
        html += "</section>"
        if let audit {
            let query = account.text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            html += Self.auditSection(
                try await audit.actions(.init(account: account, limit: 50)), title: "Operator actions on \(account.text)",
                csv: "/admin/audit?format=csv&limit=1000&account=\(query)")
        }
        return html
    }
}
