import Application
import Entitlements
import Foundation
import Hummingbird
import Subscriptions

extension AdminDashboardController {
    /// The account page's credit adjustment form (support and admin keys): a meter, an amount (negative takes top-up
    /// credits back) and why.
    func creditAdjustmentForm(_ account: AccountID, error: String?) -> String {
        guard adjustments != nil, let catalogue else { return "" }
        let path = account.text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? ""
        let meters = catalogue.meters.map { "<option value=\"\(HTMLPage.escape($0.id))\">\(HTMLPage.escape($0.id))</option>" }.joined()
        var html = "<h2>Adjust credits</h2>"
        if let error { html += "<p class=\"bad\">Not adjusted: \(HTMLPage.escape(error))</p>" }
        // `request`: a key per rendering of the form, so a form sent twice adjusts once.
        html += """
            <form method="post" action="/admin/accounts/\(HTMLPage.escape(path))/credit">\
            <input type="hidden" name="request" value="\(UUID().lowercasedText)">\
            <select name="meter">\(meters)</select> \
            <input type="number" name="amount" placeholder="+50 or -50" style="width:110px" required> \
            <input type="text" name="reason" placeholder="reason" maxlength="\(OperatorReason.maximumLength)" required> \
            <button type="submit">Adjust</button></form>
            """
        return html
    }

    /// The form's route: back to the account page, with why when it was refused.
    func addCreditRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        guard let adjustments else { return }
        group.post("accounts/{accountId}/credit") { request, context -> Response in
            let account = try AccountsController.accountId(context)
            let form = Self.form(try await request.collectBody(upTo: 16 * 1024))
            let body = CreditAdjustmentsController.Body(
                meter: form["meter"], amount: form["amount"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }, reason: form["reason"],
                idempotencyKey: form["request"])
            do {
                _ = try await CreditAdjustmentsController(adjustments: adjustments, clock: clock).adjust(body, account: account)
                return Self.backToAccount(account.text)
            } catch let error as APIError where [.badRequest, .conflict].contains(error.status) {
                OperatorAudit.unchanged()
                return Self.backToAccount(account.text, creditError: error.message)
            }
        }
    }
}
