import Application
import Foundation
import Hummingbird
import Persistence

/// `GET /admin/search?q=`: the accounts an id names — an account id, an App Store transaction or original transaction
/// id, a Stripe subscription, customer, invoice or charge id, a purchase token — as JSON. The dashboard's search box
/// (`GET /admin?find=`) shows the same. An id that names nothing here and could be an App Store order id (the one
/// on the customer's receipt e-mail) is looked up with Apple (Look Up Order ID — Production purchases only). Any role
/// may search.
struct SearchController: Sendable {
    let search: AccountSearch
    let appStore: AppStoreSupport?
    let questions: AppleQuestionLimits

    struct Answer: ResponseEncodable {
        var query: String
        var matches: [Match]
        @Nullable var orderLookup: OrderLookupNote?
    }

    /// What asking Apple about the text as an order id gave: `found` (the accounts are the matches), `no_account`
    /// (Apple knows the order; no account here holds it), `invalid_order`, `production_only` (a Sandbox-only server),
    /// `not_configured` (no App Store Server API key), `rate_limited` (this key asked Apple too often: see
    /// ``AppleQuestionLimits``), `failed` (Apple did not answer).
    struct OrderLookupNote: Encodable, Sendable {
        var status: String
        var message: String
    }

    struct Match: Encodable, Sendable {
        var accountId: String
        var matchedBy: String
        @Nullable var source: String?
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("search") { request, context -> Answer in
            let text = try Self.query(request.formParameters.get("q"))
            let (found, note) = try await find(text, by: context.operatorIdentity?.name ?? "-")
            return Answer(
                query: text, matches: found.map { Match(accountId: $0.accountId, matchedBy: $0.matchedBy, source: $0.source) }, orderLookup: note)
        }
    }

    /// The accounts `text` names here, else — when it could be an order id and Apple can be asked — those its order's
    /// subscriptions belong to.
    func find(_ text: String, by operatorName: String) async throws -> (matches: [AccountSearch.Match], orderLookup: OrderLookupNote?) {
        let found = try await withDatabase { try await search.matches(text, limit: 20) }
        guard found.isEmpty, let appStore, AppStoreSupport.isOrderId(text) else { return (found, nil) }
        // A refusal comes out of the deadline as a value: anything else thrown there is the database's.
        let asked: Result<AppStoreSupport.OrderMatches, AppStoreSupport.Refusal>
        do {
            asked = try await questions.asking(operatorName) {
                try await withDatabase(timeout: AppStoreSupportController.appleDeadline) {
                    () -> Result<AppStoreSupport.OrderMatches, AppStoreSupport.Refusal> in
                    do { return .success(try await appStore.findOrder(text)) } catch let refusal as AppStoreSupport.Refusal {
                        return .failure(refusal)
                    }
                }
            }
        } catch let limited as APIError where limited.status == .tooManyRequests {
            return ([], OrderLookupNote(status: "rate_limited", message: limited.message))
        }
        // A read that asked Apple is in the audit log, as the admin API's writes are (one refused here asked nothing).
        switch asked {
        case .failure(.notConfigured), .failure(.productionOnly): break
        default: OperatorAudit.note("apple.order-lookup", target: text)
        }
        do {
            let order = try asked.get()
            guard order.valid else { return ([], OrderLookupNote(status: "invalid_order", message: "Apple knows no order \(text) of this app")) }
            guard !order.matches.isEmpty else {
                let ids = Set(order.transactions.map(\.originalTransactionId)).sorted().joined(separator: ", ")
                return ([], OrderLookupNote(status: "no_account", message: "order \(text) holds \(ids), which no account here holds"))
            }
            return (order.matches, OrderLookupNote(status: "found", message: "order \(text) found with Apple"))
        } catch {
            switch error {
            case .notConfigured: return ([], OrderLookupNote(status: "not_configured", message: error.description))
            case .productionOnly: return ([], OrderLookupNote(status: "production_only", message: error.description))
            default: return ([], OrderLookupNote(status: "failed", message: error.description))
            }
        }
    }

    /// A search text: 1–512 bytes, no control characters, trimmed (ids pasted from an e-mail carry spaces).
    static func query(_ text: String?) throws -> String {
        let trimmed = (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.isKey(maximumBytes: 512) else { throw APIError.badRequest("q must be an id: 1–512 bytes, no control characters") }
        return trimmed
    }
}
