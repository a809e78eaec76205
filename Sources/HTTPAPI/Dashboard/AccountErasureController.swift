import Application
import Foundation
import Hummingbird
import Persistence
import Subscriptions

/// `POST /admin/accounts/{accountId}/erase` with `confirm` = the account id (JSON `{"confirm": "…"}` or the account
/// page's form): erases the account's personal data (``AccountErasure``) and answers what was done. Admin only, in
/// the audit log — which keeps the id, as the record of the erasure.
struct AccountErasureController: Sendable {
    let erasure: AccountErasure
    let clock: @Sendable () -> Date

    struct Body: Decodable { var confirm: String? }

    struct Answer: ResponseEncodable {
        var accountId: String
        var pseudonym: String
        var alreadyErased: Bool
        var counts: ErasedAccounts.Counts
    }

    static let usage = #"confirm the erasure: {"confirm": "<the account id>"} (the form's field of the same name)"#

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/erase") { request, context -> Answer in
            let account = try AccountsController.accountId(context)
            let body = try await request.collectBody(upTo: 16 * 1024)
            let confirm: String?
            if request.headers[.contentType]?.hasPrefix("application/json") == true {
                confirm = (try? JSONDecoder().decode(Body.self, from: body))?.confirm
            } else {
                confirm = AdminDashboardController.form(body)["confirm"]
            }
            guard let confirm, confirm == account.text else { throw APIError.badRequest(Self.usage) }
            let now = clock()
            let operatorName = context.operatorIdentity?.name ?? "admin-api"
            // The database first under the usual deadline, then as long as a large account's erasure takes.
            try await withDatabase { try await erasure.reachable() }
            let outcome = try await withDatabase(timeout: .seconds(60)) { try await erasure.erase(account, by: operatorName, now: now) }
            let answer = Answer(accountId: account.text, pseudonym: outcome.pseudonym.text, alreadyErased: outcome.alreadyErased, counts: outcome.counts)
            if outcome.alreadyErased { OperatorAudit.unchanged() } else { OperatorAudit.note("account.erase", account: account.text, target: outcome.pseudonym.text, after: answer) }
            return answer
        }
    }
}
