import AppStoreModels
import AppStoreServerAPI
import Application
import Entitlements
import Foundation
import Hummingbird
import Persistence
import Subscriptions

/// The dashboard's side of Apple support: the account page's App Store section (its extensions, a form to extend,
/// a link to Apple's refund history) and the main page's mass extensions (a dry run first, then the request, each
/// with its status). Forms answer 303 back to the page with what happened; refund history is JSON for its link.
extension AppStoreSupportController {
    struct RefundList: ResponseEncodable {
        var accountId: String
        var refunds: [Refund]
    }

    struct Refund: Encodable, Sendable {
        var transactionId: String
        var originalTransactionId: String
        var productId: String
        @Nullable var type: String?
        @Nullable var environment: String?
        @Nullable var purchaseDate: Date?
        @Nullable var revocationDate: Date?
        @Nullable var revocationReason: Int32?
        @Nullable var revocationType: String?
        @Nullable var revocationPercentage: Int32?
        @Nullable var price: Int64?
        @Nullable var currency: String?

        init(_ transaction: TransactionPayload) {
            func date(_ milliseconds: Int64?) -> Date? { milliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
            transactionId = transaction.transactionId
            originalTransactionId = transaction.originalTransactionId
            productId = transaction.productId
            type = transaction.type
            environment = transaction.environment?.rawValue
            purchaseDate = date(transaction.purchaseDate)
            revocationDate = date(transaction.revocationDate)
            revocationReason = transaction.revocationReason
            revocationType = transaction.revocationType
            revocationPercentage = transaction.revocationPercentage
            price = transaction.price
            currency = transaction.currency
        }
    }

    func addDashboardRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        // Reads that ask Apple: bounded per key (``AppleQuestionLimits``) and in the audit log like writes.
        group.get("extensions/{requestIdentifier}") { _, context -> RenewalExtensionDocument in
            let identifier = try context.parameters.require("requestIdentifier")
            let now = clock()
            let record = try await questions.asking(context.operatorIdentity?.name ?? "-") {
                try await answering { try await support.massStatus(identifier, now: now) }
            }
            OperatorAudit.note("apple.extension-status", target: identifier)
            return RenewalExtensionDocument(record: record)
        }
        group.get("accounts/{accountId}/apple-refunds") { _, context -> RefundList in
            let account = try AccountsController.accountId(context)
            let refunds = try await questions.asking(context.operatorIdentity?.name ?? "-") {
                try await answering { try await support.refundHistory(of: account) }
            }
            OperatorAudit.note("apple.refund-history", account: account.text)
            return RefundList(accountId: account.text, refunds: refunds.map(Refund.init))
        }
        group.post("accounts/{accountId}/extend") { request, context -> Response in
            let account = try AccountsController.accountId(context)
            let form = AdminDashboardController.form(try await request.collectBody(upTo: 16 * 1024))
            let body = ExtendBody(
                days: form["days"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }, reason: form["reason"],
                subscription: form["subscription"].flatMap { $0.isEmpty ? nil : $0 }, requestIdentifier: form["request"])
            let notice: String
            do {
                let document = try await extend(body, account: account, operatorName: context.operatorIdentity?.name ?? "dashboard")
                notice =
                    document.success == true
                    ? "Apple extended \(document.subscription ?? "") to \(HTMLPage.time(document.effectiveDate))"
                    : "Apple did not extend \(document.subscription ?? ""): \(document.error ?? "success false")"
            } catch let error as APIError where error.status != .serviceUnavailable {
                OperatorAudit.unchanged()
                notice = "Not extended: \(error.message)"
            }
            return Self.back(to: "/admin?account=\(Self.query(account.text))&\(DashboardNotice.query(.appStore, notice))#app-store")
        }
        group.post("extend-all") { request, context -> Response in
            let form = AdminDashboardController.form(try await request.collectBody(upTo: 16 * 1024))
            let storefronts = form["storefronts"].flatMap { text -> [String]? in
                let codes = text.split(whereSeparator: { $0 == "," || $0 == " " }).map { $0.uppercased() }
                return codes.isEmpty ? nil : codes
            }
            let body = ExtendAllBody(
                productId: form["productId"], days: form["days"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }, reason: form["reason"],
                storefrontCountryCodes: storefronts, environment: form["environment"].flatMap { $0.isEmpty ? nil : $0 },
                requestIdentifier: form["request"],
                dryRun: form["dryRun"] == "true")
            let notice: String
            do {
                let answer = try await extendAll(body, operatorName: context.operatorIdentity?.name ?? "dashboard")
                notice =
                    answer.dryRun
                    ? "Dry run: \(answer.activePaidHere) paid, active \(answer.productId) subscriptions held here (\(answer.environment)) — Apple decides which it extends. Nothing was asked."
                        + (answer.canAskApple ? "" : " The App Store Server API is not configured here: the request itself would be refused.")
                    : "Asked Apple to extend every active \(answer.productId) subscriber by \(body.days ?? 0) days as \(answer.request?.requestIdentifier ?? "")."
            } catch let error as APIError where error.status != .serviceUnavailable {
                OperatorAudit.unchanged()
                notice = "Not requested: \(error.message)"
            }
            return Self.back(to: "/admin?\(DashboardNotice.query(.extendAll, notice))#extensions")
        }
    }

    static func back(to location: String) -> Response { Response(status: .seeOther, headers: [.location: location]) }

    static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#"))) ?? ""
    }

    static func reasonOptions() -> String {
        ExtendReason.allCases.map {
            "<option value=\"\($0.text)\"\($0 == .serviceIssueOrOutage ? " selected" : "")>\($0.text.replacingOccurrences(of: "_", with: " "))</option>"
        }
        .joined()
    }

    /// The account page's App Store section.
    static func accountSection(
        _ account: AccountID, extensions: [RenewalExtensionRecords.Record], subscriptions: [String], notice: String?, canExtend: Bool,
        asksApple: Bool
    ) -> String {
        let path = account.text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? ""
        var html = "<h2 id=\"app-store\">App Store</h2>"
        if let notice { html += "<p class=\"muted\">\(HTMLPage.escape(notice))</p>" }
        html += HTMLPage.table(
            ["requested", "by", "subscription", "days", "reason", "Apple's answer", "new expiry"],
            extensions.map { record in
                [
                    HTMLPage.Cell(HTMLPage.time(record.requestedAt)), HTMLPage.Cell(record.requestedBy),
                    .raw("<code>\(HTMLPage.escape(record.subscription ?? "—"))</code>"), HTMLPage.Cell(String(record.days)),
                    HTMLPage.Cell(ExtendReason(rawValue: Int32(record.reasonCode))?.text ?? String(record.reasonCode)),
                    HTMLPage.Cell(record.succeeded.map { $0 ? "extended" : "not extended" } ?? record.error ?? "no answer"),
                    HTMLPage.Cell(HTMLPage.time(record.effectiveDate)),
                ]
            }, empty: "no renewal extensions")
        guard asksApple else {
            return html
                + "<p class=\"muted\">Renewal extensions and Apple's refund history need the App Store Server API key (STOREKEEPER_ASSA_…), not configured here.</p>"
        }
        html += "<p><a href=\"/admin/accounts/\(HTMLPage.escape(path))/apple-refunds\">Apple's refund history for this customer (JSON)</a></p>"
        if canExtend, !subscriptions.isEmpty {
            let options = subscriptions.map { "<option value=\"\(HTMLPage.escape($0))\">\(HTMLPage.escape($0))</option>" }.joined()
            html += """
                <form method="post" action="/admin/accounts/\(HTMLPage.escape(path))/extend">\
                <input type="hidden" name="request" value="\(UUID().lowercasedText)">\
                <select name="subscription">\(options)</select> \
                <input type="number" name="days" min="1" max="90" placeholder="days (1–90)" style="width:110px" required> \
                <select name="reason">\(reasonOptions())</select> \
                <button type="submit">Extend renewal date</button></form>
                """
        }
        return html
    }

    /// The main page's mass extensions: each request and its status, and (admin) the form.
    static func massSection(_ requests: [RenewalExtensionRecords.Record], notice: String?, canRequest: Bool) -> String {
        var html = "<section class=\"wide\"><h2 id=\"extensions\">Renewal extensions for every subscriber</h2>"
        if let notice { html += "<p class=\"muted\">\(HTMLPage.escape(notice))</p>" }
        html += HTMLPage.table(
            ["requested", "by", "product", "days", "storefronts", "status", "extended", "failed"],
            requests.map { record in
                let identifier =
                    record.requestIdentifier.addingPercentEncoding(
                        withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? ""
                return [
                    HTMLPage.Cell(HTMLPage.time(record.requestedAt)), HTMLPage.Cell(record.requestedBy), HTMLPage.Cell(record.productId ?? "—"),
                    HTMLPage.Cell(String(record.days)), HTMLPage.Cell(record.storefronts?.joined(separator: " ") ?? "all"),
                    .raw(
                        "<a href=\"/admin/extensions/\(HTMLPage.escape(identifier))\">\(record.complete ? "complete" : record.error.map { "error: \(HTMLPage.escape($0))" } ?? "in progress")</a>"
                    ),
                    HTMLPage.Cell(record.succeededCount.map(String.init) ?? "—"), HTMLPage.Cell(record.failedCount.map(String.init) ?? "—"),
                ]
            }, empty: "none requested")
        if canRequest {
            html += """
                <form method="post" action="/admin/extend-all">\
                <input type="hidden" name="request" value="\(UUID().lowercasedText)">\
                <input type="text" name="productId" placeholder="product id" required> \
                <input type="number" name="days" min="1" max="90" placeholder="days (1–90)" style="width:110px" required> \
                <select name="reason">\(reasonOptions())</select> \
                <input type="text" name="storefronts" placeholder="storefronts: USA GBR (blank: all)"> \
                <select name="environment"><option value="">default environment</option><option value="production">production</option><option value="sandbox">sandbox</option></select> \
                <button type="submit" name="dryRun" value="true">Dry run</button> \
                <button type="submit" name="dryRun" value="false">Ask Apple</button></form>
                <p class="muted">Dry run first: it counts the paid, active subscriptions of the product held here and asks Apple nothing. \
                The status link asks Apple for progress until it is complete.</p>
                """
        }
        return html + "</section>"
    }
}
