import AppStoreModels
import AppStoreServerAPI
import Application
import Entitlements
import Foundation
import Hummingbird
import Persistence
import Subscriptions

/// What support asks Apple, through the admin API (`application/json`, bearer keys):
/// - `POST /admin/accounts/{accountId}/extensions {"days", "reason", "subscription"?, "requestIdentifier"?}` (support):
///   Extend a Subscription Renewal Date, Apple's answer in the reply;
/// - `GET /admin/accounts/{accountId}/extensions` (viewer): the account's extensions and Apple's answers;
/// - `POST /admin/extensions {"productId", "days", "reason", "storefrontCountryCodes"?, "environment"?, "requestIdentifier"?,
///   "dryRun"}` (admin): every active subscriber of a product; a dry run counts them here and asks Apple nothing;
/// - `GET /admin/extensions` (viewer): the mass extensions filed.
/// On the dashboard's routes, for their links (bearer or Basic): a mass extension's status
/// (`GET /admin/extensions/{requestIdentifier}`, asking Apple until complete) and Get Refund History
/// (`GET /admin/accounts/{accountId}/apple-refunds`).
struct AppStoreSupportController: Sendable {
    let support: AppStoreSupport
    /// The environment a mass extension targets unless told: production where the server accepts it.
    let defaultEnvironment: StoreEnvironment.Rollup
    let questions: AppleQuestionLimits
    let clock: @Sendable () -> Date

    /// Apple's answers can take a while (its client retries 429s and server errors for up to ~20 s).
    static let appleDeadline: Duration = .seconds(90)

    struct ExtendBody: Decodable {
        var days: Int?
        var reason: String?
        var subscription: String?
        var requestIdentifier: String?
    }

    struct ExtendAllBody: Decodable {
        var productId: String?
        var days: Int?
        var reason: String?
        var storefrontCountryCodes: [String]?
        var environment: String?
        var requestIdentifier: String?
        var dryRun: Bool?
    }

    struct ExtensionList: ResponseEncodable {
        var extensions: [RenewalExtensionDocument]
    }

    struct MassAnswer: ResponseEncodable {
        var dryRun: Bool
        var productId: String
        var environment: String
        var activePaidHere: Int
        var canAskApple: Bool
        @Nullable var request: RenewalExtensionDocument?
    }

    static let reasons = ExtendReason.allCases.map(\.text).joined(separator: ", ")
    static let extendUsage =
        #"body must be {"days": 1–90, "reason": "<"# + reasons
        + #">", "subscription": "<optional original transaction id>", "requestIdentifier": "<optional>"}"#
    static let extendAllUsage =
        #"body must be {"productId": "<product>", "days": 1–90, "reason": "<"# + reasons
        + #">", "dryRun": true|false, "storefrontCountryCodes": ["USA", …] (optional), "environment": "production"|"sandbox" (optional)}"#

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/extensions") { request, context -> RenewalExtensionDocument in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(as: ExtendBody.self, upTo: 16 * 1024, otherwise: Self.extendUsage)
            return try await extend(body, account: account, operatorName: context.operatorIdentity?.name ?? "admin-api")
        }
        group.get("accounts/{accountId}/extensions") { _, context -> ExtensionList in
            let account = try AccountsController.accountId(context)
            return ExtensionList(extensions: try await withDatabase { try await support.extensions(of: account) }.map(RenewalExtensionDocument.init))
        }
        group.post("extensions") { request, context -> EditedResponse<MassAnswer> in
            let body = try await request.decodeJSONBody(as: ExtendAllBody.self, upTo: 16 * 1024, otherwise: Self.extendAllUsage)
            let answer = try await extendAll(body, operatorName: context.operatorIdentity?.name ?? "admin-api")
            return EditedResponse(status: answer.dryRun ? .ok : .accepted, response: answer)
        }
        group.get("extensions") { _, _ -> ExtensionList in
            ExtensionList(extensions: try await withDatabase { try await support.massExtensions() }.map(RenewalExtensionDocument.init))
        }
    }

    /// A single extension, checked, asked and noted for the audit log.
    func extend(_ body: ExtendBody, account: AccountID, operatorName: String) async throws -> RenewalExtensionDocument {
        guard let days = body.days, let reasonText = body.reason else { throw APIError.badRequest(Self.extendUsage) }
        guard let reason = ExtendReason(text: reasonText) else { throw APIError.badRequest("reason must be one of \(Self.reasons)") }
        let request = RenewalExtensionRequest(days: days, reason: reason, requestIdentifier: body.requestIdentifier ?? UUID().lowercasedText)
        let now = clock()
        let (record, asked) = try await answering {
            try await support.extend(account: account, subscription: body.subscription, request, requestedBy: operatorName, now: now)
        }
        let document = RenewalExtensionDocument(record: record)
        // A request identifier used before answers with what was filed under it: nothing new to log.
        if asked {
            OperatorAudit.note("renewal.extend", account: account.text, target: record.subscription, after: document)
        } else {
            OperatorAudit.unchanged()
        }
        return document
    }

    /// A mass extension or its dry run, checked and noted for the audit log.
    func extendAll(_ body: ExtendAllBody, operatorName: String) async throws -> MassAnswer {
        guard let product = body.productId, let days = body.days, let reasonText = body.reason, let dryRun = body.dryRun else {
            throw APIError.badRequest(Self.extendAllUsage)
        }
        guard let reason = ExtendReason(text: reasonText) else { throw APIError.badRequest("reason must be one of \(Self.reasons)") }
        let environment = body.environment ?? defaultEnvironment.rawValue
        guard let rollup = StoreEnvironment.Rollup(rawValue: environment) else {
            throw APIError.badRequest("environment must be production or sandbox")
        }
        let stored: StoreEnvironment = rollup == .production ? .production : .sandbox
        let asked = RenewalExtensionRequest(days: days, reason: reason, requestIdentifier: body.requestIdentifier ?? UUID().lowercasedText)
        let now = clock()
        let outcome = try await answering {
            try await support.extendAll(
                product: product, storefronts: body.storefrontCountryCodes, environment: stored, asked, dryRun: dryRun, requestedBy: operatorName,
                now: now)
        }
        let answer = MassAnswer(
            dryRun: dryRun, productId: product, environment: environment, activePaidHere: outcome.activePaidHere, canAskApple: outcome.canAskApple,
            request: outcome.record.map(RenewalExtensionDocument.init))
        OperatorAudit.note(dryRun ? "renewal.extend-all.dry-run" : "renewal.extend-all", target: product, after: answer)
        return answer
    }

    /// Runs a use case that asks Apple: its refusals become answers (400 a malformed request, 404 an unknown one,
    /// 409 a server that cannot ask, 422 what Apple refused, 502 Apple away); the database's trouble is a 503.
    func answering<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        // The database first, under the usual deadline: an outage is a quick 503, not a wait as long as Apple's.
        try await withDatabase { try await support.reachable() }
        return try await withDatabase(timeout: Self.appleDeadline) {
            do {
                return try await body()
            } catch let refusal as AppStoreSupport.Refusal {
                throw APIError(refusal)
            }
        }
    }
}

extension APIError {
    init(_ refusal: AppStoreSupport.Refusal) {
        switch refusal {
        case .invalid: self = .badRequest(refusal.description)
        case .noSubscription, .unknownRequest: self.init(.notFound, code: .notFound, message: refusal.description)
        case .notConfigured, .productionOnly: self.init(.conflict, code: .notAvailable, message: refusal.description)
        case .identifierTaken: self.init(.conflict, code: .requestIdentifierTaken, message: refusal.description)
        case .refusedByApple: self.init(.unprocessableContent, code: .appleRefused, message: refusal.description)
        case .appleUnavailable: self.init(.badGateway, code: .appleUnavailable, message: refusal.description)
        }
    }
}
