import Application
import Foundation
import Hummingbird
import Persistence
import Subscriptions

/// `POST /admin/accounts/{accountId}/erase` with `confirm` = the account id (JSON `{"confirm": "…"}` or the account
/// page's form): erases the account's personal data (``AccountErasure``) and answers what was done, the pseudonym
/// included (for the operator who asked; nothing else ties the two). Admin only; in the audit log by the id's digest.
struct AccountErasureController: Sendable {
    let erasure: AccountErasure
    let clock: @Sendable () -> Date

    struct Body: Decodable { var confirm: String? }

    struct Answer: Encodable {
        var accountId: String
        var pseudonym: String
        var alreadyErased: Bool
        var counts: ErasedAccounts.Counts
    }

    static let usage = #"confirm the erasure: {"confirm": "<the account id>"} (the form's field of the same name)"#

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/erase") { request, context -> Response in
            let account = try AccountsController.accountId(context)
            let body = try await request.collectBody(upTo: 16 * 1024)
            // The account page's form is answered with the page again (303), saying what happened; the API with JSON.
            let fromForm = request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true
            let confirm = fromForm
                ? AdminDashboardController.form(body)["confirm"] : (try? JSONDecoder().decode(Body.self, from: body))?.confirm
            guard let confirm, confirm == account.text else {
                guard fromForm else { throw APIError.badRequest(Self.usage) }
                OperatorAudit.unchanged()
                return AppStoreSupportController.back(
                    to: "/admin?account=\(AppStoreSupportController.query(account.text))&erased=\(AppStoreSupportController.query("Not erased: type the account id exactly to confirm"))")
            }
            let now = clock()
            let operatorName = context.operatorIdentity?.name ?? "admin-api"
            // The database first under the usual deadline, then as long as a large account's erasure takes.
            try await withDatabase { try await erasure.reachable() }
            let outcome = try await withDatabase(timeout: .seconds(60)) { try await erasure.erase(account, by: operatorName, now: now) }
            let answer = Answer(accountId: account.text, pseudonym: outcome.pseudonym.text, alreadyErased: outcome.alreadyErased, counts: outcome.counts)
            // Logged by the id's digest, without the pseudonym: the log must not tie the two together again.
            if outcome.alreadyErased {
                OperatorAudit.unchanged()
            } else {
                OperatorAudit.note("account.erase", target: "sha256:" + ErasedAccounts.digest(of: account), after: ["counts": outcome.counts])
            }
            if fromForm {
                let said = outcome.alreadyErased ? "It was erased before" : "Erased"
                return AppStoreSupportController.back(
                    to: "/admin?account=\(AppStoreSupportController.query(outcome.pseudonym.text))&erased="
                        + AppStoreSupportController.query("\(said): what accounting needs is kept under this pseudonym, which nothing else ties to the id"))
            }
            let encoded = try StorekeeperRequestContext.jsonEncoder.encode(answer)
            return EventsController.json(String(decoding: encoded, as: UTF8.self))
        }
    }
}
