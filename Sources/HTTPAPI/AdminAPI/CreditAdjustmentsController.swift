import Application
import Credits
import Entitlements
import Foundation
import Hummingbird
import Subscriptions

/// `POST /admin/accounts/{accountId}/credits {"meter", "amount", "reason", "idempotencyKey"?}`: adds (or, negative, takes
/// back) top-up credits — 201 when posted, 200 when its key posted it before; the reason goes to the audit log. The
/// dashboard's form posts `POST /admin/accounts/{accountId}/credit`. Support and admin keys.
struct CreditAdjustmentsController: Sendable {
    let adjustments: CreditAdjustments
    let clock: @Sendable () -> Date

    struct Body: Decodable {
        var meter: String?
        var amount: Int64?
        var reason: String?
        var idempotencyKey: String?
    }

    struct Answer: ResponseEncodable, Encodable {
        var accountId: String
        var meter: String
        var amount: Int64
        var reason: String
        var posted: Bool
        var topUpBalance: Int64
    }

    static let usage =
        #"body must be {"meter": "<meter id>", "amount": <credits, negative to take back>, "reason": "<why, ≤ 500 characters>", "idempotencyKey": "<optional>"}"#

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/credits") { request, context -> EditedResponse<Answer> in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(as: Body.self, upTo: 16 * 1024, otherwise: Self.usage)
            let answer = try await adjust(body, account: account)
            return EditedResponse(status: answer.posted ? .created : .ok, response: answer)
        }
    }

    /// Checks and makes an adjustment: a refusal is the client's mistake (400, or 409 when too few credits are left to
    /// take back); a posted one is noted for the audit log with its reason.
    func adjust(_ body: Body, account: AccountID) async throws -> Answer {
        guard let meter = body.meter, let amount = body.amount else { throw APIError.badRequest(Self.usage) }
        if let problem = OperatorReason.problem(body.reason) { throw APIError.badRequest(problem) }
        if let key = body.idempotencyKey, !key.isKey(maximumBytes: 255) {
            throw APIError.badRequest("idempotencyKey must be 1–255 bytes without control characters")
        }
        let reason = body.reason ?? ""
        let asked = CreditAdjustment.Request(key: body.idempotencyKey ?? UUID().lowercasedText, meter: meter, amount: amount)
        let now = clock()
        let outcome = try await withDatabase {
            do {
                return try await adjustments.adjust(asked, account: account, now: now)
            } catch let refusal as CreditAdjustment.Refusal {
                if case .notEnough = refusal { throw APIError(.conflict, code: .notEnoughCredits, message: refusal.description) }
                if case .keyReused = refusal { throw APIError(.unprocessableContent, code: .idempotencyKeyReused, message: refusal.description) }
                throw APIError.badRequest(refusal.description)
            }
        }
        let answer = Answer(
            accountId: account.text, meter: meter, amount: amount, reason: reason, posted: outcome.posted, topUpBalance: outcome.topUpBalance)
        if outcome.posted {
            OperatorAudit.note(
                "credits.adjust", account: account.text, target: asked.key, before: ["topUpBalance": outcome.topUpBalance - amount], after: answer)
        } else {
            OperatorAudit.unchanged()
        }
        return answer
    }
}
