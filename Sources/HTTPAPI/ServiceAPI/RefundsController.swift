import AppStoreModels
import Application
import Entitlements
import Foundation
import Hummingbird
import Persistence
import Subscriptions

/// `PUT /v1/accounts/{accountId}/consent`, `GET /v1/accounts/{accountId}/refund-requests` and
/// `PUT /v1/refund-requests/{id}/answer`: what the app tells Storekeeper so it can answer Apple's refund questions.
struct RefundsController: Sendable {
    let refunds: RefundDefence
    let requests: RefundRequestQuery
    let clock: @Sendable () -> Date

    struct ConsentBody: Decodable {
        var consented: Bool
    }

    struct ConsentResponse: ResponseEncodable {
        var accountId: String
        var consented: Bool
        var recordedAt: Date
    }

    /// The app's answer: Apple's field names; `customerConsented` is implied (Storekeeper checks the account's consent).
    struct AnswerBody: Decodable {
        var deliveryStatus: String
        var refundPreference: String?
        var consumptionPercentage: Int32?
        var sampleContentProvided: Bool
    }

    struct RequestsResponse: ResponseEncodable {
        var refundRequests: [RefundRequestQuery.Listed]
    }

    struct RequestResponse: ResponseEncodable {
        var refundRequest: RefundRequests.Request
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.put("accounts/{accountId}/consent") { request, context -> ConsentResponse in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(
                as: ConsentBody.self, upTo: 1024, otherwise: "the body must be {\"consented\": true|false}")
            let now = clock()
            try await withDatabase { try await refunds.recordConsent(account, consented: body.consented, now: now) }
            return ConsentResponse(accountId: account.text, consented: body.consented, recordedAt: now)
        }
        group.get("accounts/{accountId}/refund-requests") { _, context -> RequestsResponse in
            let account = try AccountsController.accountId(context)
            return RequestsResponse(
                refundRequests: try await withDatabase { try await requests.requests(ofAccount: account, limit: 100, now: clock()) })
        }
        group.put("refund-requests/{id}/answer") { request, context -> RequestResponse in
            let text = try context.parameters.require("id")
            guard let id = UUID(text: text) else { throw APIError.badRequest("the refund request id is a UUID") }
            let body = try await request.decodeJSONBody(
                as: AnswerBody.self, upTo: 4096,
                otherwise: "the body must be {\"deliveryStatus\", \"refundPreference\"?, \"consumptionPercentage\"?, \"sampleContentProvided\"}")
            let answer = ConsumptionAnswer(
                consumptionPercentage: body.consumptionPercentage, deliveryStatus: body.deliveryStatus, refundPreference: body.refundPreference,
                sampleContentProvided: body.sampleContentProvided)
            switch try await withDatabase({ try await refunds.recordAppAnswer(answer, request: id) }) {
            case .recorded(let stored):
                return RequestResponse(refundRequest: stored)
            case .unknownRequest:
                throw APIError(.notFound, code: .notFound, message: "no refund request \(id)")
            case .closed(let stored):
                throw APIError(.conflict, code: .alreadyAnswered, message: Self.closedMessage(stored))
            case .invalid(let problems):
                throw APIError(.unprocessableContent, code: .invalidAnswer, message: problems.joined(separator: "; "))
            }
        }
    }

    /// Why a request takes no answer, by its state: one that was never pending (its store's API is not configured, as in
    /// `storekeeper dev`) is not "too late" — a newcomer read that as a clock problem.
    static func closedMessage(_ request: RefundRequests.Request) -> String {
        switch request.state {
        case .notConfigured:
            let api =
                request.store == .googlePlay
                ? "the Play Developer API (STOREKEEPER_GOOGLE_SERVICE_ACCOUNT)" : "the App Store Server API (STOREKEEPER_ASSA_*)"
            return "the request arrived while \(api) was not configured, so Storekeeper sends no answer to it and takes none"
        default:
            return "the request is \(request.state.rawValue): it is no longer pending, so it is too late to answer"
        }
    }
}
