import Application
import Foundation
import Hummingbird
import Persistence
import StatementFencing
import Subscriptions

/// `POST /admin/accounts/{accountId}/erase` with `confirm` = the account id (JSON `{"confirm": "…"}` or the account
/// page's form): erases the account's personal data (``AccountErasure``) and answers what was done, the pseudonym
/// included (for the operator who asked; nothing else ties the two). Admin only; in the audit log by the id's keyed
/// digest. 404 for an id that holds nothing (nothing is filed), 409 without `STOREKEEPER_ERASURE_KEY`, 500 when a
/// statement of the erasure fails (it changed nothing; the cause is logged) — never 503, which says "try again soon".
struct AccountErasureController: Sendable {
    let erasure: AccountErasure
    let clock: @Sendable () -> Date

    struct Body: Decodable { var confirm: String? }

    struct Answer: Encodable {
        var accountId: String
        /// Only in the answer to the erasure that moved rows: one that found nothing left to move does not give it,
        /// so the pseudonym is told once, to the operator who erased, and in no log.
        @Nullable var pseudonym: String?
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
            let confirm =
                fromForm
                ? AdminDashboardController.form(body)["confirm"] : (try? JSONDecoder().decode(Body.self, from: body))?.confirm
            // The confirmation names the account as the path does: a UUID in either case.
            guard let confirm, AccountID(confirm) == account else {
                guard fromForm else { throw APIError.badRequest(Self.usage) }
                OperatorAudit.unchanged()
                return AppStoreSupportController.back(
                    to:
                        "/admin?account=\(AppStoreSupportController.query(account.text))&\(DashboardNotice.query(.erased, "Not erased: type the account id exactly to confirm"))"
                )
            }
            let outcome: AccountErasure.Outcome
            do {
                outcome = try await erase(account, by: context.operatorIdentity?.name ?? "admin-api")
            } catch let error as APIError where fromForm && error.status == .notFound {
                OperatorAudit.unchanged()
                return AppStoreSupportController.back(
                    to:
                        "/admin?account=\(AppStoreSupportController.query(account.text))&\(DashboardNotice.query(.erased, "Not erased: nothing here names this id"))"
                )
            }
            let answer = Answer(
                accountId: account.text, pseudonym: outcome.alreadyErased ? nil : outcome.pseudonym.text, alreadyErased: outcome.alreadyErased,
                counts: outcome.counts)
            // Logged by the id's keyed digest, without the pseudonym: the log must not tie the two together again.
            if outcome.alreadyErased {
                OperatorAudit.unchanged()
            } else {
                OperatorAudit.note("account.erase", target: "hmac-sha256:" + outcome.digest, after: ["counts": outcome.counts])
            }
            if fromForm {
                if outcome.alreadyErased {
                    return AppStoreSupportController.back(
                        to: "/admin?account=\(AppStoreSupportController.query(account.text))&"
                            + DashboardNotice.query(.erased, "It was erased before: nothing here names this id any more"))
                }
                return AppStoreSupportController.back(
                    to: "/admin?account=\(AppStoreSupportController.query(outcome.pseudonym.text))&"
                        + DashboardNotice.query(
                            .erased, "Erased: what accounting needs is kept under this pseudonym, which nothing else ties to the id"))
            }
            let encoded = try StorekeeperRequestContext.jsonEncoder.encode(answer)
            return EventsController.json(String(decoding: encoded, as: UTF8.self))
        }
    }

    /// The erasure, its refusals and failures as answers: the database is checked under the usual deadline first (an
    /// outage is a quick 503), then the erasure runs as long as a large account's takes.
    func erase(_ account: AccountID, by operatorName: String) async throws -> AccountErasure.Outcome {
        try await withDatabase { try await erasure.reachable() }
        let now = clock()
        do {
            return try await withDeadline(.seconds(60)) { try await erasure.erase(account, by: operatorName, now: now) }
        } catch AccountErasure.Refusal.holdsNothing {
            throw APIError(
                .notFound, code: .notFound, message: "nothing here names account \(account.text.prefix(128)); nothing was erased or filed")
        } catch AccountErasure.Refusal.notConfigured {
            throw APIError(
                .conflict, code: .notConfigured, message: "erasure needs STOREKEEPER_ERASURE_KEY (a secret of 32 bytes or more) to key its digests")
        } catch AccountErasure.Refusal.keyDiffers(let message) {
            throw APIError(.conflict, code: .erasureKeyDiffers, message: message)
        } catch {
            var failed = APIError(
                .internalServerError, code: .erasureFailed, message: "the erasure failed and changed nothing; the cause is in the server's log")
            failed.cause = (.error, "account erasure failed", (error as? AccountErasure.Failure)?.detail ?? String(reflecting: error))
            throw failed
        }
    }
}
