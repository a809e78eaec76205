import Credits
import Foundation
import Persistence
import Subscriptions

extension AdminDashboardController {
    /// The account lookup: a form, and for a valid id its status, subscriptions, credits, events, archive and ledger.
    func accountSection(
        _ text: String?, found: String? = nil, notices: PageNotices = .init(), viewer: OperatorIdentity, now: Date
    ) async throws -> String {
        // One box finds an account by any id; a link to an account uses `account=` and shows it whatever it holds.
        var html = """
            <section class="wide"><h2>Account</h2><form method="get" action="/admin"><input type="text" name="find" \
            placeholder="account id, transaction id, order id, sub_… cus_… in_… ch_…, purchase token" value="\(HTMLPage.escape(text ?? ""))"> \
            <button type="submit">Find</button></form>
            """
        if let appStore, !appStore.looksUpOrders {
            html += "<p class=\"muted\">\(HTMLPage.escape(appStore.orderLookupUnavailable))</p>"
        }
        if let found { html += "<p class=\"muted\">\(HTMLPage.escape(found))</p>" }
        if let erased = notices.erased { html += "<p class=\"muted\">\(HTMLPage.escape(erased))</p>" }
        guard let text, !text.isEmpty else { return html + "</section>" }
        guard let account = AccountID(text) else {
            return html + "<p class=\"bad\">\(HTMLPage.escape(text)) is not an account id (\(AccountID.rule))</p></section>"
        }
        let standing = try await accounts.status(of: account, now: now)
        let (status, credits, subscriptions) = (standing.status, standing.credits, standing.subscriptions)
        let entitled = status.entitled ? "<span class=\"good\">entitled</span>" : "<span class=\"muted\">not entitled</span>"
        html += "<p><b>\(HTMLPage.escape(status.state.rawValue))</b> · \(entitled) · tier \(HTMLPage.escape(credits.tier ?? "—"))"
        html += " · next change \(HTMLPage.escape(HTMLPage.time(status.nextChangeAt)))</p>"
        // Apple's RESCIND_CONSENT: the customer withdrew consent for the app — support must know before acting.
        for rescission in try await records.consentRescissions(ofAccount: account) {
            html +=
                "<p class=\"bad\">Consent rescinded \(HTMLPage.escape(HTMLPage.time(rescission.rescindedAt))) (\(HTMLPage.escape(rescission.environment.rawValue)), "
            html += "app transaction <code>\(HTMLPage.escape(rescission.appTransactionId))</code>)</p>"
        }
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
        html += try await entitlementsSection(
            standing, account: account, grantError: notices.grantError, canGrant: viewer.role >= .support, grantsEveryTier: viewer.role >= .admin,
            now: now)
        html += HTMLPage.table(
            ["meter", "remaining", "held", "cycle", "top-up", "today", "resets"],
            credits.meters.sorted { $0.key < $1.key }.map { meter, value in
                [
                    HTMLPage.Cell(meter), HTMLPage.Cell(value.unlimited ? "unlimited" : value.remaining.map(String.init) ?? "—"),
                    HTMLPage.Cell(String(value.held)),
                    HTMLPage.Cell(value.cycle.map(String.init) ?? "—"), HTMLPage.Cell(String(value.topUp)),
                    HTMLPage.Cell(value.dailyRemaining.map(String.init) ?? "—"), HTMLPage.Cell(HTMLPage.time(value.resetsAt)),
                ]
            })
        let holds = try await records.holds(ofAccount: account, limit: 50)
        html += Self.holdsTable(Array(holds.prefix(20)))
        if viewer.role >= .support { html += creditAdjustmentForm(account, error: notices.creditError) }
        if let appStore {
            html += AppStoreSupportController.accountSection(
                account, extensions: try await appStore.extensions(of: account),
                subscriptions: subscriptions.filter { $0.store == .appStore }.map(\.originalTransactionId), notice: notices.appStore,
                canExtend: viewer.role >= .support, asksApple: appStore.asksApple)
        }
        if viewer.role >= .admin {
            let path = account.text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? ""
            html +=
                "<form class=\"inline\" method=\"post\" action=\"/admin/accounts/\(HTMLPage.escape(path))/export\"><button type=\"submit\">Export everything held (JSON)</button></form>"
            // Erasure cannot be undone: the id is typed again to confirm it.
            html += """
                <form class="inline" method="post" action="/admin/accounts/\(HTMLPage.escape(path))/erase">\
                <input type="text" name="confirm" placeholder="type the account id to erase it" style="width:260px" required> \
                <button type="submit">Erase personal data</button></form>
                """
        }
        html += "</section><section class=\"wide\"><h2>Timeline of \(HTMLPage.escape(account.text))</h2>"
        var timeline = AccountTimeline()
        timeline.add(signed: try await records.events(ofSubscriptions: subscriptions.map(\.originalTransactionId), account: account, limit: 100))
        if let events {
            let recent = try await events.recent(account: account, types: .all, limit: 100)
            timeline.add(changes: recent, deliveries: try await events.deliveries(of: recent.map(\.id)))
        }
        timeline.add(ledger: try await records.ledger(ofAccount: account, limit: 100))
        timeline.add(holds: holds)
        timeline.add(ends: try await records.archive(ofAccount: account))
        if let audit { timeline.add(operators: try await audit.actions(.init(account: account, limit: 100))) }
        html += timeline.html(limit: 200)
        let refunds = try await refundRequests.requests(ofAccount: account, limit: 20, now: now)
        if !refunds.isEmpty {
            html +=
                "<h2>Refund requests</h2>"
                + HTMLPage.table(
                    ["requested", "transaction", "product", "reason", "state", "answered", "Apple decided"],
                    refunds.map { listed in
                        let request = listed.request
                        return [
                            HTMLPage.Cell(HTMLPage.time(request.requestedAt)), .raw("<code>\(HTMLPage.escape(request.transactionId))</code>"),
                            HTMLPage.Cell(request.productId), HTMLPage.Cell(request.reason ?? "—"), HTMLPage.Cell(request.state.rawValue),
                            HTMLPage.Cell(
                                request.sentAnswer?.summary ?? request.lastError ?? listed.answerPreview.map { "would answer \($0.summary)" } ?? "—"),
                            HTMLPage.Cell(request.outcome ?? "—"),
                        ]
                    })
        }
        html += "</section>"
        if audit != nil {
            let query = account.text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            html += "<section class=\"wide\"><p class=\"muted\">Operator actions on \(HTMLPage.escape(account.text)) are in the timeline; "
            html += "<a href=\"/admin/audit?format=csv&amp;limit=1000&amp;account=\(HTMLPage.escape(query))\">download them as CSV</a>.</p></section>"
        }
        return html
    }

    /// The account's latest holds: what each held and its outcome, or when it expires while it is held.
    static func holdsTable(_ holds: [CreditHold]) -> String {
        guard !holds.isEmpty else { return "" }
        return "<h3>Holds</h3>"
            + HTMLPage.table(
                ["taken", "meter", "held", "state", "charged", "returned", "lapsed", "expires / ended", "key"],
                holds.map { hold in
                    [
                        HTMLPage.Cell(HTMLPage.time(hold.createdAt)), HTMLPage.Cell(hold.meter), HTMLPage.Cell(String(hold.amount)),
                        .raw("<span class=\"\(hold.state == .held ? "good" : "muted")\">\(HTMLPage.escape(hold.state.text))</span>"),
                        HTMLPage.Cell(hold.charged.map(String.init) ?? "—"), HTMLPage.Cell(hold.returned.map(String.init) ?? "—"),
                        HTMLPage.Cell(hold.lapsed.map(String.init) ?? "—"), HTMLPage.Cell(HTMLPage.time(hold.endedAt ?? hold.expiresAt)),
                        .raw("<code>\(HTMLPage.escape(hold.idempotencyKey))</code>"),
                    ]
                })
    }
}
