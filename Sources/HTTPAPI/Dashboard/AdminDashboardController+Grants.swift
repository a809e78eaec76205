import Application
import Credits
import Entitlements
import Foundation
import Hummingbird
import Subscriptions

extension AdminDashboardController {
    /// A source's id as code — for a Stripe subscription or payment, a link to it in Stripe's dashboard (its test mode
    /// unless it is live), where the operator sees what the customer paid.
    static func sourceId(_ id: String, store: Store, live: Bool) -> String {
        let code = "<code>\(HTMLPage.escape(id))</code>"
        guard store == .stripe else { return code }
        let kind = id.hasPrefix("sub_") ? "subscriptions" : id.hasPrefix("pi_") ? "payments" : nil
        guard let kind, let path = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "_"))) else {
            return code
        }
        let url = "https://dashboard.stripe.com/\(live ? "" : "test/")\(kind)/\(path)"
        return "<a href=\"\(url)\" rel=\"noopener noreferrer\" target=\"_blank\">\(code)</a>"
    }

    /// The account page's entitlements: every source that entitles now, the account's grants with an end button each,
    /// and a form to grant a tier (with `grantsEveryTier`, an admin's, the `grantable_only` tiers too, never preselected).
    func entitlementsSection(
        _ standing: AccountStanding, account: AccountID, grantError: String?, canGrant: Bool, grantsEveryTier: Bool, now: Date
    ) async throws -> String {
        var html =
            "<h2>Entitlements</h2>"
            + HTMLPage.table(
                ["source", "store", "id", "product", "tier", "expires", "renews"],
                standing.entitlements.entitling.map { source in
                    [
                        HTMLPage.Cell(source.kind.text), HTMLPage.Cell(source.store.text),
                        .raw(
                            Self.sourceId(
                                source.id, store: source.store,
                                live: standing.subscriptions.first { $0.originalTransactionId == source.id }?.environment == .production)),
                        HTMLPage.Cell(source.productId ?? "—"), HTMLPage.Cell(source.tier ?? "—"),
                        HTMLPage.Cell(source.expiresAt.map(HTMLPage.time) ?? "never"), HTMLPage.Cell(source.willRenew ? "yes" : "no"),
                    ]
                }, empty: "nothing entitles this account")
        guard let grants, let catalogue else { return html }
        let records = try await grants.grants(of: account)
        html +=
            "<h2>Grants</h2>"
            + HTMLPage.table(
                ["tier", "status", "from", "until", "reason", "by", ""],
                records.map { record in
                    let source = catalogue.source(of: record, at: now)
                    let end =
                        canGrant && (source.entitled || source.status == .scheduled)
                        ? "<form class=\"inline\" method=\"post\" action=\"/admin/grants/\(record.id)/end\"><button type=\"submit\">End now</button></form>"
                        : ""
                    return [
                        HTMLPage.Cell(record.tier ?? "—"), HTMLPage.Cell(source.status.text), HTMLPage.Cell(HTMLPage.time(record.startsAt)),
                        HTMLPage.Cell(HTMLPage.time(record.endedAt ?? record.endsAt)), HTMLPage.Cell(record.reason ?? "—"),
                        HTMLPage.Cell(record.createdBy ?? "—"), .raw(end),
                    ]
                }, empty: "no grants")
        // Preselected: the first tier a store sells, so a hurried grant is never the internal unlimited one.
        let offered = catalogue.tiers.sorted { $0.level < $1.level }.filter { grantsEveryTier || !$0.grantableOnly }
        let preselected = offered.first { !$0.grantableOnly }?.id
        let options = offered.map {
            "<option value=\"\(HTMLPage.escape($0.id))\"\($0.id == preselected ? " selected" : "")>\(HTMLPage.escape($0.displayName))</option>"
        }.joined()
        if let grantError { html += "<p class=\"bad\">Not granted: \(HTMLPage.escape(grantError))</p>" }
        guard canGrant else { return html }
        let path = account.text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? ""
        // `request`: a key per rendering of the form, so a form sent twice grants once.
        html += """
            <form method="post" action="/admin/accounts/\(HTMLPage.escape(path))/grant">\
            <input type="hidden" name="request" value="\(UUID().lowercasedText)">\
            <select name="tier">\(options)</select> \
            <input type="text" name="duration" placeholder="P30D, P3M, P1Y"> \
            <label><input type="checkbox" name="lifetime" value="true"> for good</label> \
            <input type="text" name="reason" placeholder="reason" maxlength="\(OperatorGrants.maximumReasonLength)" required> \
            <button type="submit">Grant</button></form>
            """
        return html
    }

    /// The page's grant forms: add (a `duration`, or `lifetime` for good) and end; each answers with the account page
    /// again, a refused grant with why.
    func addGrantRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        guard let grants, let catalogue else { return }
        group.post("accounts/{accountId}/grant") { request, context -> Response in
            let account = try AccountsController.accountId(context)
            let form = Self.form(try await request.collectBody(upTo: 16 * 1024))
            let now = clock()
            let duration = form["duration"].flatMap { $0.isEmpty ? nil : $0 }
            do {
                let asked = try GrantsController.request(
                    .init(
                        tier: form["tier"], endsAt: nil, duration: duration, lifetime: form["lifetime"] == "true" ? true : nil,
                        reason: form["reason"], idempotencyKey: form["request"]),
                    now: now, createdBy: context.operatorIdentity?.name ?? "dashboard", role: context.operatorIdentity?.role ?? .admin,
                    catalogue: catalogue)
                _ = try await GrantsController(grants: grants, catalogue: catalogue, clock: clock).add(asked, to: account, now: now)
                return Self.backToAccount(account.text)
            } catch let error as APIError where error.status == .badRequest || error.status == .forbidden {
                // Back to the page, which says why, instead of a JSON answer in the operator's browser.
                OperatorAudit.unchanged()
                return Self.backToAccount(account.text, grantError: error.message)
            }
        }
        group.post("grants/{grantId}/end") { _, context -> Response in
            let ended = try await GrantsController(grants: grants, catalogue: catalogue, clock: clock).end(
                try GrantsController.grantId(context), now: clock())
            return Self.backToAccount(ended.accountId ?? "")
        }
    }

    /// 303 to the account's page, with why a form was refused as a notice signed for the operator who sent it.
    static func backToAccount(_ account: String, grantError: String? = nil, creditError: String? = nil) -> Response {
        var location = "/admin?account=\(DashboardNotice.encoded(account))"
        if let grantError { location += "&" + DashboardNotice.query(.grantError, grantError) }
        if let creditError { location += "&" + DashboardNotice.query(.creditError, creditError) }
        return Response(status: .seeOther, headers: [.location: location])
    }

    /// An `application/x-www-form-urlencoded` body's fields (the first of each name). A body that is not UTF-8, or any
    /// field whose escapes are malformed or not UTF-8, makes the whole form empty, so every form refuses it for its
    /// required fields: read leniently, such bytes became U+FFFD or "", and an optional field left out (the form's
    /// idempotency key) let every resubmission through.
    static func form(_ body: ByteBuffer) -> [String: String] {
        guard let text = String(validating: body.readableBytesView, as: UTF8.self) else { return [:] }
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = parts.first ?? nil, let value = parts.count > 1 ? parts[1] : "" else { return [:] }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }
}
